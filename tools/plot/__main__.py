"""Draws one or more training runs overlaid: train and validation loss,
learning rate, gradient norm and throughput against the step, from each
run's metrics.jsonl. What `gpt2lab plot RUN [RUN...] --out FILE` runs.

Usage: python3 tools/plot RUN [RUN...] --out FILE.png|FILE.html
Exit status: 0 written, 2 bad input, 3 matplotlib missing.
"""
import base64
import io
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # gpt2lab turns exit 3 into an install hint
    sys.stderr.write("plot: matplotlib is missing (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(3)


def fail(message):
    sys.stderr.write(f"plot: {message}\n")
    sys.exit(2)


def read_run(path):
    """(label, train rows, eval rows) of a run directory; torn lines skipped."""
    metrics = os.path.join(path, "metrics.jsonl")
    if not os.path.isfile(metrics):
        fail(f"'{path}' has no metrics.jsonl: not a training run")
    train, evals = [], []
    with open(metrics, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict) or not isinstance(row.get("step"), int):
                continue
            if "val_loss" in row:
                evals.append(row)
            elif "loss" in row and "lr" in row:
                train.append(row)
    label = os.path.basename(os.path.normpath(path)) or path
    return label, train, evals


PANELS = [("loss", "train loss (and validation loss, dots)", True), ("lr", "learning rate", False),
          ("grad_norm", "gradient norm", True), ("tokens_per_s", "tokens/s", False)]


def draw(runs):
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (key, title, log) in zip(axes.flat, PANELS):
        for i, (label, train, evals) in enumerate(runs):
            color = f"C{i % 10}"
            xs = [r["step"] + 1 for r in train if isinstance(r.get(key), (int, float))]
            ys = [r[key] for r in train if isinstance(r.get(key), (int, float))]
            ax.plot(xs, ys, color=color, lw=1, label=label)
            if key == "loss" and evals:
                ax.plot([r["step"] for r in evals], [r["val_loss"] for r in evals], "o", color=color, ms=4)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step", fontsize=9)
        if log and any(ax.get_lines()):
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv):
    if "--out" not in argv or argv.index("--out") + 1 >= len(argv):
        fail("usage: plot RUN [RUN...] --out FILE.png|FILE.html")
    i = argv.index("--out")
    out, paths = argv[i + 1], argv[:i] + argv[i + 2:]
    if not paths:
        fail("give at least one run directory")
    if not out.endswith((".png", ".html")):
        fail(f"--out '{out}' must end in .png or .html")
    runs = [read_run(p) for p in paths]
    if not any(train for _, train, _ in runs):
        fail("no training steps in these runs yet")
    fig = draw(runs)
    if out.endswith(".png"):
        fig.savefig(out, dpi=110)
    else:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        img = base64.b64encode(buf.getvalue()).decode()
        names = ", ".join(label for label, _, _ in runs)
        with open(out, "w", encoding="utf-8") as f:
            f.write(f"<!doctype html><meta charset=utf-8><title>gpt2lab: {names}</title>"
                    f"<h1>{names}</h1><img src='data:image/png;base64,{img}'>\n")
    print(f"plot: wrote {out} ({len(runs)} run{'s' if len(runs) > 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
