"""Packs a study's finished runs for committing: runs/<name>/metrics.jsonl.gz.

A long study is committed as it goes (docs/study/README.md): study.json and,
per finished run, result.json and its metrics, never checkpoints or data.
The metrics are what the report plots; this keeps every row the report
reads (train, eval, diagnostics, divergence) with numbers rounded to 6
significant digits and the fields it does not read dropped, gzipped
deterministically (no timestamp), so that packing again changes nothing.
tools/report reads metrics.jsonl.gz where metrics.jsonl is absent.

Usage: python3 tools/study_pack.py OUT
"""
import gzip
import io
import json
import os
import sys

# Fields the report reads, per row kind; a row of another kind is kept whole.
KEEP = {
    "train": ("kind", "step", "loss", "grad_norm", "lr", "tokens", "ms"),
    "eval": ("kind", "step", "val_loss"),
}
FINISHED = ("completed", "diverged")


def rounded(x):
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, list):
        return [rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    return x


def compact(line):
    try:
        row = json.loads(line)
    except ValueError:
        return None  # a torn line of a killed run
    if not isinstance(row, dict):
        return None
    keep = KEEP.get(row.get("kind"))
    if keep:
        row = {k: row[k] for k in keep if k in row}
    return json.dumps(rounded(row), separators=(",", ":"), sort_keys=True)


def pack_run(run_dir):
    """Writes metrics.jsonl.gz beside a finished run's metrics.jsonl;
    returns True when it wrote one."""
    src = os.path.join(run_dir, "metrics.jsonl")
    dst = src + ".gz"
    try:
        with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
            status = json.load(f).get("status")
    except (OSError, ValueError, AttributeError):
        return False
    if status not in FINISHED or not os.path.isfile(src):
        return False
    with open(src, encoding="utf-8", errors="replace") as f:
        rows = [r for r in (compact(line) for line in f if line.strip()) if r]
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(("\n".join(rows) + "\n").encode("utf-8"))
    data = buf.getvalue()
    if os.path.exists(dst):
        with open(dst, "rb") as f:
            if f.read() == data:
                return False
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, dst)
    return True


def main(argv):
    if len(argv) != 2 or not os.path.isdir(os.path.join(argv[1], "runs")):
        sys.exit("usage: python3 tools/study_pack.py OUT (a study folder with runs/)")
    runs = os.path.join(argv[1], "runs")
    written = sum(pack_run(os.path.join(runs, name)) for name in sorted(os.listdir(runs)))
    print(f"study_pack: {written} runs packed in {runs}")


if __name__ == "__main__":
    main(sys.argv)
