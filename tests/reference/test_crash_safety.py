"""Crash safety of `gpt2lab train` (issue 9), beyond test_train.py's few kills:

1. SIGKILL at many moments -- random ones, and ones chosen to land inside a
   checkpoint write (the kill is sent the moment the staging directory
   appears). After every kill the published checkpoint loads, its weights
   and moments are finite, and its state.json agrees with metrics.jsonl;
   the final --resume gives metrics identical to an uninterrupted run and
   leaves no staging directory behind.
2. A full disk (a small tmpfs) during a save: the run stops with a clean
   error, the previous checkpoint is intact, nothing half-written remains;
   after space is freed --resume completes with identical metrics.
   Needs root for mount; without it that part is skipped and says so.
3. NaN/inf injected into an activation or a gradient, and weights overflowed
   by a huge learning rate: reported as divergence, and no checkpoint ever
   holds a non-finite value.
4. A corrupted state.json is refused on --resume, naming the field.
"""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from shards import make_dataset, read_metrics, stable  # noqa: E402

BIN = os.environ["GPT2LAB_BIN"]
failures = []
MODEL = ["--n-layer", "2", "--n-head", "2", "--n-embd", "64", "--block-size", "64", "--vocab-size", "97"]
# Long enough that the kills below land before the run completes even on an
# idle machine, where a step of this model takes a few milliseconds (with 30
# steps the run finished after 3 of the 24 kills once training got faster).
COMMON = ["-B", "4", "-T", "32", "--steps", "400", "--lr", "3e-3", "--warmup", "4", "--eval-every", "100",
          "--eval-batches", "3", "--diag-every", "100", "--grad-clip", "1.0", "--shuffle"]


def expect(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


def cmd(data, out, *extra):
    return [BIN, "train", *MODEL, "--data", data, "--out", out, "--quiet", "--threads", "2", *extra]


def train(data, out, *extra, check=True):
    r = subprocess.run(cmd(data, out, *extra), capture_output=True, text=True)
    if check and r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"train failed: {' '.join(cmd(data, out, *extra))}")
    return r


def non_finite(path):
    """Count of non-finite float32 values in a safetensors file."""
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


def staging_dirs(run):
    return [n for n in os.listdir(run) if n.startswith("checkpoint.tmp-")] if os.path.isdir(run) else []


def checkpoint_problems(run):
    """What is wrong with run/checkpoint, or [] if it is whole and consistent."""
    ck = os.path.join(run, "checkpoint")
    if not os.path.isdir(ck):
        return []  # killed before the first save: nothing to check
    problems = []
    r = subprocess.run([BIN, "info", ck], capture_output=True, text=True)
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
        if os.path.getsize(os.path.join(run, "metrics.jsonl")) < st["metrics_bytes"]:
            problems.append("metrics.jsonl shorter than state.json records")
        with open(os.path.join(run, "metrics.jsonl"), "rb") as fh:
            kept = fh.read(st["metrics_bytes"]).decode().splitlines()
        steps = [json.loads(x)["step"] for x in kept if '"loss"' in x and '"val_loss"' not in x]
        if steps and steps[-1] != st["step"] - 1:
            problems.append(f"state.json step {st['step']} but last logged train step {steps[-1]}")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"state.json: {e}")
    return problems


with tempfile.TemporaryDirectory() as tmp:
    data = make_dataset(os.path.join(tmp, "data"), 97, n_train=60000, n_val=5000)
    ref_dir = os.path.join(tmp, "ref")
    train(data, ref_dir, *COMMON)
    ref = stable(read_metrics(ref_dir))

    # ---- 1. SIGKILL at many moments, a checkpoint every step.
    run = os.path.join(tmp, "killed")
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
        if attempt % 2 == 0:
            # Aim inside a save: wait for a new staging directory to appear.
            deadline = time.time() + 5
            while p.poll() is None and time.time() < deadline and not set(staging_dirs(run)) - old:
                time.sleep(0.0005)
        else:
            time.sleep(rnd.uniform(0.01, 0.4))
        if p.poll() is None:
            inside = bool(set(staging_dirs(run)) - old)
            p.send_signal(signal.SIGKILL)
            kills += 1
            kills_in_save += inside
        p.wait()
        problems = checkpoint_problems(run)
        if problems:
            bad_after_kill.append((attempt, problems))
    expect(not bad_after_kill, f"after each of {kills} SIGKILLs ({kills_in_save} inside a checkpoint write) the "
                               f"checkpoint loads, is finite and agrees with metrics.jsonl {bad_after_kill[:3]}")
    expect(kills_in_save >= attempts // 4, f"kills landed inside checkpoint writes ({kills_in_save} of {kills})")
    train(data, run, *COMMON, "--save-every", "1", *(["--resume"] if os.path.exists(os.path.join(run, "config.json")) else []))
    expect(stable(read_metrics(run)) == ref, "after the kills, --resume gives metrics identical to the uninterrupted run")
    expect(not staging_dirs(run), f"no staging directory is left behind ({staging_dirs(run)})")
    print(f"crash: {kills} kills ({kills_in_save} inside a save) in {time.time() - t_start:.1f} s", flush=True)

    # ---- 2. Full disk during a save.
    mnt = os.path.join(tmp, "small_disk")
    os.makedirs(mnt)
    size_kb = 2048  # one checkpoint (~1.3 MB) fits; a second staging copy does not
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        print(f"SKIP  full disk: cannot mount a tmpfs ({m.stderr.strip()}); needs root", flush=True)
    else:
        try:
            full = os.path.join(mnt, "run")
            r = train(data, full, *COMMON, "--save-every", "1", check=False)
            with open(os.path.join(full, "checkpoint", "state.json")) as fh:
                st = json.load(fh)
            expect(r.returncode == 1 and "No space left on device" in r.stderr and "internal error" not in r.stderr,
                   f"a full disk during a save stops the run with a clean error: {r.stderr.strip()[:200]}")
            expect(not checkpoint_problems(full) and st["step"] >= 1,
                   f"the previous checkpoint (step {st['step']}) is intact and loads")
            expect(not staging_dirs(full), "the half-written staging directory was removed")
            subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
            train(data, full, *COMMON, "--save-every", "1", "--resume")
            expect(stable(read_metrics(full)) == ref, "after freeing space, --resume gives identical metrics")
        finally:
            subprocess.run(["umount", mnt], check=False)

    # ---- 3. Numerical faults never reach a checkpoint.
    for kind in ("nan-grad", "inf-grad", "nan-activation", "inf-activation"):
        g = os.path.join(tmp, "fault-" + kind)
        r = train(data, g, *COMMON, "--save-every", "1", "--inject-nan-at", "12", "--inject-kind", kind)
        with open(os.path.join(g, "result.json")) as fh:
            res = json.load(fh)
        with open(os.path.join(g, "checkpoint", "state.json")) as fh:
            st = json.load(fh)
        expect(r.returncode == 0 and res["status"] == "diverged" and st["step"] == 12 and not checkpoint_problems(g),
               f"{kind} at step 12: diverged ({res.get('reason')}), checkpoint of step {st['step']} kept and finite")
    h = os.path.join(tmp, "overflow")
    r = train(data, h, "-B", "4", "-T", "32", "--steps", "6", "--lr", "1e38", "--save-every", "1", "--grad-clip", "0")
    with open(os.path.join(h, "result.json")) as fh:
        res = json.load(fh)
    has_ckpt = os.path.isdir(os.path.join(h, "checkpoint"))
    expect(res["status"] == "diverged" and not checkpoint_problems(h),
           f"weights overflowed by --lr 1e38: diverged ({res.get('reason')}), "
           f"{'checkpoint finite' if has_ckpt else 'no checkpoint written'}")
    r = train(data, os.path.join(tmp, "x"), "--lr", "1e39", check=False)
    expect(r.returncode == 1 and "--lr" in r.stderr, "a learning rate beyond float range is refused")

    # ---- 4. A corrupted state.json is refused, naming the field.
    c = os.path.join(tmp, "corrupt")
    train(data, c, "-B", "4", "-T", "32", "--steps", "4", "--save-every", "2")
    state_path = os.path.join(c, "checkpoint", "state.json")
    with open(state_path) as fh:
        good = json.load(fh)
    for field, value, needle in (("data_position", -5, "'data_position'"), ("step", 1.5, "'step'"),
                                 ("metrics_bytes", 10**12, "'metrics_bytes'"), ("adam_t", None, "'adam_t'")):
        bad = dict(good)
        bad[field] = value
        with open(state_path, "w") as fh:
            json.dump(bad, fh)
        r = train(data, c, "-B", "4", "-T", "32", "--steps", "8", "--save-every", "2", "--resume", check=False)
        expect(r.returncode == 1 and needle in r.stderr and "state.json" in r.stderr,
               f"state.json with {field}={value} is refused: {r.stderr.strip()[:160]}")
    with open(state_path, "w") as fh:
        fh.write('{"step": 2, "adam_')
    r = train(data, c, "-B", "4", "-T", "32", "--steps", "8", "--resume", check=False)
    expect(r.returncode == 1 and "state.json" in r.stderr and "internal error" not in r.stderr,
           f"a torn state.json is refused: {r.stderr.strip()[:160]}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
