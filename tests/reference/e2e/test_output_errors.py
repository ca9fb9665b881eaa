"""Reliability, the output_errors case of test_reliability.py in a
file of its own so that it can be skipped alone: writes to a full device fail
with a message and a non-zero exit, and a sampling setting that is not a
number is refused before anything is printed.

Needs /dev/full: skips (exit 77) without it, so ctest shows it as skipped
rather than passed.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import TINY_MODEL as MODEL, expect  # noqa: E402


def run(*args, timeout=120, **kw):
    """gpt2lab ARGS, output captured, 120 s at most (as in test_reliability.py)."""
    return harness.run(*args, timeout=timeout, **kw)


if not os.path.exists("/dev/full"):
    harness.skip("/dev/full is absent")
with harness.scratch() as tmp:
    ckpt = os.path.join(tmp, "samp")
    run("init", *MODEL, "--out", ckpt)
    with open("/dev/full", "w") as full:
        r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--format", "ids", "--max-new-tokens", "50",
                stdout=full)
        expect(r.returncode == 1 and "cannot write standard output" in r.stderr, "sample > /dev/full fails")
        r = run("info", ckpt, stdout=full)
        expect(r.returncode == 1 and "cannot write standard output" in r.stderr, "info > /dev/full fails")
        r = run("init", *MODEL, "--out", os.path.join(tmp, "init-full"), stdout=full)
        expect(r.returncode == 1, "init's summary > /dev/full fails")
    r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--temperature", "nan")
    expect(r.returncode == 1 and r.stdout == "" and "--temperature" in r.stderr,
           "--temperature nan is refused before anything is printed")
    r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--top-p", "nan")
    expect(r.returncode != 0 and r.stdout == "", "--top-p nan is refused before anything is printed")

harness.finish("output-error")
