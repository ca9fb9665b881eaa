"""SIGINT/SIGTERM during training never crashes the process.

An adversarial pass saw `train --threads 1` abort with glibc heap corruption
("corrupted size vs. prev_size", exit 134) in about a third of SIGINTs sent
1-4 s after start. This test sends 50 signals at random moments (seeded),
across 1 and 2 threads, SIGINT and SIGTERM, to a tiny model and asserts that
every run exits 0 with result.json "interrupted" (or "completed" when the
run won the race), a checkpoint that loads, and metrics.jsonl rows that all
parse. glibc's own heap checks are switched on (MALLOC_CHECK_=3,
MALLOC_PERTURB_) so that a corruption aborts at once instead of later.

GPT2LAB_SIGNALS=N changes the number of signals (default 50).
"""
import json
import os
import random
import signal
import subprocess
import time

import harness
from shards import make_dataset

N = int(os.environ.get("GPT2LAB_SIGNALS", "50"))


def one(data, out, threads, sig, delay, i):
    env = dict(os.environ, MALLOC_CHECK_="3", MALLOC_PERTURB_="165")
    cmd = harness.train_cmd(data, out, "--quiet", "--threads", str(threads),
                            "-B", "4", "-T", "32", "--steps", "100000", "--eval-every", "0", "--save-every", "0",
                            "--diag-every", "0")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return f"#{i}: did not stop within 120 s of {sig.name}"
    what = f"#{i} threads {threads} {sig.name} after {delay:.2f} s"
    if p.returncode == -sig and not os.path.exists(os.path.join(out, "config.json")):
        return None  # ended by the signal before the run began: nothing to keep
    if p.returncode != 0:
        return f"{what}: exit {p.returncode}: {err.strip()[-300:]}"
    try:
        with open(os.path.join(out, "result.json")) as f:
            status = json.load(f)["status"]
        with open(os.path.join(out, "metrics.jsonl")) as f:
            for line in f:
                json.loads(line)
    except (OSError, ValueError, KeyError) as e:
        return f"{what}: unreadable result or metrics: {e}"
    if status not in ("interrupted", "completed"):
        return f"{what}: status {status}"
    if status == "interrupted" and not os.path.exists(os.path.join(out, "checkpoint", "state.json")):
        return f"{what}: interrupted without a checkpoint"
    return None


def test_signals_during_training_never_crash(tmp_path):
    rng = random.Random(1313)
    tmp = str(tmp_path)
    data = make_dataset(os.path.join(tmp, "data"), 97)
    bad = []
    for i in range(N):
        threads = 1 + i % 2
        sig = signal.SIGINT if (i // 2) % 2 == 0 else signal.SIGTERM
        # Mostly mid-training; some right at start (during set-up and the
        # first steps). A signal that arrives before the run has written
        # anything may end the process (nothing is lost then).
        delay = rng.uniform(0.0, 0.15) if i % 5 == 0 else rng.uniform(0.2, 1.5)
        why = one(data, os.path.join(tmp, f"run{i}"), threads, sig, delay, i)
        if why:
            bad.append(why)
            print("      " + why, flush=True)
    assert not bad, f"{N} signals: every run exited 0 with a readable result ({len(bad)} did not)"
