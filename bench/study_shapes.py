"""Runs per hour at every shape of the committed v3 study, old build against new.

The v3 study (docs/study/v3/study.json.gz) records every run's config. Its
training runs fall into a few shapes (layers, width, heads, B, T); for each,
this trains the shape's first run's config for STEPS steps, two runs side
by side on one thread each (as `study --jobs 2 --threads 2` runs them),
with each build in turn (old fp32, old --bf16 where the old build has it,
new fp32, new --bf16) for ROUNDS rounds, so that the builds see the same
host load. It prints per shape the wall time of the pair, the runs per
hour at the v3 run length that this gives (2 x 3600 / (wall x v3 steps /
STEPS): startup and the final checkpoint are scaled up with the steps,
alike for every build), the median of the per-round ratios to old fp32,
and whether the new build gave the old one's losses bit for bit in each
precision; then the hours the v3 study's training runs would take with
each build (every run at its shape's measured rate, two at a time), and
with the new build's bf16 only in the presets whose bf16 control kept
every verdict (BF16_PRESETS, default norm,init,lr-edge,translation,depth).

    python3 bench/study_shapes.py OLD_BIN NEW_BIN DATASET WORK [STEPS] [ROUNDS]
(OLD_BIN "-": the new build only, its fp32 the reference.)
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "reference"))
import study_pack  # noqa: E402
from harness import stable  # noqa: E402

V3 = os.path.join(os.path.dirname(__file__), "..", "docs", "study", "v3")


def v3_runs():
    """The v3 study's training runs (name, preset, config)."""
    study = json.loads(study_pack.read_packed(V3).decode("utf-8"))
    return [r for r in study["runs"] if r.get("kind") == "train"]


def shape_of(cfg):
    m = cfg["model"]
    return (m["n_layer"], m["n_embd"], m["n_head"], cfg["batch_size"], cfg["seq_len"])


def train_flags(cfg, steps):
    """`gpt2lab train` flags for CFG's model and cadence, STEPS steps (flags
    both builds know; the lr schedule does not change a step's cost)."""
    m = cfg["model"]
    on = {True: "on", False: "off"}
    return ["--n-layer", str(m["n_layer"]), "--n-head", str(m["n_head"]), "--n-embd", str(m["n_embd"]),
            "--block-size", str(m["n_positions"]), "--vocab-size", str(m["vocab_size"]),
            "--norm", m["norm"], "--init", m["init"], "--residual-scale", on[m["residual_scale"]],
            "-B", str(cfg["batch_size"]), "-T", str(cfg["seq_len"]), "--steps", str(steps),
            "--lr", str(cfg["lr"]), "--seed", str(cfg["seed"]), "--grad-clip", str(cfg["grad_clip"]),
            "--eval-every", str(cfg["eval_every"]), "--eval-batches", str(cfg["eval_batches"]),
            "--diag-every", str(cfg["diag_every"]), "--save-every", str(min(cfg["save_every"], steps)),
            "--threads", "1", "--quiet"] + (["--shuffle"] if cfg.get("shuffle") else [])


def pair(binary, extra, cfg, steps, data, work):
    """Wall seconds of two runs of CFG side by side, one thread each."""
    procs, t0 = [], time.monotonic()
    for i in (0, 1):
        out = os.path.join(work, f"run{i}")
        cmd = [binary, "train", "--data", data, "--out", out, "--force"] + train_flags(cfg, steps) + extra
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"study_shapes: {' '.join(p.args[:2])} failed: {err.decode()[-500:]}")
    return time.monotonic() - t0


def losses(work):
    with open(os.path.join(work, "run0", "metrics.jsonl")) as f:
        return stable([json.loads(line) for line in f if '"train"' in line])


def measure(shape, cfg, builds, steps, rounds, data, work):
    """Per build: the pair's wall seconds in each round; per precision that
    the old build has too: whether the new build trained its losses bit for
    bit."""
    secs, rows = {b: [] for b in builds}, {}
    for _ in range(rounds):
        for name, (binary, extra) in builds.items():
            d = os.path.join(work, "x".join(map(str, shape)), name.replace(" ", "-"))
            os.makedirs(d, exist_ok=True)
            secs[name].append(pair(binary, extra, cfg, steps, data, d))
            rows[name] = losses(d)
    same = {p: rows[f"old {p}"] == rows[f"new {p}"] for p in ("fp32", "bf16") if f"old {p}" in rows}
    return secs, same


def builds_of(old, new):
    """The builds to time: the old one's fp32 (and bf16 where it has
    --bf16), the new one's fp32 and bf16; the first is the reference."""
    builds = {}
    if old != "-":
        builds["old fp32"] = (old, [])
        helptext = subprocess.run([old, "train", "--help"], capture_output=True, text=True).stdout
        if "--bf16" in helptext:
            builds["old bf16"] = (old, ["--bf16"])
    builds.update({"new fp32": (new, []), "new bf16": (new, ["--bf16"])})
    return builds


def run_lengths(members):
    """(preset, steps) -> how many v3 runs of the shape have them."""
    lengths = {}
    for r in members:
        key = (r["preset"], r["config"]["steps"])
        lengths[key] = lengths.get(key, 0) + 1
    return lengths


def main(argv):
    old, new, data, work = argv[1:5]
    steps = int(argv[5]) if len(argv) > 5 else 200
    rounds = int(argv[6]) if len(argv) > 6 else 3
    builds = builds_of(old, new)
    ref = next(iter(builds))  # the ratios' denominator
    others = [b for b in builds if b != ref]
    bf16_pair = int("old bf16" in builds)
    runs = v3_runs()
    shapes = {}
    for r in runs:
        shapes.setdefault(shape_of(r["config"]), []).append(r)
    print(f"# {steps} steps per run, {rounds} rounds, builds alternated in each; v3: {len(runs)} training runs")
    names = " / ".join(builds)
    print(f"| shape (L C H, B T) | v3 presets (runs x steps) | pair wall s: {names} | runs/hour at v3 length: {names} "
          + "".join(f"| {b} ÷ {ref} " for b in others) + ("| new bf16 ÷ old bf16 " if bf16_pair else "")
          + "| new = old bits |")
    print("|---" * (4 + len(others) + bf16_pair) + "|---|")
    hours = {b: 0.0 for b in builds}
    by_preset = {b: {} for b in builds}  # build -> preset -> hours
    for shape, members in sorted(shapes.items(), key=lambda kv: (kv[0][1], kv[0][3], kv[0][0])):
        secs, same = measure(shape, members[0]["config"], builds, steps, rounds, data, work)
        med = {b: statistics.median(s) for b, s in secs.items()}
        ratio = {b: statistics.median(o / n for o, n in zip(secs[ref], s)) for b, s in secs.items()}
        if bf16_pair:
            ratio["bf16"] = statistics.median(o / n for o, n in zip(secs["old bf16"], secs["new bf16"]))
        lengths = run_lengths(members)
        for b in builds:  # two at a time, each run at its own length
            for r in members:
                h = r["config"]["steps"] / steps * med[b] / 2 / 3600
                hours[b] += h
                by_preset[b][r["preset"]] = by_preset[b].get(r["preset"], 0.0) + h
        length = max(lengths, key=lengths.get)[1]
        rph = "/".join(f"{2 * 3600 / (med[b] * length / steps):.0f}" for b in builds)
        bits = ", ".join(f"{p} {'yes' if v else 'no'}" for p, v in same.items()) or "-"
        print(f"| {shape[0]} {shape[1]} {shape[2]}, {shape[3]} {shape[4]} "
              f"| {', '.join(f'{p} {n}x{s}' for (p, s), n in sorted(lengths.items()))} "
              f"| {' / '.join(f'{med[b]:.1f}' for b in builds)} | {rph} (at {length} steps) "
              + "".join(f"| {ratio[b]:.2f} " for b in others + ["bf16"] * bf16_pair) + f"| {bits} |")
    recorded = sum(r.get("seconds") or 0 for r in runs) / 2 / 3600
    print(f"\nv3's {len(runs)} training runs, two at a time: "
          + ", ".join(f"{b} {h:.2f} h ({len(runs) / h:.0f} runs/hour)" for b, h in hours.items())
          + "; " + ", ".join(f"{b} ÷ {ref} {hours[ref] / hours[b]:.2f}" for b in others)
          + f" (as recorded when v3 ran: {recorded:.2f} h)")
    mixed_precision(by_preset, ref)


def mixed_precision(by_preset, ref):
    """v3 with the new build's bf16 only in the presets whose bf16 control
    kept every verdict (BF16_PRESETS; docs/study/README.md) and fp32 in
    the rest: the runs per hour a study may use."""
    allowed = [p for p in os.environ.get("BF16_PRESETS", "norm,init,lr-edge,translation,depth").split(",") if p]
    if "new bf16" not in by_preset:
        return
    presets = set(by_preset["new fp32"])
    h = sum(by_preset["new bf16" if p in allowed else "new fp32"][p] for p in presets)
    total = sum(by_preset[ref].values())
    print(f"bf16 in {', '.join(sorted(set(allowed) & presets))}, fp32 in "
          f"{', '.join(sorted(presets - set(allowed)))}: {h:.2f} h, {ref} ÷ this {total / h:.2f}")


if __name__ == "__main__":
    main(sys.argv)
