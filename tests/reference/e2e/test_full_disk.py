"""Crash safety of `gpt2lab train` on a full disk (part 2 of
test_crash_safety.py, in a file of its own so that it can be skipped alone).

The run directory is on a 2 MiB tmpfs, where one checkpoint (~1.3 MB) fits
and a second staging copy does not. A save that runs out of space stops the
run with a clean error, the previous checkpoint is intact and loads, nothing
half-written remains; after space is freed (remount at 64 MiB) --resume
completes with metrics identical to an uninterrupted run.

Needs to mount a tmpfs (root, or CAP_SYS_ADMIN): skips where it
cannot, so ctest shows it as skipped rather than passed.
"""
import json
import os
import shutil

import pytest

import harness
from harness import checkpoint_problems, read_metrics, stable, staging_dirs
from shards import make_dataset

# The settings of test_crash_safety.py (any would do: the run on the small
# disk is compared with an uninterrupted run of the same settings).
COMMON = ["-B", "4", "-T", "32", "--steps", "400", "--lr", "3e-3", "--warmup", "4", "--eval-every", "100",
          "--eval-batches", "3", "--diag-every", "100", "--grad-clip", "1.0", "--shuffle"]
SIZE_KB = 2048  # one checkpoint (~1.3 MB) fits; a second staging copy does not


def train(data, out, *extra, check=True):
    return harness.train(data, out, "--quiet", "--threads", "2", *extra, check=check)


@pytest.fixture(scope="module")
def small_disk(tmp_path_factory):
    """(a 2 MiB tmpfs, unmounted at the end, the scratch folder beside it)."""
    tmp = str(tmp_path_factory.mktemp("full_disk"))
    mnt = os.path.join(tmp, "small_disk")
    os.makedirs(mnt)
    if not shutil.which("mount"):
        pytest.skip("full disk: no mount command")
    m = harness.command(["mount", "-t", "tmpfs", "-o", f"size={SIZE_KB}k", "tmpfs", mnt])
    if m.returncode != 0:
        pytest.skip(f"full disk: cannot mount a tmpfs ({m.stderr.strip()}); needs root")
    try:
        yield mnt, tmp
    finally:
        harness.command(["umount", mnt])


@pytest.fixture(scope="module")
def data(small_disk):
    return make_dataset(os.path.join(small_disk[1], "data"), 97, n_train=60000, n_val=5000)


@pytest.fixture(scope="module")
def full_run(small_disk, data):
    """(the exit of a run that saved every step on the small disk, its folder)."""
    full = os.path.join(small_disk[0], "run")
    r = train(data, full, *COMMON, "--save-every", "1", check=False)
    return r, full


def test_full_disk_stops_the_run_with_a_clean_error(full_run):
    r, _ = full_run
    assert r.returncode == 1 and "No space left on device" in r.stderr and "internal error" not in r.stderr, \
        f"a full disk during a save stops the run with a clean error: {r.stderr.strip()[:200]}"


def test_previous_checkpoint_is_intact(full_run):
    _, full = full_run
    with open(os.path.join(full, "checkpoint", "state.json")) as fh:
        st = json.load(fh)
    assert not checkpoint_problems(full) and st["step"] >= 1, \
        f"the previous checkpoint (step {st['step']}) is intact and loads"


def test_staging_directory_is_removed(full_run):
    _, full = full_run
    assert not staging_dirs(full), "the half-written staging directory was removed"


def test_resume_after_freeing_space_gives_identical_metrics(small_disk, data, full_run):
    mnt, tmp = small_disk
    _, full = full_run
    ref_dir = os.path.join(tmp, "ref")
    train(data, ref_dir, *COMMON)
    ref = stable(read_metrics(ref_dir))
    harness.command(["mount", "-o", "remount,size=64m", mnt], check=True)
    train(data, full, *COMMON, "--save-every", "1", "--resume")
    assert stable(read_metrics(full)) == ref, "after freeing space, --resume gives identical metrics"
