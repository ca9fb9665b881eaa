"""`gpt2lab train` behaviour: determinism, accumulation, crash + resume,
signals, divergence, fine-tuning and refusal of bad input."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect, read_metrics, stable  # noqa: E402
from shards import make_dataset, write_shard  # noqa: E402


# The quiet, 2-thread runs every case here starts (harness).
train, cmd_of = harness.quiet_train, harness.quiet_train_cmd


with harness.scratch() as tmp:
    data = make_dataset(os.path.join(tmp, "data"), 97, n_train=60000, n_val=5000)
    common = ["-B", "4", "-T", "32", "--steps", "40", "--lr", "3e-3", "--warmup", "4", "--eval-every", "10",
              "--eval-batches", "3", "--diag-every", "10", "--save-every", "5", "--grad-clip", "1.0", "--shuffle"]

    # 1. Same seed, data, threads: bit-identical metrics.
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    train(data, a, *common)
    train(data, b, *common)
    ref = stable(read_metrics(a))
    expect(ref == stable(read_metrics(b)), "two identical runs give bit-identical metrics")
    losses = [r["loss"] for r in ref if "loss" in r]
    expect(len(losses) == 40 and losses[-1] < losses[0] - 0.5, f"loss falls ({losses[0]:.3f} -> {losses[-1]:.3f})")
    diag = [r for r in ref if "grad_norms" in r]
    expect([r["step"] for r in diag] == [0, 10, 20, 30] and len(diag[0]["residual_rms"]) == 3
           and len(diag[0]["grad_norms"]["attn.c_attn"]) == 2 and len(diag[0]["update_ratio"]) == 2,
           "diagnostics rows at steps 0, 10, 20, 30 with per-layer values")
    vals = [r["step"] for r in ref if "val_loss" in r]
    expect(vals == [0, 10, 20, 30, 40], f"evaluations at 0, 10, 20, 30, 40 (got {vals})")
    with open(os.path.join(a, "result.json")) as f:
        expect(json.load(f)["status"] == "completed", "result.json says completed")

    # 2. kill -9 at random moments (checkpointing every step, so some kills
    #    land inside a save), then --resume: identical metrics.
    c = os.path.join(tmp, "c")
    rnd = random.Random(1)
    kills = 0
    cmd = cmd_of(data, c, *[x if x != "5" else "1" for x in common])
    for attempt in range(6):
        p = subprocess.Popen(cmd + (["--resume"] if attempt else []), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.02, 0.15))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
    # The same command plus --resume, as documented: if every kill landed
    # before config.json existed (a slow, sanitized start-up), this starts
    # the run, and only the full command knows its settings.
    r = harness.command(cmd + ["--resume"])
    # Same options as run a except save-every; metrics do not depend on it.
    got = stable(read_metrics(c))
    if got != ref:  # say where, so that a failure can be understood from the log
        print(f"      {len(got)} rows vs {len(ref)}; first difference:")
        for x, y in zip(got, ref):
            if x != y:
                print(f"      resumed:       {x}\n      uninterrupted: {y}")
                break
        for name in sorted(os.listdir(c)):
            print(f"      {name}")
    expect(got == ref, f"after {kills} SIGKILLs and --resume the metrics equal the uninterrupted run")

    # 3. SIGTERM: finish the step, save, exit 0; resume completes identically.
    d = os.path.join(tmp, "d")
    p = subprocess.Popen(cmd_of(data, d, *common), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Training has begun (the stop handlers are in place) once metrics.jsonl exists.
    harness.wait_until(p, lambda: os.path.exists(os.path.join(d, "metrics.jsonl")), "the run training")
    p.send_signal(signal.SIGTERM)
    p.wait()
    with open(os.path.join(d, "result.json")) as f:
        status = json.load(f)["status"]
    expect(p.returncode == 0 and status in ("interrupted", "completed"), f"SIGTERM exits 0 with status {status}")
    train(data, d, "--resume")
    expect(stable(read_metrics(d)) == ref, "resume after SIGTERM gives identical metrics")

    # 3b. --resume where nothing was written yet (killed at start-up) starts the run.
    fresh = os.path.join(tmp, "fresh")
    r = train(data, fresh, *common, "--resume")
    expect(stable(read_metrics(fresh)) == ref and "holds no run yet" in r.stderr,
           "--resume on a directory without a run starts it (same metrics)")

    # 3c. Stopped during its last step: the checkpoint is at the final step but
    #     the final evaluation and a completed result.json are missing; --resume
    #     finishes both. (The state is built from a finished run.)
    last = os.path.join(tmp, "last")
    shutil.copytree(a, last)
    with open(os.path.join(last, "metrics.jsonl")) as fh:
        lines = fh.readlines()
    assert '"val_loss"' in lines[-1]
    with open(os.path.join(last, "metrics.jsonl"), "w") as fh:
        fh.writelines(lines[:-1])
    st_path = os.path.join(last, "checkpoint", "state.json")
    with open(st_path) as fh:
        st = json.load(fh)
    st["metrics_bytes"] = sum(len(x.encode()) for x in lines[:-1])
    st["final"] = False  # a stop at the last step saves before the final evaluation
    st.pop("val_loss", None)
    with open(st_path, "w") as fh:
        json.dump(st, fh)
    with open(os.path.join(last, "result.json"), "w") as fh:
        json.dump({"status": "interrupted", "steps": 40}, fh)
    train(data, last, "--resume")
    with open(os.path.join(last, "result.json")) as fh:
        res_last = json.load(fh)
    with open(os.path.join(a, "result.json")) as fh:
        res_a = json.load(fh)
    expect(stable(read_metrics(last)) == ref and res_last == res_a,
           "a run stopped in its last step is completed by --resume (final eval, result.json equal to the "
           "uninterrupted run's, last_loss included)")

    # 3d. Killed after the final checkpoint (which includes the final
    #     evaluation row) but before result.json: --resume writes result.json
    #     and no second evaluation row. (Found as a 1-in-20 flake of part 2.)
    nores = os.path.join(tmp, "nores")
    shutil.copytree(a, nores)
    os.remove(os.path.join(nores, "result.json"))
    with open(os.path.join(nores, "checkpoint", "state.json")) as fh:
        st = json.load(fh)
    train(data, nores, "--resume")
    with open(os.path.join(nores, "result.json")) as fh:
        res_nores = json.load(fh)
    expect(st.get("final") is True and stable(read_metrics(nores)) == ref and res_nores == res_a,
           "a kill between the final checkpoint and result.json: --resume adds no row and writes the same result.json")
    train(data, a, "--resume")
    expect(stable(read_metrics(a)) == ref, "--resume of a completed run changes nothing")

    # 3e. A completed run extended with a larger --steps: the evaluation at
    #     its old last step (in the final checkpoint) is not written twice.
    ext = os.path.join(tmp, "ext")
    shutil.copytree(a, ext)
    train(data, ext, "--resume", "--steps", "50")
    ext_rows = stable(read_metrics(ext))
    at40 = [r for r in ext_rows if r.get("step") == 40 and "val_loss" in r]
    expect(ext_rows[:len(ref)] == ref and len(at40) == 1 and ext_rows[-1].get("step") == 50 and "val_loss" in ext_rows[-1],
           f"extending a completed run to 50 steps keeps one evaluation row at step 40 (found {len(at40)})")

    # 4. Accumulation: B=2 x accum 2 equals B=4 (same windows) to float tolerance.
    e, f_ = os.path.join(tmp, "e"), os.path.join(tmp, "f")
    base = ["-T", "32", "--steps", "15", "--lr", "3e-3", "--eval-every", "0", "--grad-clip", "0"]
    train(data, e, "-B", "4", *base)
    train(data, f_, "-B", "2", "--accum", "2", *base)
    le = [r["loss"] for r in read_metrics(e) if "loss" in r]
    lf = [r["loss"] for r in read_metrics(f_) if "loss" in r]
    worst = max(abs(x - y) / abs(x) for x, y in zip(le, lf))
    expect(len(le) == len(lf) == 15 and worst < 1e-5, f"accum 2 x B=2 equals B=4 (worst rel diff {worst:.1e})")

    # 5. A NaN gradient is divergence: reported, run stops, checkpoint stays good.
    g = os.path.join(tmp, "g")
    r = train(data, g, *common, "--inject-nan-at", "12")
    rows = read_metrics(g)
    div = [x for x in rows if x.get("diverged")]
    with open(os.path.join(g, "result.json")) as fh:
        res = json.load(fh)
    with open(os.path.join(g, "checkpoint", "state.json")) as fh:
        st = json.load(fh)
    expect(r.returncode == 0 and res["status"] == "diverged" and div and div[0]["step"] == 12,
           "an injected NaN is reported as divergence at step 12")
    expect(st["step"] == 10 and not [x for x in rows if x.get("step", 0) > 12],
           "the last good checkpoint (step 10) is kept and nothing is logged after divergence")
    s = harness.run("info", os.path.join(g, "checkpoint"))
    expect(s.returncode == 0, "the kept checkpoint loads")
    h = os.path.join(tmp, "h")
    train(data, h, "-B", "4", "-T", "32", "--steps", "40", "--lr", "1e3", "--max-loss", "20", "--grad-clip", "0")
    with open(os.path.join(h, "result.json")) as fh:
        expect(json.load(fh)["status"] == "diverged", "a huge learning rate diverges (loss above --max-loss or NaN)")

    # 6. Fine-tuning from a checkpoint continues from its weights.
    ft = os.path.join(tmp, "ft")
    train(data, ft, "--init-from", os.path.join(a, "checkpoint"), "-B", "4", "-T", "32", "--steps", "5",
          "--lr", "1e-3", "--eval-every", "0")
    first = [x["loss"] for x in read_metrics(ft) if "loss" in x][0]
    expect(first < losses[0] - 0.5, f"fine-tuning starts from the trained weights (loss {first:.3f})")

    # 7. Bad input is refused with a clear message, before any work.
    r = train(data, a, *common, check=False)
    expect(r.returncode == 1 and "--resume" in r.stderr, "an existing run is not overwritten without --force")
    r = train(os.path.join(tmp, "nope"), os.path.join(tmp, "x1"), check=False)
    expect(r.returncode == 1 and "does not exist" in r.stderr, "a missing data directory is named")
    r = train(data, os.path.join(tmp, "x2"), "-T", "65", check=False)
    expect(r.returncode == 1 and "block_size" in r.stderr, "T above block_size is refused")
    small = os.path.join(tmp, "small")
    os.makedirs(small)
    write_shard(os.path.join(small, "train.bin"), list(range(50)))
    r = train(small, os.path.join(tmp, "x3"), "-B", "4", "-T", "32", check=False)
    expect(r.returncode == 1 and "B*T+1" in r.stderr, "a shard shorter than one batch is refused")
    big = os.path.join(tmp, "big")
    os.makedirs(big)
    write_shard(os.path.join(big, "train.bin"), [500] * 1000)
    r = train(big, os.path.join(tmp, "x4"), "-B", "2", "-T", "16", check=False)
    expect(r.returncode == 1 and "vocab_size" in r.stderr, "token ids beyond the vocab are refused")
    with open(os.path.join(small, "train.bin"), "r+b") as fh:
        fh.truncate(1500)
    r = train(small, os.path.join(tmp, "x5"), check=False)
    expect(r.returncode == 1 and "train.bin" in r.stderr and "Traceback" not in r.stderr,
           "a truncated shard is refused, naming the file")
    r = train(data, os.path.join(tmp, "x6"), "--lr", "-1", check=False)
    expect(r.returncode == 1 and "--lr" in r.stderr, "a negative learning rate is refused")

harness.finish("train")
