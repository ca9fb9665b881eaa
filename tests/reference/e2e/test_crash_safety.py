"""Crash safety of `gpt2lab train`, beyond test_train.py's few kills:

1. SIGKILL at many moments -- random ones, and ones chosen to land inside a
   checkpoint write (the kill is sent the moment the staging directory
   appears). After every kill the published checkpoint loads, its weights
   and moments are finite, and its state.json agrees with metrics.jsonl;
   the final --resume gives metrics identical to an uninterrupted run and
   leaves no staging directory behind.
2. A full disk during a save: test_full_disk.py (it needs to mount a
   tmpfs, and is skipped where it cannot).
3. NaN/inf injected into an activation or a gradient, and weights overflowed
   by a huge learning rate: reported as divergence, and no checkpoint ever
   holds a non-finite value.
4. A corrupted state.json is refused on --resume, naming the field.
"""
import json
import os
import random
import signal
import subprocess
import time

import pytest

import harness
from harness import checkpoint_problems, read_metrics, stable, staging_dirs
from shards import make_dataset

# Long enough that the kills below land before the run completes even on an
# idle machine, where a step of this model takes a few milliseconds (with 30
# steps the run finished after 3 of the 24 kills once training got faster).
COMMON = ["-B", "4", "-T", "32", "--steps", "400", "--lr", "3e-3", "--warmup", "4", "--eval-every", "100",
          "--eval-batches", "3", "--diag-every", "100", "--grad-clip", "1.0", "--shuffle"]


# The quiet, 2-thread runs every case here starts (harness).
train, cmd = harness.quiet_train, harness.quiet_train_cmd


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("data")), 97, n_train=60000, n_val=5000)


@pytest.fixture(scope="module")
def ref(data, tmp_path_factory):
    ref_dir = str(tmp_path_factory.mktemp("ref") / "ref")
    train(data, ref_dir, *COMMON)
    return stable(read_metrics(ref_dir))


# ---- 1. SIGKILL at many moments, a checkpoint every step.

@pytest.fixture(scope="module")
def killed(data, tmp_path_factory):
    """(the run folder, kills, kills inside a save, attempts, [(attempt,
    checkpoint problems)] after each kill)."""
    run = str(tmp_path_factory.mktemp("killed") / "killed")
    rnd = random.Random(int(os.environ.get("GPT2LAB_CRASH_SEED", "9")))
    kills = kills_in_save = 0
    bad_after_kill = []
    attempts = int(os.environ.get("GPT2LAB_CRASH_KILLS", "24"))
    t_start = time.time()
    for attempt in range(attempts):
        resume = os.path.exists(os.path.join(run, "config.json"))
        p = subprocess.Popen(cmd(data, run, *COMMON, "--save-every", "1", *(["--resume"] if resume else [])),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # A staging directory that a previous kill left is no sign of a save
        # in progress (the new process removes it as it starts): only a new
        # name is.
        old = set(staging_dirs(run))
        inside = False
        if attempt % 2 == 0:
            # Aim inside a save: wait for a new staging directory to appear
            # (or the run to end), however long start-up takes.
            inside = harness.wait_until(p, lambda: bool(set(staging_dirs(run)) - old), "a checkpoint save",
                                        every=0.0005)
        else:
            time.sleep(rnd.uniform(0.01, 0.4))  # a random moment: no event to wait for
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
            kills_in_save += inside
        p.wait()
        problems = checkpoint_problems(run)
        if problems:
            bad_after_kill.append((attempt, problems))
    print(f"crash: {kills} kills ({kills_in_save} inside a save) in {time.time() - t_start:.1f} s", flush=True)
    return run, kills, kills_in_save, attempts, bad_after_kill


def test_checkpoint_is_whole_after_every_kill(killed):
    _, kills, kills_in_save, _, bad_after_kill = killed
    assert not bad_after_kill, (f"after each of {kills} SIGKILLs ({kills_in_save} inside a checkpoint write) the "
                                f"checkpoint loads, is finite and agrees with metrics.jsonl {bad_after_kill[:3]}")


def test_kills_land_inside_checkpoint_writes(killed):
    _, kills, kills_in_save, attempts, _ = killed
    assert kills_in_save >= attempts // 4, f"kills landed inside checkpoint writes ({kills_in_save} of {kills})"


@pytest.fixture(scope="module")
def resumed(data, killed):
    run = killed[0]
    train(data, run, *COMMON, "--save-every", "1",
          *(["--resume"] if os.path.exists(os.path.join(run, "config.json")) else []))
    return run


def test_resume_after_the_kills_gives_identical_metrics(resumed, ref):
    assert stable(read_metrics(resumed)) == ref, \
        "after the kills, --resume gives metrics identical to the uninterrupted run"


def test_no_staging_directory_is_left_behind(resumed):
    assert not staging_dirs(resumed), f"no staging directory is left behind ({staging_dirs(resumed)})"


# ---- 3. Numerical faults never reach a checkpoint.

@pytest.mark.parametrize("kind", ["nan-grad", "inf-grad", "nan-activation", "inf-activation"])
def test_numerical_fault_never_reaches_a_checkpoint(data, tmp, kind):
    g = os.path.join(tmp, "fault-" + kind)
    r = train(data, g, *COMMON, "--save-every", "1", "--inject-nan-at", "12", "--inject-kind", kind)
    with open(os.path.join(g, "result.json")) as fh:
        res = json.load(fh)
    with open(os.path.join(g, "checkpoint", "state.json")) as fh:
        st = json.load(fh)
    assert r.returncode == 0 and res["status"] == "diverged" and st["step"] == 12 and not checkpoint_problems(g), \
        f"{kind} at step 12: diverged ({res.get('reason')}), checkpoint of step {st['step']} kept and finite"


def test_overflowed_weights_never_reach_a_checkpoint(data, tmp):
    h = os.path.join(tmp, "overflow")
    train(data, h, "-B", "4", "-T", "32", "--steps", "6", "--lr", "1e38", "--save-every", "1", "--grad-clip", "0")
    with open(os.path.join(h, "result.json")) as fh:
        res = json.load(fh)
    has_ckpt = os.path.isdir(os.path.join(h, "checkpoint"))
    assert res["status"] == "diverged" and not checkpoint_problems(h), \
        (f"weights overflowed by --lr 1e38: diverged ({res.get('reason')}), "
         f"{'checkpoint finite' if has_ckpt else 'no checkpoint written'}")


def test_learning_rate_beyond_float_range_is_refused(data, tmp):
    r = train(data, os.path.join(tmp, "x"), "--lr", "1e39", check=False)
    assert r.returncode == 1 and "--lr" in r.stderr, "a learning rate beyond float range is refused"


# ---- 4. A corrupted state.json is refused, naming the field.

@pytest.fixture
def corrupt(data, tmp):
    """(a short run's folder, its state.json path, its good state)."""
    c = os.path.join(tmp, "corrupt")
    train(data, c, "-B", "4", "-T", "32", "--steps", "4", "--save-every", "2")
    state_path = os.path.join(c, "checkpoint", "state.json")
    with open(state_path) as fh:
        good = json.load(fh)
    return c, state_path, good


@pytest.mark.parametrize("field,value,needle", [
    ("data_position", -5, "'data_position'"), ("step", 1.5, "'step'"),
    ("metrics_bytes", 10**12, "'metrics_bytes'"), ("adam_t", None, "'adam_t'"),
    ("metrics_sha256", "0" * 63, "'metrics_sha256'"), ("metrics_sha256", "0" * 64, "sha256 differs"),
    ("metrics_sha256", 5, "'metrics_sha256'")])
def test_bad_state_field_is_refused_by_name(data, corrupt, field, value, needle):
    c, state_path, good = corrupt
    bad = dict(good)
    bad[field] = value
    with open(state_path, "w") as fh:
        json.dump(bad, fh)
    r = train(data, c, "-B", "4", "-T", "32", "--steps", "8", "--save-every", "2", "--resume", check=False)
    assert r.returncode == 1 and needle in r.stderr and "state.json" in r.stderr, \
        f"state.json with {field}={value} is refused: {r.stderr.strip()[:160]}"


def test_torn_state_json_is_refused(data, corrupt):
    c, state_path, _ = corrupt
    with open(state_path, "w") as fh:
        fh.write('{"step": 2, "adam_')
    r = train(data, c, "-B", "4", "-T", "32", "--steps", "8", "--resume", check=False)
    assert r.returncode == 1 and "state.json" in r.stderr and "internal error" not in r.stderr, \
        f"a torn state.json is refused: {r.stderr.strip()[:160]}"
