"""Draws one or more training runs overlaid: train and validation loss,
learning rate, gradient norm and throughput against the step, from each
run's metrics.jsonl. What `gpt2lab plot RUN [RUN...] --out FILE` runs.

Usage: python3 tools/plot RUN [RUN...] --out FILE.png|FILE.html
Exit status: 0 written, 2 bad input, 3 matplotlib missing.
"""
import base64
import html
import io
import os
import sys
import tempfile

# The one metrics reader of the tools (tools/metrics_file.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import metrics_file  # noqa: E402


def pyplot():
    """matplotlib.pyplot, imported once the runs are read: a bad run is
    reported as such with or without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # gpt2lab turns exit 3 into an install hint
        sys.stderr.write("plot: matplotlib is missing (Debian: apt-get install python3-matplotlib)\n")
        sys.exit(3)
    return plt


def fail(message):
    sys.stderr.write(f"plot: {message}\n")
    sys.exit(2)


def read_run(path):
    """(label, train rows, eval rows) of a run directory; torn lines skipped,
    a line no writer of ours makes (too long, too deep, a field of the wrong
    type) refused: the plot would show something else than the run."""
    if not os.path.isfile(os.path.join(path, "metrics.jsonl")):
        fail(f"'{path}' has no metrics.jsonl: not a training run")
    try:
        rows = metrics_file.by_kind(r for r in metrics_file.run_rows(path, strict=True) if "step" in r)
    except metrics_file.BadRow as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    train = [r for r in rows["train"] if "lr" in r]
    label = os.path.basename(os.path.normpath(path)) or path
    return label, train, rows["eval"]


def legend_text(label):
    """A run name as matplotlib shows it literally: '$' starts mathtext, and
    a label that starts with '_' is left out of the legend."""
    label = label.replace("$", r"\$")
    return "\u200b" + label if label.startswith("_") else label


PANELS = [("loss", "train loss (and validation loss, dots)", True), ("lr", "learning rate", False),
          ("grad_norm", "gradient norm", True), ("tokens_per_s", "tokens/s", False)]


def draw(runs):
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (key, title, log) in zip(axes.flat, PANELS):
        for i, (label, train, evals) in enumerate(runs):
            color = f"C{i % 10}"
            xs = [r["step"] + 1 for r in train if isinstance(r.get(key), (int, float))]
            ys = [r[key] for r in train if isinstance(r.get(key), (int, float))]
            ax.plot(xs, ys, color=color, lw=1, label=legend_text(label))
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


def write_atomic(path, data):
    """Writes the whole file or nothing, as gpt2lab's C++ writes do: a temp
    file beside it, fsynced, renamed over it. A failure (a full disk, a
    folder without write access) leaves the old file and says why."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=os.path.dirname(path) or ".")
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp's 0600 would outlive the rename
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        fail(f"cannot write '{path}': {e.strerror or e}")
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


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
    if os.path.lexists(out) and not os.path.isfile(out):
        fail(f"--out '{out}' exists and is not a regular file")
    buf = io.BytesIO()
    draw(runs).savefig(buf, format="png", dpi=110)
    data = buf.getvalue()
    if out.endswith(".html"):
        img = base64.b64encode(data).decode()
        # Run names are folder names: anything but '/' and NUL, markup included.
        names = html.escape(", ".join(label for label, _, _ in runs), quote=True)
        data = (f"<!doctype html><meta charset=utf-8><title>gpt2lab: {names}</title>"
                f"<h1>{names}</h1><img src='data:image/png;base64,{img}'>\n").encode()
    write_atomic(out, data)
    print(f"plot: wrote {out} ({len(runs)} run{'s' if len(runs) > 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
