"""Reading a run's metrics.jsonl: the one reader of gpt2lab's Python tools
(tools/plot, tools/report) and tests (tests/reference/harness.py).

The trainer writes one JSON object a line with a "kind": "train" (a step),
"eval" (validation), "diag" (per-layer diagnostics) or "diverged"; rows of
older runs have no kind and are told apart by their fields. A committed
study keeps the rows packed in metrics.jsonl.gz (tools/study_pack.py),
read here the same way. Lines are capped in length and nesting like the
C++ readers' (src/core/json.h), so a hostile file costs no more than a
real one; a torn last line (a killed run) is skipped.
"""
import gzip
import json
import os
import stat

KINDS = ("train", "eval", "diag", "diverged")
MAX_LINE_BYTES = 16 << 20
MAX_DEPTH = 64
MAX_PACKED_BYTES = 256 << 20
NUMBER_FIELDS = ("loss", "val_loss", "lr", "grad_norm", "tokens_per_s")


class BadRow(ValueError):
    """A line no writer of gpt2lab makes: `where` names file and line."""


def json_depth_exceeds(line, limit):
    """Whether brackets outside strings nest deeper than limit."""
    if line.count("[") + line.count("{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for c in line:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
    return False


def kind_of(row):
    """A row's kind: its own field, else what its fields say (older runs)."""
    k = row.get("kind")
    if k in KINDS:
        return k
    if row.get("diverged"):
        return "diverged"
    if "grad_norms" in row:
        return "diag"
    if "val_loss" in row:
        return "eval"
    if "loss" in row:
        return "train"
    return None


def check_row(row, where):
    """BadRow for a field of the wrong type: a plot would show something else."""
    step = row.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise BadRow(f"{where}: field 'step' is {json.dumps(step)[:40]}, not an integer")
    for key in NUMBER_FIELDS:
        v = row.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise BadRow(f"{where}: field '{key}' is {json.dumps(v)[:40]}, not a number")


def parse_line(line, where, strict):
    """The row of one line, or None to skip it. strict: a line too long, too
    deep or with a field of the wrong type raises BadRow; otherwise it is
    skipped like a torn one."""
    try:
        if len(line) > MAX_LINE_BYTES:
            raise BadRow(f"{where}: a line longer than {MAX_LINE_BYTES} characters; refusing it")
        if json_depth_exceeds(line, MAX_DEPTH):
            raise BadRow(f"{where}: JSON nested more than {MAX_DEPTH} levels deep; refusing it")
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(row, dict):
            return None
        check_row(row, where)
        return row
    except BadRow:
        if strict:
            raise
        return None


def open_metrics(path):
    """(the file's name as shown, a binary stream of its text): path, or
    path + '.gz' (inflated) when only the packed copy is there. OSError when
    neither is a regular file (a FIFO would block, a device never end)."""
    for p, packed in ((path, False), (path + ".gz", True)):
        if not os.path.exists(p):
            continue
        f = open(p, "rb", opener=lambda q, flags: os.open(q, flags | os.O_NONBLOCK))
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            f.close()
            raise OSError(f"{p} is not a regular file")
        return p, (gzip.GzipFile(fileobj=f) if packed else f)
    raise FileNotFoundError(f"{path}: no such file (nor {os.path.basename(path)}.gz)")


def read_rows(path, strict=False):
    """Every row of a metrics file (a run folder's metrics.jsonl is given as
    the file), in order, read a line at a time: a line longer than the cap
    is not read whole first. strict: BadRow for a line no gpt2lab writer
    makes; otherwise such a line is skipped."""
    shown, stream = open_metrics(path)
    rows, total = [], 0
    with stream:
        for number, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), 1):
            total += len(raw)
            if total > MAX_PACKED_BYTES and shown.endswith(".gz"):
                raise OSError(f"{shown} inflates to more than {MAX_PACKED_BYTES} bytes")
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            row = parse_line(line, f"{shown}:{number}", strict)
            if row is not None:
                rows.append(row)
    return rows


def by_kind(rows):
    """{kind: [rows]} for every kind in KINDS (rows of no known kind dropped)."""
    out = {k: [] for k in KINDS}
    for r in rows:
        k = kind_of(r)
        if k:
            out[k].append(r)
    return out


def run_rows(run_dir, strict=False):
    """read_rows of a run folder's metrics.jsonl (or its packed copy)."""
    return read_rows(os.path.join(run_dir, "metrics.jsonl"), strict)
