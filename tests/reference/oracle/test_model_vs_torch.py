"""Oracle: gpt2lab's forward and backward against the PyTorch reference.

For pre and post placement, every init scheme, the block input scaled by
sqrt(n_embd) (--embedding-scale sqrt, and unit: N(0, 1/n_embd) tables
scaled so), every later placement (sandwich,
deepnorm, rezero, none) with its own init, RMSNorm in every placement that
has norms, and two small configs (one with T = block_size, one with odd
sizes), gpt2lab writes a checkpoint (`gpt2lab init`), the test tool runs
forward + backward on a batch, and the reference loads the same checkpoint
and batch. Logits and loss must match to 1e-5
relative, every parameter gradient to 1e-4 relative (max-abs error over the
tensor divided by the tensor's max-abs). A further case loads a checkpoint the
reference wrote itself with random values in every tensor (biases, norms
and ReZero's alphas included, which the inits leave at 0/1/0) and ignored
targets, for every placement and norm type, with and without the scale.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from gpt2_torch import load_checkpoint, read_safetensors, rel_err, write_safetensors  # noqa: E402
from harness import BIN, TOOL, fail  # noqa: E402

torch.set_num_threads(1)

CONFIGS = {
    # name: (n_layer, n_head, n_embd, block_size, vocab_size, B, T)
    "T=block": (2, 4, 64, 32, 300, 3, 32),
    "odd": (3, 3, 48, 40, 101, 2, 17),
}
checked = 0


def compare(label, d, tokens, targets, B, T):
    global checked
    batch = os.path.join(d, "batch.bin")
    np.concatenate([tokens.ravel(), targets.ravel()]).astype(np.int32).tofile(batch)
    out = os.path.join(d, "out.safetensors")
    harness.command([TOOL, "fwdbwd", "--model", d, "--batch", batch, "--B", str(B), "--T", str(T), "--out", out],
                    check=True)
    ours = read_safetensors(out)
    model = load_checkpoint(d)
    logits, loss = model.forward(torch.tensor(tokens, dtype=torch.long), torch.tensor(targets, dtype=torch.long))
    loss.backward()
    errs = {"logits": rel_err(ours["logits"], logits.detach().numpy()),
            "loss": rel_err(ours["loss"], [loss.item()])}
    worst_grad = ("", 0.0)
    for name, p in model.p.items():
        ref = p.grad.numpy() if p.grad is not None else np.zeros(p.shape)  # unused (ln_f in Post-LN)
        e = rel_err(ours["grad." + name], ref)
        if e > worst_grad[1]:
            worst_grad = (name, e)
        if e > 1e-4:
            fail(f"{label}: gradient of {name} off by {e:.2e} relative")
    for k, e in errs.items():
        if e > 1e-5:
            fail(f"{label}: {k} off by {e:.2e} relative")
    checked += 1
    print(f"{label:40s} loss {loss.item():.6f}  logits {errs['logits']:.1e}  loss {errs['loss']:.1e}  "
          f"worst grad {worst_grad[1]:.1e} ({worst_grad[0]})")


def main():
    rng = np.random.default_rng(0)
    with harness.scratch() as tmp:
        for cname, (L, NH, C, block, V, B, T) in CONFIGS.items():
            tokens = rng.integers(0, V, size=(B, T))
            targets = rng.integers(0, V, size=(B, T))
            # Flags beyond the shape, one dict per case.
            cases = [{"norm": norm, "init": init} for norm in ("pre", "post")
                     for init in ("gpt2", "normal", "xavier", "he", "zero")]
            cases.append({"norm": "post", "init": "xavier", "final-norm": "on"})  # Post-LN with a final LayerNorm
            cases += [{"norm": norm, "init": "gpt2", "embedding-scale": emb} for norm in ("pre", "post")
                      for emb in ("sqrt", "unit")]
            # The placements after GPT-2, each with the init that belongs to it, and RMSNorm.
            cases += [{"norm": "pre", "init": "small"}, {"norm": "sandwich", "init": "auto"},
                      {"norm": "deepnorm", "init": "auto"}, {"norm": "deepnorm", "init": "auto", "final-norm": "on"},
                      {"norm": "rezero", "init": "auto"}, {"norm": "none", "init": "auto"}]
            cases += [{"norm": norm, "init": "auto", "norm-type": "rmsnorm"}
                      for norm in ("pre", "post", "sandwich", "deepnorm")]
            for flags in cases:
                label = f"{cname} " + " ".join(f"{k}={v}" for k, v in flags.items())
                d = os.path.join(tmp, label.replace(" ", "-").replace("=", ""))
                cmd = [BIN, "init", "--n-layer", str(L), "--n-head", str(NH), "--n-embd", str(C),
                       "--block-size", str(block), "--vocab-size", str(V), "--seed", "7", "--out", d]
                for k, v in flags.items():
                    cmd += ["--" + k, v]
                harness.command(cmd, check=True)
                compare(label, d, tokens, targets, B, T)
            # Random values in every tensor, written by the reference itself.
            randoms = [(norm, "layernorm", emb) for norm in ("pre", "post") for emb in ("none", "sqrt", "unit")]
            randoms += [(norm, "layernorm", "none") for norm in ("sandwich", "deepnorm", "rezero", "none")]
            randoms += [(norm, "rmsnorm", "none") for norm in ("pre", "post", "sandwich", "deepnorm")]
            randoms.append(("rezero", "rmsnorm", "sqrt"))  # RMSNorm as ln_f only
            for norm, norm_type, emb in randoms:
                d = os.path.join(tmp, f"{cname}-{norm}-{norm_type}-{emb}-random")
                extra = ["--final-norm", "on"] if norm == "rezero" and norm_type == "rmsnorm" else []
                harness.run("init", "--n-layer", str(L), "--n-head", str(NH), "--n-embd", str(C),
                            "--block-size", str(block), "--vocab-size", str(V), "--norm", norm,
                            "--norm-type", norm_type, "--init", "normal", "--embedding-scale", emb, "--out", d,
                            *extra, check=True)
                w = read_safetensors(os.path.join(d, "model.safetensors"))
                for k in w:
                    scale = 0.2 if k.endswith("bias") else 0.1
                    base = 1.0 if (".ln_" in k and k.endswith("weight")) else 0.0
                    w[k] = (base + scale * rng.standard_normal(w[k].shape)).astype(np.float32)
                write_safetensors(os.path.join(d, "model.safetensors"), w)
                masked = targets.copy()
                masked[0, : T // 3] = -1  # ignored positions
                compare(f"{cname} {norm} {norm_type} x{emb} random weights, ignore", d, tokens, masked, B, T)
    print(f"\n{checked} cases checked")
    if not harness.failures:
        print("all logits, losses and gradients match the PyTorch reference")
    harness.finish("forward/backward")


if __name__ == "__main__":
    main()
