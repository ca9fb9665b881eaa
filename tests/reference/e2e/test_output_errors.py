"""Reliability, the output_errors case of test_reliability.py in a
file of its own so that it can be skipped alone: writes to a full device fail
with a message and a non-zero exit, and a sampling setting that is not a
number is refused before anything is printed.

Needs /dev/full: skips without it, so ctest shows it as skipped rather than
passed.
"""
import os

import pytest

import harness
from harness import TINY_MODEL as MODEL


def run(*args, timeout=120, **kw):
    """gpt2lab ARGS, output captured, 120 s at most (as in test_reliability.py)."""
    return harness.run(*args, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    if not os.path.exists("/dev/full"):
        pytest.skip("/dev/full is absent")
    path = str(tmp_path_factory.mktemp("output_errors") / "samp")
    run("init", *MODEL, "--out", path)
    return path


def test_sample_to_a_full_device_fails(ckpt):
    with open("/dev/full", "w") as full:
        r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--format", "ids", "--max-new-tokens", "50",
                stdout=full)
    assert r.returncode == 1 and "cannot write standard output" in r.stderr, "sample > /dev/full fails"


def test_info_to_a_full_device_fails(ckpt):
    with open("/dev/full", "w") as full:
        r = run("info", ckpt, stdout=full)
    assert r.returncode == 1 and "cannot write standard output" in r.stderr, "info > /dev/full fails"


def test_init_summary_to_a_full_device_fails(ckpt, tmp_path):
    with open("/dev/full", "w") as full:
        r = run("init", *MODEL, "--out", os.path.join(tmp_path, "init-full"), stdout=full)
    assert r.returncode == 1, "init's summary > /dev/full fails"


def test_temperature_nan_is_refused_before_printing(ckpt):
    r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--temperature", "nan")
    assert r.returncode == 1 and r.stdout == "" and "--temperature" in r.stderr, \
        "--temperature nan is refused before anything is printed"


def test_top_p_nan_is_refused_before_printing(ckpt):
    r = run("sample", "--model", ckpt, "--prompt-ids", "1 2 3", "--top-p", "nan")
    assert r.returncode != 0 and r.stdout == "", "--top-p nan is refused before anything is printed"
