"""What the reference tests (and bench/) share besides pytest's fixtures
(conftest.py): the gpt2lab binary run as a subprocess, waiting for a run's
events, and reading what a run wrote (metrics, checkpoints).

The tests live in oracle/ (against an independent reference) and e2e/
(end-to-end behaviour) as pytest test functions; this module and the other
shared files stay here, one folder up, where pytest.ini puts them on the
import path (`import harness`). Running them: docs/design.md, "How it is
tested".

Environment (ctest sets the first three; tests/CMakeLists.txt):
  GPT2LAB_BIN          the gpt2lab binary (default SOURCE/build/gpt2lab)
  GPT2LAB_TESTTOOL     the test tool (default SOURCE/build/tests/gpt2lab_testtool)
  GPT2LAB_SOURCE_DIR   the source tree (default: two folders above this file)
"""
import json
import os
import struct
import subprocess
import sys
import time

REFERENCE = os.path.dirname(os.path.abspath(__file__))  # tests/reference: the shared files
SOURCE = os.environ.get("GPT2LAB_SOURCE_DIR") or os.path.normpath(os.path.join(REFERENCE, "..", ".."))
BIN = os.path.abspath(os.environ.get("GPT2LAB_BIN") or os.path.join(SOURCE, "build", "gpt2lab"))
sys.path.insert(0, os.path.join(SOURCE, "tools"))
import metrics_file  # noqa: E402  (the tools' one metrics reader)
TOOL = os.path.abspath(os.environ.get("GPT2LAB_TESTTOOL") or os.path.join(SOURCE, "build", "tests",
                                                                          "gpt2lab_testtool"))
SKIP = 77  # ctest's SKIP_RETURN_CODE: a file whose tests all skipped (conftest.py)

# The small model most end-to-end tests train (a few ms a step).
TINY_MODEL = ["--n-layer", "2", "--n-head", "2", "--n-embd", "64", "--block-size", "64", "--vocab-size", "97"]


def skip(reason):
    """Nothing to check here (a missing prerequisite): pytest.skip, which
    conftest.py turns into exit 77 (ctest: skipped) when every test of the
    file skipped. Tests call pytest.skip themselves; this stays for code
    written before the conversion to pytest."""
    import pytest
    pytest.skip(reason, allow_module_level=True)


# ---------------------------------------------------------------- processes

def gpt2lab_module(need_gpt2_data=True):
    """The built Python module, imported (conftest.py's gpt2lab fixtures); a
    skip where it is not built (pybind11 missing, or a sanitizer build) or,
    with need_gpt2_data, where data/gpt2 (GPT-2's tokenizer) is missing
    outside CI (a failure under CI); at a module's top level too."""
    import pytest
    module_dir = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
    data = os.environ.get("GPT2LAB_DATA") or os.path.join(SOURCE, "data")
    if not module_dir:
        skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    if need_gpt2_data and not os.path.exists(os.path.join(data, "gpt2")):
        if os.environ.get("CI"):
            pytest.fail("data/gpt2 missing under CI (scripts/setup.sh fetches it)")
        skip("data/gpt2 (GPT-2's tokenizer) is missing")
    sys.path.insert(0, module_dir)
    import gpt2lab
    return gpt2lab


def report_package():
    """tools/report, imported as `report` the way its entry point does (its
    verdicts, evidence and load need no matplotlib)."""
    import importlib.util
    folder = os.path.join(SOURCE, "tools", "report")
    spec = importlib.util.spec_from_file_location("report", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    sys.modules["report"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["report"])
    return sys.modules["report"]


def command(cmd, check=False, cwd=None, env=None, timeout=None, input=None, stdin=None, stdout=None, text=True):
    """Runs cmd and returns the CompletedProcess, its output captured
    (stdout goes to `stdout` instead when that is given: a file, DEVNULL).
    env: variables added to this process's environment. check=True: a
    non-zero exit fails the test (pytest.fail), showing the command and its
    output."""
    kw = {"cwd": cwd, "timeout": timeout, "text": text}
    if env is not None:
        kw["env"] = {**os.environ, **env}
    if input is not None:
        kw["input"] = input
    if stdin is not None:
        kw["stdin"] = stdin
    if stdout is not None:
        r = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, **kw)
    else:
        r = subprocess.run(cmd, capture_output=True, **kw)
    if check and r.returncode != 0:
        out = (r.stdout or "") if text else (r.stdout or b"").decode(errors="replace")
        err = r.stderr if text else r.stderr.decode(errors="replace")
        import pytest
        pytest.fail(f"command failed (exit {r.returncode}): {' '.join(map(str, cmd))}\n{out}{err}")
    return r


def run(*args, **kw):
    """gpt2lab ARGS (see command for the keywords)."""
    return command([BIN, *args], **kw)


def train_cmd(data, out, *flags, model=TINY_MODEL):
    """The argv of `gpt2lab train MODEL --data DATA --out OUT FLAGS...`."""
    return [BIN, "train", *model, "--data", data, "--out", out, *flags]


def train(data, out, *flags, model=TINY_MODEL, **kw):
    """gpt2lab train MODEL --data DATA --out OUT FLAGS... (see command)."""
    return command(train_cmd(data, out, *flags, model=model), **kw)


def quiet_train_cmd(data, out, *flags):
    """train_cmd with --quiet --threads 2: the form the crash and resume tests run."""
    return train_cmd(data, out, "--quiet", "--threads", "2", *flags)


def quiet_train(data, out, *flags, check=True):
    """gpt2lab train --quiet --threads 2 ... (check=True by default: a set-up run must succeed)."""
    return command(quiet_train_cmd(data, out, *flags), check=check)


def same_length_edit(path, row=0):
    """Rewrites one digit of the loss of train row `row` (from 0) of a
    metrics.jsonl, keeping the file's length."""
    with open(path) as fh:
        lines = fh.readlines()
    i = [k for k, x in enumerate(lines) if '"loss":' in x and '"lr":' in x][row]
    at = lines[i].index('"loss":') + len('"loss":') + 3  # a digit after "d."
    digit = lines[i][at]
    assert digit.isdigit(), lines[i]
    lines[i] = lines[i][:at] + str((int(digit) + 1) % 10) + lines[i][at + 1:]
    with open(path, "w") as fh:
        fh.writelines(lines)


# A hang guard, never a speed check: what a test waits for normally comes
# in seconds, also under the sanitizers on a busy machine.
HANG_GUARD_S = 900


def wait_until(p, ready, what, every=0.01):
    """Waits while process p runs until ready() holds: True once it does,
    False if p exits first; ready() is polled every `every` seconds. A test
    waits for an event (a file appearing), not for a time; only a hang
    (HANG_GUARD_S) kills p and fails the test."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not ready():
        if p.poll() is not None:
            return bool(ready())
        if time.monotonic() > deadline:
            p.kill()
            import pytest
            pytest.fail(f"hang: {what} did not happen within {HANG_GUARD_S} s")
        time.sleep(every)
    return True


def start_until(cmd, path, stdout=subprocess.PIPE):
    """Starts cmd (a long run) and returns its Popen once `path` exists or
    the run has ended (the caller checks which); stderr is a pipe, stdout as
    given."""
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    wait_until(p, lambda: os.path.exists(path), f"{path} appearing")
    return p


# ---------------------------------------------------------------- what a run wrote

def read_metrics(run_dir):
    """Every row of a run's metrics.jsonl, by the tools' one reader
    (tools/metrics_file.py); a line no writer of ours makes is an error."""
    return metrics_file.run_rows(run_dir, strict=True)


def stable(rows):
    """Metrics rows without the wall-clock fields, which no two runs share."""
    return [{k: v for k, v in r.items() if k not in ("ms", "comm_wait_ms", "tokens_per_s", "elapsed_s")} for r in rows]


def non_finite(path):
    """Count of non-finite float32 values in a safetensors file."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    bad = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        bad += int((~np.isfinite(np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32))).sum())
    return bad


def staging_dirs(run_dir):
    """Checkpoint staging folders (checkpoint.tmp-*) left in a run folder."""
    return [n for n in os.listdir(run_dir) if n.startswith("checkpoint.tmp-")] if os.path.isdir(run_dir) else []


def checkpoint_problems(run_dir):
    """What is wrong with run_dir/checkpoint, or [] if it is whole and consistent."""
    ck = os.path.join(run_dir, "checkpoint")
    if not os.path.isdir(ck):
        return []  # killed before the first save: nothing to check
    problems = []
    r = run("info", ck)
    if r.returncode != 0:
        problems.append("info fails: " + r.stderr.strip())
    for f in ("model.safetensors", "optimizer.safetensors"):
        p = os.path.join(ck, f)
        if not os.path.exists(p):
            problems.append(f + " missing")
        elif non_finite(p):
            problems.append(f + " holds non-finite values")
    try:
        with open(os.path.join(ck, "state.json")) as fh:
            st = json.load(fh)
        if os.path.getsize(os.path.join(run_dir, "metrics.jsonl")) < st["metrics_bytes"]:
            problems.append("metrics.jsonl shorter than state.json records")
        with open(os.path.join(run_dir, "metrics.jsonl"), "rb") as fh:
            kept = fh.read(st["metrics_bytes"]).decode().splitlines()
        steps = [json.loads(x)["step"] for x in kept if '"loss"' in x and '"val_loss"' not in x]
        if steps and steps[-1] != st["step"] - 1:
            problems.append(f"state.json step {st['step']} but last logged train step {steps[-1]}")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"state.json: {e}")
    return problems
