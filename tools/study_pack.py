"""Packs a study's finished runs for committing: runs/<name>/metrics.jsonl.gz.

A long study is committed as it goes (docs/study/README.md): study.json and,
per finished run, result.json and its metrics, never checkpoints or data.
The metrics are what the report plots; this keeps every row the report
reads (train, eval, diagnostics, divergence) with numbers rounded to 6
significant digits and the fields it does not read dropped, gzipped
deterministically (no timestamp), so that packing again changes nothing.
tools/report reads metrics.jsonl.gz where metrics.jsonl is absent.

study.json itself is packed the same way, as study.json.gz (the folder's
.gitignore keeps the plain file out of git: it grows past what a repository
should hold), cut into study.json.gz.1, .2, ... when it is over 1.5 MiB. A clone unpacks it before the study carries on:

Usage: python3 tools/study_pack.py OUT           pack (before committing)
       python3 tools/study_pack.py --unpack OUT  study.json from study.json.gz
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
MAX_STUDY_BYTES = 256 << 20  # kMaxStudyFileBytes (src/study/study_file.h)
# study.json.gz over this is committed as study.json.gz.1, .2, ... (the
# gzip stream cut in pieces, joined again to read): no file in the
# repository is over 2 MiB, a size a repository host may move out of git.
PART_BYTES = 3 << 19  # 1.5 MiB


def packed_parts(out):
    """The files that hold OUT's packed study.json, in order: study.json.gz,
    or study.json.gz.1, .2, ... ([] when there is neither)."""
    whole = os.path.join(out, "study.json.gz")
    if os.path.isfile(whole):
        return [whole]
    parts = []
    while os.path.isfile(os.path.join(out, f"study.json.gz.{len(parts) + 1}")):
        parts.append(os.path.join(out, f"study.json.gz.{len(parts) + 1}"))
    return parts


def read_packed(out, max_bytes=MAX_STUDY_BYTES):
    """OUT's study.json from its packed file or parts, inflated (at most
    max_bytes: more is refused)."""
    parts = packed_parts(out)
    if not parts:
        raise FileNotFoundError(os.path.join(out, "study.json.gz"))
    stream = b"".join(open(p, "rb").read() for p in parts)
    with gzip.GzipFile(fileobj=io.BytesIO(stream), mode="rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{parts[0]} inflates to more than {max_bytes} bytes")
    return data


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


def gzip_bytes(data):
    """data gzipped deterministically (no timestamp, no name)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9, filename="") as gz:
        gz.write(data)
    return buf.getvalue()


def write_if_changed(path, data):
    """Writes data to path atomically unless it holds them already; True
    when it wrote."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return True


def pack_study(out):
    """study.json.gz beside study.json, or its parts when it is larger than
    PART_BYTES (the other form removed); True when it wrote a file."""
    with open(os.path.join(out, "study.json"), "rb") as f:
        packed = gzip_bytes(f.read())
    whole = os.path.join(out, "study.json.gz")
    pieces = [packed[i:i + PART_BYTES] for i in range(0, len(packed), PART_BYTES)]
    names = [whole] if len(pieces) == 1 else [f"{whole}.{i + 1}" for i in range(len(pieces))]
    stale = [p for p in [whole] + [f"{whole}.{i}" for i in range(1, 1000)] if p not in names and os.path.exists(p)]
    wrote = False
    for name, piece in zip(names, pieces):
        wrote = write_if_changed(name, piece) or wrote
    for p in stale:
        os.remove(p)
    return wrote or bool(stale)


def unpack_study(out):
    """study.json from study.json.gz where there is none yet (a fresh clone);
    a study.json already there is the newer record and is left alone."""
    plain = os.path.join(out, "study.json")
    if os.path.exists(plain):
        print(f"study_pack: {plain} is there already; left as it is")
        return
    parts = packed_parts(out)
    if not parts:
        sys.exit(f"study_pack: {plain}.gz not found")
    try:
        data = read_packed(out)
    except (OSError, EOFError, ValueError) as e:
        sys.exit(f"study_pack: {parts[0]}: {e}")
    write_if_changed(plain, data)
    print(f"study_pack: wrote {plain} from {', '.join(os.path.basename(p) for p in parts)}")


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
    return write_if_changed(dst, gzip_bytes(("\n".join(rows) + "\n").encode("utf-8")))


def main(argv):
    args = argv[1:]
    unpack = args[:1] == ["--unpack"]
    args = args[1:] if unpack else args
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit("usage: python3 tools/study_pack.py [--unpack] OUT (a study folder)")
    out = args[0]
    if unpack:
        unpack_study(out)
        return
    if not os.path.isdir(os.path.join(out, "runs")) or not os.path.isfile(os.path.join(out, "study.json")):
        sys.exit(f"study_pack: {out} has no study.json and runs/: not a study folder")
    runs = os.path.join(out, "runs")
    written = sum(pack_run(os.path.join(runs, name)) for name in sorted(os.listdir(runs)))
    pack_study(out)
    print(f"study_pack: {written} runs packed in {runs}, study.json in study.json.gz")


if __name__ == "__main__":
    main(sys.argv)
