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

import numpy as np
import torch

import pytest

import harness
from gpt2_torch import load_checkpoint, read_safetensors, rel_err, write_safetensors
from harness import BIN, TOOL

torch.set_num_threads(1)

CONFIGS = {
    # name: (n_layer, n_head, n_embd, block_size, vocab_size, B, T)
    "T=block": (2, 4, 64, 32, 300, 3, 32),
    "odd": (3, 3, 48, 40, 101, 2, 17),
}
# Flags beyond the shape, one dict per case.
FLAG_CASES = [{"norm": norm, "init": init} for norm in ("pre", "post")
              for init in ("gpt2", "normal", "xavier", "he", "zero")]
FLAG_CASES.append({"norm": "post", "init": "xavier", "final-norm": "on"})  # Post-LN with a final LayerNorm
FLAG_CASES += [{"norm": norm, "init": "gpt2", "embedding-scale": emb} for norm in ("pre", "post")
               for emb in ("sqrt", "unit")]
# The placements after GPT-2, each with the init that belongs to it, and RMSNorm.
FLAG_CASES += [{"norm": "pre", "init": "small"}, {"norm": "sandwich", "init": "auto"},
               {"norm": "deepnorm", "init": "auto"}, {"norm": "deepnorm", "init": "auto", "final-norm": "on"},
               {"norm": "rezero", "init": "auto"}, {"norm": "none", "init": "auto"}]
FLAG_CASES += [{"norm": norm, "init": "auto", "norm-type": "rmsnorm"}
               for norm in ("pre", "post", "sandwich", "deepnorm")]
# Random values in every tensor, written by the reference itself.
RANDOMS = [(norm, "layernorm", emb) for norm in ("pre", "post") for emb in ("none", "sqrt", "unit")]
RANDOMS += [(norm, "layernorm", "none") for norm in ("sandwich", "deepnorm", "rezero", "none")]
RANDOMS += [(norm, "rmsnorm", "none") for norm in ("pre", "post", "sandwich", "deepnorm")]
RANDOMS.append(("rezero", "rmsnorm", "sqrt"))  # RMSNorm as ln_f only


def init_label(cname, flags):
    return f"{cname} " + " ".join(f"{k}={v}" for k, v in flags.items())


def random_label(cname, norm, norm_type, emb):
    return f"{cname} {norm} {norm_type} x{emb} random weights, ignore"


LABELS = [init_label(c, f) for c in CONFIGS for f in FLAG_CASES] + \
    [random_label(c, *r) for c in CONFIGS for r in RANDOMS]


def write_random_case(tmp, rng, cname, norm, norm_type, emb):
    """A checkpoint with random values in every tensor; its folder."""
    L, NH, C, block, V, B, T = CONFIGS[cname]
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
    return d


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """Every case's checkpoint and batch, {label: (folder, tokens, targets,
    B, T)}, written in one pass: the random draws follow one generator in a
    fixed order, whichever case runs."""
    tmp = str(tmp_path_factory.mktemp("cases"))
    rng = np.random.default_rng(0)
    out = {}
    for cname, (L, NH, C, block, V, B, T) in CONFIGS.items():
        tokens = rng.integers(0, V, size=(B, T))
        targets = rng.integers(0, V, size=(B, T))
        for flags in FLAG_CASES:
            label = init_label(cname, flags)
            d = os.path.join(tmp, label.replace(" ", "-").replace("=", ""))
            cmd = [BIN, "init", "--n-layer", str(L), "--n-head", str(NH), "--n-embd", str(C),
                   "--block-size", str(block), "--vocab-size", str(V), "--seed", "7", "--out", d]
            for k, v in flags.items():
                cmd += ["--" + k, v]
            harness.command(cmd, check=True)
            out[label] = d, tokens, targets, B, T
        for norm, norm_type, emb in RANDOMS:
            d = write_random_case(tmp, rng, cname, norm, norm_type, emb)
            masked = targets.copy()
            masked[0, : T // 3] = -1  # ignored positions
            out[random_label(cname, norm, norm_type, emb)] = d, tokens, masked, B, T
    return out


@pytest.mark.parametrize("label", LABELS)
def test_forward_backward_match_the_reference(cases, label):
    d, tokens, targets, B, T = cases[label]
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
    bad_grads = []
    for name, p in model.p.items():
        ref = p.grad.numpy() if p.grad is not None else np.zeros(p.shape)  # unused (ln_f in Post-LN)
        e = rel_err(ours["grad." + name], ref)
        if e > worst_grad[1]:
            worst_grad = (name, e)
        if e > 1e-4:
            bad_grads.append(f"{label}: gradient of {name} off by {e:.2e} relative")
    print(f"{label:40s} loss {loss.item():.6f}  logits {errs['logits']:.1e}  loss {errs['loss']:.1e}  "
          f"worst grad {worst_grad[1]:.1e} ({worst_grad[0]})")
    assert not bad_grads, "; ".join(bad_grads)
    bad = [f"{label}: {k} off by {e:.2e} relative" for k, e in errs.items() if e > 1e-5]
    assert not bad, "; ".join(bad)
