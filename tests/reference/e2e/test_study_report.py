"""tools/report (python3 tools/report OUT) on synthetic studies: the
findings are computed from the data, so changing the data changes them
(divergence counts, the Xiong et al. verdict, the zero-init symmetry,
rankings), and a study that ran only some presets still gets every section."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402

REPORT = os.path.join(harness.SOURCE, "tools", "report")  # a folder: python3 tools/report OUT


def write_metrics(path, steps, final, diverge_at=None, spike_at=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for s in range(steps):
            if diverge_at is not None and s == diverge_at:
                f.write(json.dumps({"step": s, "diverged": True, "reason": "loss is not finite", "loss": None}) + "\n")
                return
            if s % 10 == 0:
                f.write(json.dumps({"step": s, "val_loss": final + 5 * math.exp(-s / 20) + 0.05}) + "\n")
                f.write(json.dumps({"step": s, "grad_norms": {
                    "attn.c_attn": [1.0, 0.5], "attn.c_proj": [0.2, 0.1], "mlp.c_fc": [0.3, 0.2],
                    "mlp.c_proj": [0.2, 0.1], "ln_1": [0.01, 0.01], "ln_2": [0.01, 0.01],
                    "wte": 1.0, "wpe": 0.1, "ln_f": 0.1}, "residual_rms": [0.1, 0.2, 0.3],
                    "update_ratio": [0.01, 0.01]}) + "\n")
            loss = final + 5 * math.exp(-s / 20)
            if spike_at is not None and s == spike_at:
                loss *= 1.5
            f.write(json.dumps({"step": s, "loss": loss, "lr": 1e-3, "grad_norm": 1.0, "ms": 1, "tokens_per_s": 1})
                    + "\n")
        f.write(json.dumps({"step": steps, "val_loss": final + 0.05}) + "\n")


def train_run(out, name, preset, variables, final, diverge_at=None, symmetry=None, spike_at=None, steps=100):
    write_metrics(os.path.join(out, "runs", name, "metrics.jsonl"), steps, final, diverge_at, spike_at)
    status = "diverged" if diverge_at is not None else "completed"
    outcome = {"status": status, "steps": diverge_at or steps}
    if diverge_at is None:
        outcome.update(val_loss=final + 0.05, val_ppl=math.exp(final + 0.05))
    else:
        outcome.update(diverged_at=diverge_at, reason="loss is not finite")
    model = {"n_layer": 2, "n_embd": 32}
    rec = {"name": name, "preset": preset, "kind": "train", "variables": variables,
           "config": {"model": model, "steps": steps, "batch_size": 2, "seq_len": 16, "grad_clip": 0.0,
                      "max_loss": 10.0, "lr": variables.get("lr", 1e-3), "warmup": variables.get("warmup", 5)},
           "dir": f"runs/{name}", "metrics": f"runs/{name}/metrics.jsonl", "status": status, "outcome": outcome,
           "checkpoint_step": steps, "seconds": 1.0,
           "sample": {"prompt": "The", "text": " the the the nation" if final > 4 else " a fine speech about law",
                      "tokens": 5, "words": 4, "distinct_1": 0.5 if final > 4 else 1.0,
                      "distinct_2": 0.6 if final > 4 else 1.0, "repeated_4gram_rate": 0.3 if final > 4 else 0.0}}
    rec["symmetry"] = [symmetry or {"layer": 0, "units": 128, "distinct_units": 128, "spread": 0.02,
                                    "weight_rms": 0.02, "relative_spread": 1.0}]
    return rec


def make_study(out, post_grows, post_nowarmup_diverges, zero_distinct, gpt2_better, presets):
    runs = []
    if "grad-at-init" in presets:
        for depth in (4, 8):
            for norm in ("pre", "post"):
                for init in ("gpt2", "he"):
                    if norm == "post" and post_grows:
                        ffn = [0.1 * (1 + 0.5 * l) for l in range(depth)]
                    elif norm == "post":
                        ffn = [0.1] * depth
                    else:
                        ffn = [0.5 * (1 - 0.05 * l) / math.sqrt(depth) for l in range(depth)]
                    rms = [0.03 * (1 + l) if norm == "pre" else 1.0 for l in range(depth + 1)]
                    runs.append({"name": f"gai-L{depth}-{norm}-{init}", "preset": "grad-at-init",
                                 "kind": "grad-at-init", "status": "completed",
                                 "variables": {"depth": depth, "norm": norm, "init": init},
                                 "config": {"model": {"n_embd": 32}, "batch_size": 2, "seq_len": 16, "batches": 2,
                                            "seed": 1},
                                 "result": {"grad_norm": {"ffn": ffn, "total": ffn}, "residual_rms": rms,
                                            "loss": 5.0, "batches": 2, "seconds": 0.1}})
    if "norm" in presets:
        for norm in ("pre", "post"):
            for w in (0, 5):
                for lr in (1e-3, 3e-3):
                    div = 30 + int(lr * 1e4) if (norm == "post" and w == 0 and post_nowarmup_diverges) else None
                    final = 3.0 + (0.3 if norm == "post" else 0) + (0.2 if lr > 2e-3 else 0) - (0.1 if w else 0)
                    name = f"norm-{norm}-{'warmup' if w else 'nowarmup'}-lr{lr:g}"
                    runs.append(train_run(out, name, "norm", {"norm": norm, "warmup": w, "lr": lr}, final, div,
                                          spike_at=50 if norm == "post" else None))
    if "init" in presets:
        for init, scale in (("zero", False), ("normal", False), ("gpt2", True)):
            final = {"zero": 5.0, "normal": 3.2 if gpt2_better else 3.0, "gpt2": 3.0 if gpt2_better else 3.2}[init]
            sym = None
            if init == "zero":
                sym = {"layer": 0, "units": 128, "distinct_units": zero_distinct,
                       "spread": 0.0 if zero_distinct == 1 else 0.01, "weight_rms": 0.0 if zero_distinct == 1 else 0.01,
                       "relative_spread": 0.0 if zero_distinct == 1 else 1.0}
            runs.append(train_run(out, f"init-pre-{init}", "init", {"norm": "pre", "init": init,
                                                                      "residual_scale": scale}, final, None, sym))
    if "depth" in presets:
        for depth in (2, 8):
            for norm in ("pre", "post"):
                for scale in (True, False):
                    div = 20 if (norm == "post" and not scale and depth == 8) else None
                    final = 3.0 + (0.2 if norm == "post" else 0) - 0.05 * depth
                    runs.append(train_run(out, f"depth-L{depth}-{norm}-{'scale' if scale else 'noscale'}", "depth",
                                          {"depth": depth, "norm": norm, "residual_scale": scale}, final, div))
    study = {"format": "gpt2lab study", "version": 1, "created": "t0", "updated": "t1", "threads": 2,
             "presets": presets, "command": "gpt2lab study --preset all --budget tiny",
             "budget": {"name": "tiny", "sample": {"tokens": 16, "temperature": 0.8, "top_k": 40}},
             "data": {"dir": "d", "tokenizer": "t", "tokenizer_identity": "t sha256:0", "vocab_size": 300},
             "runs": runs}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(study, f)


def report(out):
    r = harness.command([sys.executable, REPORT, out])
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit("tools/report failed")
    with open(os.path.join(out, "report.md")) as f:
        return f.read()


ALL = ["grad-at-init", "norm", "init", "depth"]
with harness.scratch() as tmp:
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    make_study(a, post_grows=True, post_nowarmup_diverges=True, zero_distinct=1, gpt2_better=True, presets=ALL)
    make_study(b, post_grows=False, post_nowarmup_diverges=False, zero_distinct=128, gpt2_better=False, presets=ALL)
    ma, mb = report(a), report(b)

    expect("Post-LN without warmup diverged in 2 of 2 runs (at lr 1e-3, 3e-3)." in ma,
           "A: Post-LN without warmup diverged in 2 of 2 runs")
    expect("Post-LN without warmup diverged in 0 of 2 runs." in mb, "B: Post-LN without warmup diverged in 0 of 2")
    expect("Pre-LN without warmup diverged in 0 of 2 runs." in ma and "Pre-LN without warmup diverged in 0 of 2 runs."
           in mb, "Pre-LN never diverged in either")
    expect("At lr 3e-3 Post-LN diverged in 1 and Pre-LN in 0 of 2 runs each, as Xiong et al." in ma and
           "At lr" not in mb, "A: which placement diverged at which lr; B: no such sentence")
    expect("This matches Xiong et al. (2020, Fig. 3) in all 4 settings." in ma,
           "A: growing Post-LN profile -> matches Xiong et al.")
    expect("This disagrees with Xiong et al. (2020, Fig. 3)" in mb and "appears in only 0 of 4 settings" in mb,
           "B: flat Post-LN profile -> the report says it disagrees with Xiong et al.")
    expect("first layer's MLP has 1 distinct hidden unit out of 128" in ma and
           "The symmetry is never broken" in ma, "A: zero init's single distinct unit is reported")
    expect("first layer's MLP has 128 distinct hidden units out of 128" in mb and "never broken" not in mb,
           "B: the symmetry sentence follows the measured count")
    expect("GPT-2's init beats plain normal(0.02) by 0.200 nats, consistent with Radford et al." in ma,
           "A: GPT-2 init better -> consistent with Radford et al.")
    expect("GPT-2's scaled init does not beat plain normal(0.02) here" in mb, "B: otherwise the report says so")
    expect("post-LN, no scale: diverged at 1 depth (8 layers)" in ma, "depth: divergence per variant and depth")
    expect("Loss spikes (a step 10% above the median of the previous 20): Post-LN 4, Pre-LN 0 in total." in mb,
           "spikes are counted from the metrics")
    expect(ma != mb, "different data, different report")

    # Only one preset: the other sections say they were not run.
    c = os.path.join(tmp, "c")
    make_study(c, post_grows=True, post_nowarmup_diverges=True, zero_distinct=1, gpt2_better=True, presets=["norm"])
    mc = report(c)
    expect(mc.count("Not run in this study: grad-at-init, init, depth") == 1 and "## init:" not in mc
           and "## norm:" in mc and "## Text samples" in mc,
           "a partial study draws its own sections and names the others once, with no empty sections")

    # Missing study.json: exit 2 with a message.
    r = harness.command([sys.executable, REPORT, os.path.join(tmp, "none")])
    expect(r.returncode == 2 and "cannot read" in r.stderr, "no study.json -> exit 2 and a clear message")

harness.finish("report")
