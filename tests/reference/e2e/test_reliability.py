"""Run directories, inputs and limits: each case below failed on the code
before its fix. Ownership of a run directory, never destroying what gpt2lab
did not write, identity rather than names, wrong results from accepted
input, resource limits and error messages. (Output errors that fail are in
test_output_errors.py, which needs /dev/full and is skipped without it.)

Each case runs the real CLI on tiny models and data made here.
"""
import json
import os
import shutil
import stat
import struct
import subprocess
import time

import pytest

import harness
from harness import BIN, TINY_MODEL as MODEL, read_metrics
from shards import make_dataset

SHORT = ["-B", "4", "-T", "32", "--eval-every", "0", "--diag-every", "0", "--quiet", "--threads", "1"]


def run(*args, timeout=120, **kw):
    """gpt2lab ARGS, output captured, 120 s at most unless told."""
    return harness.run(*args, timeout=timeout, **kw)


def train(data, out, *extra, cwd=None):
    return run("train", *MODEL, "--data", data, "--out", out, *SHORT, *extra, cwd=cwd)


def write_corpus(d, seed, n=6):
    """n documents of seeded pseudo-words: enough distinct pairs for a 300-token BPE."""
    import random
    rng = random.Random(seed)
    os.makedirs(d)
    for i in range(n):
        words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 7)))
                 for _ in range(400)]
        open(os.path.join(d, f"d{i}.txt"), "w").write(" ".join(words) + ".\n")
    return d


def listing(d):
    return sorted(os.listdir(d))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The dataset every case reads (none writes to it)."""
    return make_dataset(str(tmp_path_factory.mktemp("data") / "data"), 97)


def test_ownership_of_a_run_directory(tmp, data):
    """Two trains on one --out; --resume of a live run; --out that is not a run."""
    out = os.path.join(tmp, "live")
    first = harness.start_until(harness.train_cmd(data, out, *SHORT, "--steps", "100000", "--save-every", "20"),
                                os.path.join(out, "checkpoint"))
    second = train(data, out, "--steps", "10", "--force")
    assert (second.returncode == 1 and "in use by another gpt2lab process" in second.stderr
            and f"pid {first.pid}" in second.stderr), \
        "a second train on a live run is refused, naming the holder's pid"
    resumed = train(data, out, "--steps", "100000", "--save-every", "20", "--resume")
    assert resumed.returncode == 1 and "in use" in resumed.stderr, "--resume of a run still training is refused"
    assert first.poll() is None, "the live run is unharmed by both attempts"
    first.send_signal(2)
    first.communicate(timeout=120)
    assert first.returncode == 0, "the live run then stops cleanly on SIGINT"
    rows = read_metrics(out)  # every line parses: no interleaved writer
    assert len(rows) > 0 and json.load(open(os.path.join(out, "result.json")))["status"] == "interrupted", \
        "its metrics.jsonl parses line by line and result.json says interrupted"
    again = train(data, out, "--steps", "1", "--resume", "--save-every", "20")
    # The lock died with the process: a later --resume is not refused as in use.
    assert "in use" not in again.stderr and "cannot be shortened" in again.stderr, \
        "the lock is released when its holder exits (and --steps below the checkpoint is refused)"

    notrun = os.path.join(tmp, "notes")
    os.makedirs(notrun)
    open(os.path.join(notrun, "todo.txt"), "w").write("keep me")
    r = train(data, notrun, "--steps", "5")
    assert r.returncode == 1 and "holds no training run" in r.stderr and listing(notrun) == ["todo.txt"], \
        "train --out into a folder that is not a run is refused and writes nothing there"
    r = train(data, notrun, "--steps", "5", "--force")
    assert r.returncode == 1 and listing(notrun) == ["todo.txt"], "... also with --force"
    ckpt = os.path.join(tmp, "model")
    run("init", *MODEL, "--out", ckpt)
    before = listing(ckpt)
    r = train(data, ckpt, "--steps", "5", "--force")
    assert r.returncode == 1 and listing(ckpt) == before, "train --force --out CHECKPOINT deletes nothing"
    r = train(data, os.path.join(tmp, "notes", "todo.txt"), "--steps", "5")
    assert r.returncode == 1 and "not a directory" in r.stderr, "train --out FILE is refused"
    # A run with files of the user's own in it: --force replaces only the run's files.
    run_dir = os.path.join(tmp, "mine")
    train(data, run_dir, "--steps", "5")
    open(os.path.join(run_dir, "notes.md"), "w").write("mine")
    r = train(data, run_dir, "--steps", "5", "--force")
    assert r.returncode == 0 and open(os.path.join(run_dir, "notes.md")).read() == "mine", \
        "train --force over a run keeps the user's own files in it"


def test_outputs_replaced_only_when_ours(tmp, data):
    """Outputs replaced only when ours, only with --force, never with foreign files."""
    corpus = write_corpus(os.path.join(tmp, "corpus"), 1)
    tok = os.path.join(tmp, "tok")
    r = run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok)
    assert r.returncode == 0, "tokenizer train writes a new folder"
    r = run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok)
    assert r.returncode == 1 and "--force" in r.stderr, "tokenizer train over a tokenizer needs --force"
    open(os.path.join(tok, "README"), "w").write("mine")
    r = run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok, "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(tok, "README")), \
        "tokenizer train --force never deletes a file it did not write"
    os.remove(os.path.join(tok, "README"))

    ds = os.path.join(tmp, "ds")
    args = ["prepare", "--input", corpus, "--tokenizer", tok, "--val-every", "3", "--out", ds]
    assert run(*args).returncode == 0, "prepare writes a new dataset"
    r = run(*args)
    assert r.returncode == 1 and "--force" in r.stderr, "prepare over an existing dataset needs --force"
    assert run(*args, "--force").returncode == 0, "prepare --force replaces a dataset"
    open(os.path.join(ds, "notes.txt"), "w").write("mine")
    r = run(*args, "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(ds, "notes.txt")), \
        "prepare --force never deletes a file it did not write"

    ckpt = os.path.join(tmp, "ck")
    run("init", *MODEL, "--out", ckpt)
    open(os.path.join(ckpt, "README.md"), "w").write("my notes")
    r = run("init", *MODEL, "--out", ckpt, "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(ckpt, "README.md")), \
        "init --force over a checkpoint with other files keeps them (refused)"
    r = run("convert", "--input", ckpt, "--out", os.path.join(tmp, "m.bin"))
    r = run("convert", "--input", os.path.join(tmp, "m.bin"), "--out", ckpt, "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(ckpt, "README.md")), \
        "convert --force over a checkpoint with other files keeps them (refused)"
    os.remove(os.path.join(ckpt, "README.md"))
    assert run("init", *MODEL, "--out", ckpt, "--force").returncode == 0, "init --force replaces its own checkpoint"

    mine = os.path.join(tmp, "my-notes")
    os.makedirs(mine)
    open(os.path.join(mine, "report.md"), "w").write("mine")
    r = run("study", "--preset", "grad-at-init", "--data", corpus, "--out", mine, "--budget", "quick")
    assert r.returncode == 1 and "not a study folder" in r.stderr and listing(mine) == ["report.md"], \
        "study --out a folder that is not a study is refused (its report.md would be overwritten)"


def test_identity_of_data_and_tokenizer(tmp, data):
    """Resolved paths recorded; content checked on resume and sample."""
    rel_parent = os.path.dirname(data)
    out = os.path.join(tmp, "rel")
    r = train(os.path.basename(data), out, "--steps", "10", "--save-every", "5", cwd=rel_parent)
    assert r.returncode == 0, "a run with a relative --data trains"
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert os.path.isabs(cfg["data"]), "config.json records --data resolved"
    r = train(os.path.basename(data), out, "--steps", "20", "--resume", cwd=rel_parent)
    assert r.returncode == 0, "--resume with the same relative --data is the same data"
    r = run("train", "--out", out, "--steps", "30", "--resume", "--quiet", cwd="/")
    assert r.returncode == 0, "--resume works from another working directory"

    # Same path, other content: refused.
    other = os.path.join(tmp, "data2")
    shutil.copytree(data, other)
    out2 = os.path.join(tmp, "swap")
    train(other, out2, "--steps", "10", "--save-every", "5")
    make_dataset(other, 97, n_train=50000, n_val=4000, seed=7)
    r = train(other, out2, "--steps", "20", "--resume")
    assert r.returncode == 1 and "not what the run started with" in r.stderr, \
        "--resume refuses data replaced under the same path"

    # Hand-edited config.json of the run, and of its checkpoint.
    out3 = os.path.join(tmp, "edit")
    train(data, out3, "--steps", "10", "--save-every", "5")
    path = os.path.join(out3, "config.json")
    original = open(path).read()
    for key, value in (("world", 2), ("shuffle", True)):
        c = json.loads(original)
        c[key] = value
        open(path, "w").write(json.dumps(c))
        r = train(data, out3, "--steps", "20", "--resume")
        assert r.returncode == 1 and f"field '{key}'" in r.stderr, f"--resume refuses a config.json with {key} edited"
    open(path, "w").write(original)
    cpath = os.path.join(out3, "checkpoint", "config.json")
    c = json.load(open(cpath))
    c["norm"] = "post"
    open(cpath, "w").write(json.dumps(c))
    r = train(data, out3, "--steps", "20", "--resume")
    assert r.returncode == 1 and "field 'norm'" in r.stderr, "--resume refuses a checkpoint whose config was edited"

    # A checkpoint decodes only with the tokenizer it was trained with.
    corpus = write_corpus(os.path.join(tmp, "corpus2"), 2)
    tok = os.path.join(tmp, "tok2")
    run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok)
    ds = os.path.join(tmp, "ds2")
    run("prepare", "--input", corpus, "--tokenizer", tok, "--val-every", "3", "--out", ds)
    out4 = os.path.join(tmp, "tokrun")
    m300 = [a if a != "97" else "300" for a in MODEL]
    short16 = [a if a != "32" else "16" for a in SHORT]
    r = run("train", *m300, "--data", ds, "--out", out4, *short16, "--steps", "4")
    assert r.returncode == 0, "a run on a dataset of a 300-token tokenizer trains"
    rec = json.load(open(os.path.join(out4, "checkpoint", "config.json")))
    assert os.path.isabs(rec.get("tokenizer", "")) and len(rec.get("tokenizer_sha256", "")) == 64, \
        "its checkpoint records the tokenizer resolved, with its sha256"
    r = run("sample", "--model", os.path.join(out4, "checkpoint"), "--prompt", "abc", "--max-new-tokens", "3", cwd="/")
    assert r.returncode == 0, "sample finds the checkpoint's tokenizer from another directory"
    # The vocabulary comes from the data; a contradicting one is refused.
    no_vocab = [a for i, a in enumerate(MODEL) if a != "--vocab-size" and MODEL[i - 1] != "--vocab-size"]
    out5 = os.path.join(tmp, "vocab-default")
    r = run("train", *no_vocab, "--data", ds, "--out", out5, *short16, "--steps", "2")
    assert r.returncode == 0 and json.load(open(os.path.join(out5, "config.json")))["model"]["vocab_size"] == 300, \
        "train takes the vocabulary size from the data's meta.json"
    r = run("train", *no_vocab, "--vocab-size", "50257", "--data", ds, "--out", os.path.join(tmp, "v2"), *short16,
            "--steps", "2")
    assert r.returncode == 1 and "50257" in r.stderr and "300" in r.stderr, \
        "an explicit --vocab-size that contradicts the data is refused, naming both"
    other_corpus = write_corpus(os.path.join(tmp, "corpus3"), 3)
    run("tokenizer", "train", "--input", other_corpus, "--vocab-size", "300", "--out", tok, "--force")
    # The checkpoint carries its own tokenizer files, which win over the path.
    r = run("sample", "--model", os.path.join(out4, "checkpoint"), "--prompt", "abc", "--max-new-tokens", "3")
    assert r.returncode == 0, "sample uses the checkpoint's own tokenizer files, not what the recorded path holds now"
    for f in ("vocab.json", "merges.txt"):
        os.remove(os.path.join(out4, "checkpoint", f))
    r = run("sample", "--model", os.path.join(out4, "checkpoint"), "--prompt", "abc", "--max-new-tokens", "3")
    assert r.returncode == 1 and "not the one this model was trained with" in r.stderr, \
        "without them, sample refuses a different tokenizer at the recorded path"
    r = run("sample", "--model", os.path.join(out4, "checkpoint"), "--tokenizer", tok, "--prompt", "abc")
    assert r.returncode == 1 and "not the one this model was trained with" in r.stderr, \
        "a --tokenizer other than the one it was trained with is refused"
    r = run("train", *m300, "--data", ds, "--out", os.path.join(tmp, "tokflag"), *short16, "--steps", "4",
            "--tokenizer", tok)
    assert r.returncode == 1 and "not the tokenizer the data" in r.stderr, \
        "train refuses a --tokenizer other than the data's"


def test_accepted_input_that_gave_wrong_results(tmp, data):
    """Input that used to be accepted and give wrong results."""
    # An untied HF head.
    src = os.path.join(tmp, "tied")
    run("init", *MODEL, "--out", src)
    untied = os.path.join(tmp, "untied")
    shutil.copytree(src, untied)
    c = json.load(open(os.path.join(untied, "config.json")))
    c["tie_word_embeddings"] = False
    json.dump(c, open(os.path.join(untied, "config.json"), "w"))
    r = run("sample", "--model", untied, "--prompt-ids", "1", "--max-new-tokens", "2", "--format", "ids")
    assert r.returncode == 1 and "tie_word_embeddings" in r.stderr, "an untied HF head is refused, not ignored"

    # info validates the weights against config.json like every loader.
    liar = os.path.join(tmp, "liar")
    shutil.copytree(src, liar)
    c = json.load(open(os.path.join(liar, "config.json")))
    c["n_layer"] = 3
    json.dump(c, open(os.path.join(liar, "config.json"), "w"))
    r = run("info", liar)
    assert r.returncode == 1 and "missing tensor" in r.stderr, "info refuses a config.json that lies about n_layer"

    # A repeated flag takes its last value.
    rep = os.path.join(tmp, "rep")
    r = train(data, rep, "--steps", "2", "-T", "16")
    assert r.returncode == 0 and json.load(open(os.path.join(rep, "config.json")))["seq_len"] == 16, \
        "a repeated flag (-T 32 ... -T 16) takes the last value"

    # Schedules that make no sense.
    r = train(data, os.path.join(tmp, "s1"), "--steps", "10", "--lr", "1e-3", "--min-lr", "1e-2")
    assert r.returncode == 1 and "--min-lr" in r.stderr, "a final lr above the peak is refused"
    r = train(data, os.path.join(tmp, "s2"), "--steps", "10", "--min-lr", "-5")
    assert r.returncode == 1 and "--min-lr" in r.stderr, "a negative --min-lr is refused, not replaced by lr/10"
    r = train(data, os.path.join(tmp, "s3"), "--steps", "10", "--warmup", "50")
    assert r.returncode == 1 and "--warmup" in r.stderr, "a warmup longer than the run is refused"
    r = train(data, os.path.join(tmp, "s4"), "--steps", "10", "--eps", "inf")
    assert r.returncode == 1 and "--eps" in r.stderr, "an infinite --eps is refused"
    for bad in ("s1", "s2", "s3", "s4"):
        assert not os.path.exists(os.path.join(tmp, bad)), f"refused run {bad} left no folder"

    # --init-from: model flags would be ignored; a changed --init-from on resume.
    base = os.path.join(tmp, "base")
    train(data, base, "--steps", "4")
    r = run("train", "--init-from", os.path.join(base, "checkpoint"), "--n-layer", "4", "--data", data,
            "--out", os.path.join(tmp, "ft"), *SHORT, "--steps", "4")
    assert r.returncode == 1 and "--n-layer" in r.stderr, "--init-from with a model flag is refused, naming it"
    ft = os.path.join(tmp, "ft2")
    r = run("train", "--init-from", os.path.join(base, "checkpoint"), "--data", data, "--out", ft, *SHORT,
            "--steps", "4", "--save-every", "2")
    assert r.returncode == 0, "--init-from alone fine-tunes"
    r = run("train", "--init-from", os.path.join(tmp, "tied"), "--data", data, "--out", ft, *SHORT, "--steps", "8",
            "--resume")
    assert r.returncode == 1 and "--init-from differs" in r.stderr, \
        "--resume compares --init-from exactly (it matched --init by substring before)"

    # result.json holds the diverged step's own loss.
    div = os.path.join(tmp, "div")
    r = train(data, div, "--steps", "30", "--max-loss", "4.0", "--lr", "1e-3")
    res = json.load(open(os.path.join(div, "result.json")))
    last = [row for row in read_metrics(div) if row.get("diverged")]
    assert res["status"] == "diverged" and last and res["last_loss"] == last[-1]["loss"], \
        f"result.json's last_loss is the diverged step's loss ({res.get('last_loss')})"


# The rest of each class, found by a second adversarial pass.

@pytest.fixture
def sp_run(tmp, data):
    """A 6-step run saved at step 3 and 6 (each test gets its own)."""
    ck = os.path.join(tmp, "sp-run")
    train(data, ck, "--steps", "6", "--save-every", "3")
    return ck


def test_convert_force_never_replaces_a_fifo_or_a_shard(tmp, data, sp_run):
    ck = sp_run
    fifo = os.path.join(tmp, "sp-fifo")
    os.mkfifo(fifo)
    r = run("convert", "--input", os.path.join(ck, "checkpoint"), "--to", "llmc", "--out", fifo, "--force")
    assert r.returncode == 1 and stat.S_ISFIFO(os.stat(fifo).st_mode), "convert --force never replaces a FIFO/device"
    shard = os.path.join(data, "train.bin")
    before = open(shard, "rb").read(64)
    r = run("convert", "--input", os.path.join(ck, "checkpoint"), "--to", "llmc", "--out", shard, "--force")
    assert r.returncode == 1 and open(shard, "rb").read(64) == before, "convert --force never replaces a token shard"


def test_train_force_keeps_its_init_and_user_files(data, sp_run):
    ck = sp_run
    r = train(data, ck, "--steps", "6", "--force", "--init-from", os.path.join(ck, "checkpoint"))
    assert r.returncode == 1 and os.path.exists(os.path.join(ck, "checkpoint", "model.safetensors")), \
        "train --force refuses to delete the checkpoint it is told to start from"
    open(os.path.join(ck, "checkpoint", "notes.txt"), "w").write("mine")
    r = train(data, ck, "--steps", "6", "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(ck, "checkpoint", "notes.txt")), \
        "train --force keeps a user file inside checkpoint/ (refused)"
    os.remove(os.path.join(ck, "checkpoint", "notes.txt"))


def test_force_never_deletes_the_users_files(tmp, data):
    corpus = write_corpus(os.path.join(tmp, "sp-corpus"), 9)
    tok = os.path.join(tmp, "sp-tok")
    os.makedirs(os.path.join(tok, "encoder.json"))
    open(os.path.join(tok, "encoder.json", "mine.txt"), "w").write("mine")
    r = run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok, "--force")
    assert r.returncode == 1 and os.path.exists(os.path.join(tok, "encoder.json", "mine.txt")), \
        "a folder named like one of our files is not ours to delete"
    llmc = os.path.join(tmp, "sp-llmc")
    shutil.copytree(data, llmc)
    r = run("prepare", "--input", corpus, "--out", llmc, "--force", "--val-every", "3")
    assert r.returncode == 1 and "did not write" in r.stderr, \
        "prepare --force never replaces llm.c shards of the user's"
    r = run("study", "--preset", "grad-at-init", "--data", corpus, "--out", corpus, "--budget", "quick")
    assert r.returncode == 1 and not os.path.exists(os.path.join(corpus, "data")), \
        "study --out equal to --data is refused and writes nothing there"


def test_bad_numbers_and_data_files_are_refused(tmp, data):
    for bad in ("-1", "18446744073709551616"):
        r = run("init", *MODEL, "--seed", bad, "--out", os.path.join(tmp, "sp-seed"))
        assert r.returncode != 0 and not os.path.exists(os.path.join(tmp, "sp-seed")), f"--seed {bad} is refused"
    r = train(data, os.path.join(tmp, "sp-lr"), "--steps", "4", "--lr", "1e-50")
    assert r.returncode == 1 and "too small" in r.stderr, "an lr that underflows a float is refused"
    r = run("train", *MODEL, "--data", data, "--out", os.path.join(tmp, "sp-ev"), "-B", "4", "-T", "32", "--quiet",
            "--steps", "2", "--eval-batches", "1000000")
    assert r.returncode == 1 and "--eval-batches" in r.stderr, "--eval-batches beyond the validation split is refused"
    fdata = os.path.join(tmp, "sp-fdata")
    shutil.copytree(data, fdata)
    os.remove(os.path.join(fdata, "val.bin"))
    os.mkfifo(os.path.join(fdata, "val.bin"))
    r = train(fdata, os.path.join(tmp, "sp-f"), "--steps", "2")
    assert r.returncode == 1 and "not a regular file" in r.stderr, "a FIFO val.bin is an error, not 'no val shard'"
    mdata = os.path.join(tmp, "sp-mdata")
    shutil.copytree(data, mdata)
    open(os.path.join(mdata, "meta.json"), "w").write('{"tokenizer": 5}')
    r = train(mdata, os.path.join(tmp, "sp-m"), "--steps", "2")
    assert r.returncode == 1 and "meta.json" in r.stderr, "a malformed meta.json is refused, not ignored"


def test_bos_and_eos_are_the_vocabularys_last_id(sp_run):
    ck = sp_run
    cfg = json.load(open(os.path.join(ck, "checkpoint", "config.json")))
    assert cfg["eos_token_id"] == 96 and cfg["bos_token_id"] == 96, "bos/eos ids are the vocabulary's last id"


def test_resume_refuses_an_edited_state_json(data, sp_run):
    ck = sp_run
    # state.json edited: each field checked against the rest.
    st_path = os.path.join(ck, "checkpoint", "state.json")
    original = open(st_path).read()
    for key, value in (("metrics_bytes", 0), ("adam_t", 1000), ("data_position", 99999), ("step", 1000),
                       ("seed", 7)):
        st = json.loads(original)
        st[key] = value
        open(st_path, "w").write(json.dumps(st))
        r = train(data, ck, "--steps", "9", "--resume")
        assert (r.returncode == 1
                and any(w in r.stderr for w in ("inconsistent", "out of range", "cannot be shortened"))), \
            f"--resume refuses a state.json with {key} edited"
    open(st_path, "w").write(original)


def test_resume_refuses_rewritten_shards(tmp, data):
    # Data rewritten with other tokens of the same size.
    d5 = os.path.join(tmp, "sp-d5")
    shutil.copytree(data, d5)
    r5 = os.path.join(tmp, "sp-r5")
    train(d5, r5, "--steps", "4", "--save-every", "2")
    make_dataset(d5, 97, seed=11)
    r = train(d5, r5, "--steps", "8", "--resume")
    assert r.returncode == 1 and "not what the run started with" in r.stderr, \
        "--resume refuses shards rewritten with other tokens of the same size"


def test_sigint_during_a_study_stops_it_cleanly(tmp):
    # SIGINT during a study's grad-at-init phase: a graceful stop.
    st_out = os.path.join(tmp, "sp-study")
    big_corpus = write_corpus(os.path.join(tmp, "sp-corpus-40"), 10, n=40)
    p = subprocess.Popen([BIN, "study", "--preset", "grad-at-init", "--data", big_corpus, "--out", st_out, "--budget",
                          "quick", "--threads", "1", "--no-report"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    # The runs start right after this line; by then a signal stops the study
    # gracefully (before it, the default action may still end the process).
    started = ""
    while not started.startswith("study: budget") and (line := p.stderr.readline()):
        started = line
    p.send_signal(2)
    p.communicate(timeout=harness.HANG_GUARD_S)
    leftovers = [n for n in os.listdir(st_out) if ".tmp-" in n] if os.path.isdir(st_out) else []
    assert p.returncode == 0 and not leftovers, f"a SIGINT during a study stops it cleanly (exit {p.returncode})"


# The rest of each class, found by a third adversarial pass.

@pytest.fixture
def tp_run(tmp, data):
    """A 4-step run saved at step 2 and 4 (each test gets its own)."""
    run_ = os.path.join(tmp, "tp-run")
    train(data, run_, "--steps", "4", "--save-every", "2")
    return run_


@pytest.fixture(scope="module")
def tp_dataset(tmp_path_factory):
    """(a corpus, a 300-token tokenizer trained on it, a dataset prepared with it)."""
    tmp = str(tmp_path_factory.mktemp("tp"))
    corpus = write_corpus(os.path.join(tmp, "tp-corpus"), 12)
    tok = os.path.join(tmp, "tp-tok")
    run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", tok)
    ds = os.path.join(tmp, "tp-ds")
    run("prepare", "--input", corpus, "--tokenizer", tok, "--val-every", "3", "--out", ds)
    return corpus, tok, ds


M300 = [a if a != "97" else "300" for a in MODEL]
SHORT16 = [a if a != "32" else "16" for a in SHORT]


@pytest.fixture(scope="module")
def tp_trained(tp_dataset, tmp_path_factory):
    """(a run trained on tp_dataset, its HF conversion)."""
    tmp = str(tmp_path_factory.mktemp("tp-trained"))
    trained = os.path.join(tmp, "tp-trained")
    run("train", *M300, "--data", tp_dataset[2], "--out", trained, *SHORT16, "--steps", "2")
    conv = os.path.join(tmp, "tp-conv")
    run("convert", "--input", os.path.join(trained, "checkpoint"), "--to", "hf", "--out", conv)
    return trained, conv


def test_checkpoint_save_never_deletes_a_user_file(data, tp_run):
    run_ = tp_run
    open(os.path.join(run_, "checkpoint", "notes.txt"), "w").write("mine")
    r = train(data, run_, "--steps", "8", "--resume")
    assert r.returncode == 1 and os.path.exists(os.path.join(run_, "checkpoint", "notes.txt")), \
        "a checkpoint save never deletes a user file put into checkpoint/ (refused)"
    os.remove(os.path.join(run_, "checkpoint", "notes.txt"))


def test_sighup_stops_a_run_like_sigterm(tmp, data):
    hup = os.path.join(tmp, "tp-hup")
    p = harness.start_until(harness.train_cmd(data, hup, *SHORT, "--steps", "100000", "--save-every", "1000"),
                            os.path.join(hup, "metrics.jsonl"), stdout=subprocess.DEVNULL)
    p.send_signal(1)  # SIGHUP: the terminal went away
    p.communicate(timeout=120)
    res = json.load(open(os.path.join(hup, "result.json"))) if os.path.exists(os.path.join(hup, "result.json")) else {}
    assert p.returncode == 0 and res.get("status") == "interrupted", "SIGHUP stops a run like SIGTERM (saved)"


def test_bad_numbers_are_refused(tmp, data, tp_run):
    run_ = tp_run

    r = train(data, os.path.join(tmp, "tp-accum"), "--steps", "2", "--accum", "100000000")
    assert r.returncode == 1 and "--accum" in r.stderr, "an --accum beyond the data's batches is refused"
    r = train(data, run_, "--steps", "2", "--resume")
    assert r.returncode == 1 and "cannot be shortened" in r.stderr, "--steps below the checkpoint's step is refused"
    for bad, flag in (("9223372036854775808", "--steps"), ("0x10", "--steps"), ("1e-50", "--grad-clip")):
        r = train(data, os.path.join(tmp, "tp-num"), flag, bad)
        assert r.returncode != 0 and not os.path.exists(os.path.join(tmp, "tp-num")), f"{flag} {bad} is refused"
    r = train(data, os.path.join(tmp, "tp-const"), "--steps", "2", "--schedule", "constant", "--min-lr", "5")
    assert r.returncode == 0, "--min-lr is not checked against --lr for a constant schedule (it is unused)"


def test_tokenizer_and_prepare_refuse_overlapping_folders(tp_dataset):
    corpus, tok, _ = tp_dataset
    r = run("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--out", corpus)
    assert r.returncode == 1 and len(os.listdir(corpus)) == 6, "tokenizer train --out equal to its --input is refused"
    r = run("prepare", "--input", corpus, "--tokenizer", tok, "--out", os.path.join(corpus, "ds"))
    assert r.returncode == 1 and "overlaps" in r.stderr, "prepare --out inside its --input is refused"


def test_meta_json_with_a_wrong_tokenizer_is_refused(tmp, tp_dataset):
    m300, short16 = M300, SHORT16
    corpus, tok, ds = tp_dataset
    meta_path = os.path.join(ds, "meta.json")
    original = open(meta_path).read()
    for what, edit in (("sha256", lambda m: m["tokenizer"].update(sha256="deadbeef")),
                       ("vocab_size", lambda m: m["tokenizer"].update(vocab_size=70000)),
                       ("spec", lambda m: m["tokenizer"].update(spec="gpt2")),
                       ("version", lambda m: m.update(version=2))):
        m = json.loads(original)
        edit(m)
        open(meta_path, "w").write(json.dumps(m))
        r = run("train", *m300, "--data", ds, "--out", os.path.join(tmp, "tp-meta"), *short16, "--steps", "2")
        assert r.returncode == 1 and "meta.json" in r.stderr, f"a meta.json with a wrong tokenizer {what} is refused"
    open(meta_path, "w").write(original)


def test_convert_keeps_the_tokenizers_identity(tp_trained):
    trained, conv = tp_trained
    c = json.load(open(os.path.join(conv, "config.json")))
    assert len(c.get("tokenizer_sha256", "")) == 64 and c.get("eos_token_id") == 299, \
        "convert keeps the tokenizer's identity (and eos is the vocabulary's last id)"


def test_out_paths_that_are_not_ours_are_refused(tmp, tp_trained):
    conv = tp_trained[1]
    link = os.path.join(tmp, "tp-link")
    os.symlink(conv, link)
    r = run("init", *MODEL, "--out", link, "--force")
    assert r.returncode == 1 and os.path.islink(link), "an --out that is a symbolic link is refused, not replaced"
    here = os.path.join(tmp, "tp-here")
    os.makedirs(here)
    r = run("init", *MODEL, "--out", ".", cwd=here)
    assert r.returncode == 1 and "current directory" in r.stderr, "init --out . (the current directory) is refused"
    gone = os.path.join(tmp, "tp-gone")
    os.makedirs(gone)
    p = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{BIN}" train --data d --out o'],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "internal error" not in p.stderr, "a deleted working directory is an error, not exit 3"


def test_input_limits_and_seeds_that_would_wrap(tp_trained):
    trained = tp_trained[0]
    r = harness.run("tokenize", "--decode", input="1 2 3 4 99999")
    assert r.returncode == 1 and "position 4" in r.stderr, "tokenize --decode names the bad id's position"
    r = harness.run("tokenize", input="a" * (12 << 20))
    assert r.returncode == 1 and "4 MiB" in r.stderr, "a 12 MB run of one letter is refused, not held in memory"
    ck = os.path.join(trained, "checkpoint")
    r = run("sample", "--model", ck, "--prompt-ids", "1", "--seed", "18446744073709551615", "--num-samples", "3")
    assert r.returncode == 1 and "--seed" in r.stderr, "sample seeds that would wrap around are refused"


def expect_refused_at_once(checkpoint, what):
    """`info` on a checkpoint holding a FIFO: refused, not blocked on it."""
    try:
        r = run("info", checkpoint)  # blocked on the FIFO, it would never return
        assert r.returncode == 1 and "not a regular file" in r.stderr, what
    except subprocess.TimeoutExpired:
        assert False, what + " (it blocked)"


def test_limits_and_messages(tmp):
    """Bounded parsing, non-regular files, numbers as typed, no raw JSON errors."""
    d = os.path.join(tmp, "fifo")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "config.json"))
    expect_refused_at_once(d, "info on a FIFO config.json is refused at once")
    good = os.path.join(tmp, "good")
    run("init", *MODEL, "--out", good)
    os.remove(os.path.join(d, "config.json"))
    shutil.copy(os.path.join(good, "config.json"), d)
    os.mkfifo(os.path.join(d, "model.safetensors"))
    expect_refused_at_once(d, "info on a FIFO weights file is refused at once")

    deep = os.path.join(tmp, "deep")
    shutil.copytree(good, deep)
    header = b"[" * 5_000_000
    with open(os.path.join(deep, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
    t0 = time.time()
    r = run("info", deep)
    assert r.returncode == 1 and "nested" in r.stderr, \
        f"a 5M-deep safetensors header is refused ({time.time() - t0:.2f} s)"
    big = os.path.join(tmp, "big")
    shutil.copytree(good, big)
    with open(os.path.join(big, "config.json"), "w") as f:
        f.write(" " * (20 << 20) + "{}")
    r = run("info", big)
    assert r.returncode == 1 and "refusing to read" in r.stderr, "a 20 MB config.json is refused before it is read"

    c = json.load(open(os.path.join(good, "config.json")))
    weird = os.path.join(tmp, "weird")
    shutil.copytree(good, weird)
    text = json.dumps(c).replace('"n_embd": 64', '"n_embd": 9223372036854775808')
    open(os.path.join(weird, "config.json"), "w").write(text)
    r = run("info", weird)
    assert r.returncode == 1 and "9223372036854775808" in r.stderr and "-9223372036854775808" not in r.stderr, \
        "n_embd 2^63 is shown as written"
    open(os.path.join(weird, "config.json"), "w").write('{"n_layer": 2,')
    r = run("info", weird)
    assert r.returncode == 1 and "[json.exception" not in r.stderr and r.stderr.count(weird) == 1, \
        "a torn config.json: no raw JSON exception text, the path once"
