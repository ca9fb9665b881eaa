"""Crash safety of `gpt2lab train` on a full disk (part 2 of
test_crash_safety.py, in a file of its own so that it can be skipped alone).

The run directory is on a 2 MiB tmpfs, where one checkpoint (~1.3 MB) fits
and a second staging copy does not. A save that runs out of space stops the
run with a clean error, the previous checkpoint is intact and loads, nothing
half-written remains; after space is freed (remount at 64 MiB) --resume
completes with metrics identical to an uninterrupted run.

Needs to mount a tmpfs (root, or CAP_SYS_ADMIN): skips (exit 77) where it
cannot, so ctest shows it as skipped rather than passed.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import checkpoint_problems, expect, read_metrics, stable, staging_dirs  # noqa: E402
from shards import make_dataset  # noqa: E402

# The settings of test_crash_safety.py (any would do: the run on the small
# disk is compared with an uninterrupted run of the same settings).
COMMON = ["-B", "4", "-T", "32", "--steps", "400", "--lr", "3e-3", "--warmup", "4", "--eval-every", "100",
          "--eval-batches", "3", "--diag-every", "100", "--grad-clip", "1.0", "--shuffle"]
SIZE_KB = 2048  # one checkpoint (~1.3 MB) fits; a second staging copy does not


def train(data, out, *extra, check=True):
    return harness.train(data, out, "--quiet", "--threads", "2", *extra, check=check)


with harness.scratch() as tmp:
    mnt = os.path.join(tmp, "small_disk")
    os.makedirs(mnt)
    if not shutil.which("mount"):
        harness.skip("full disk: no mount command")
    m = harness.command(["mount", "-t", "tmpfs", "-o", f"size={SIZE_KB}k", "tmpfs", mnt])
    if m.returncode != 0:
        harness.skip(f"full disk: cannot mount a tmpfs ({m.stderr.strip()}); needs root")
    try:
        data = make_dataset(os.path.join(tmp, "data"), 97, n_train=60000, n_val=5000)
        ref_dir = os.path.join(tmp, "ref")
        train(data, ref_dir, *COMMON)
        ref = stable(read_metrics(ref_dir))

        full = os.path.join(mnt, "run")
        r = train(data, full, *COMMON, "--save-every", "1", check=False)
        with open(os.path.join(full, "checkpoint", "state.json")) as fh:
            st = json.load(fh)
        expect(r.returncode == 1 and "No space left on device" in r.stderr and "internal error" not in r.stderr,
               f"a full disk during a save stops the run with a clean error: {r.stderr.strip()[:200]}")
        expect(not checkpoint_problems(full) and st["step"] >= 1,
               f"the previous checkpoint (step {st['step']}) is intact and loads")
        expect(not staging_dirs(full), "the half-written staging directory was removed")
        harness.command(["mount", "-o", "remount,size=64m", mnt], check=True)
        train(data, full, *COMMON, "--save-every", "1", "--resume")
        expect(stable(read_metrics(full)) == ref, "after freeing space, --resume gives identical metrics")
    finally:
        harness.command(["umount", mnt])

harness.finish("full-disk")
