"""What a new user meets in the first hour: progress on a
terminal, config files that show floats as typed, a run accepted where a
checkpoint is expected, CLI errors with a "did you mean", the eval command
(its loss equals the trainer's own evaluation), and sample's --stop and
speed summary. Each check fails on the code before this work."""
import fcntl
import json
import math
import os
import pty
import re
import struct
import subprocess
import termios

import pytest

import harness
from harness import run as gpt2lab
from shards import make_dataset

TEXT = ("The quick brown fox jumps over the lazy dog. " * 40 + "\n\n") * 3


def on_terminal(cmd, cols):
    """Runs cmd with stderr on a pseudo-terminal `cols` wide; returns what it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    return p.returncode, out.decode(errors="replace")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("data") / "data")
    make_dataset(data, 97, n_train=6000, n_val=2000)
    return data


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    """A 6-step run of the tiny model (read only)."""
    run = str(tmp_path_factory.mktemp("run") / "run")
    harness.train(data, run, "--steps", "6", "--eval-every", "3", "--eval-batches", "2", "-B", "2", "-T", "16",
                  "--quiet", check=True)
    return run


def test_terminal_progress(data, tmp):
    run = os.path.join(tmp, "tty")
    rc, out = on_terminal(harness.train_cmd(data, run, "--steps", "12", "--eval-every", "4", "--eval-batches", "2",
                                            "-B", "2", "-T", "16", "--log-every", "5"), 60)
    assert rc == 0, "train runs on a terminal"
    assert "val loss" in out, "on a terminal the validation loss is shown"
    out = out.replace("\r\n", "\n")  # the terminal's own line ends
    live = [re.sub(r"\x1b\[K", "", p) for p in re.split(r"[\r\n]", out) if p.startswith("step ") and "|" in p]
    assert live and max(len(p) for p in live) <= 59, \
        f"the progress line fits a 60-column terminal (longest {max(map(len, live)) if live else None})"
    kept = [line for line in out.split("\n") if line.rsplit("\r", 1)[-1].startswith("step 5/12")]
    assert len(kept) == 1, "on a terminal every --log-every-th step stays as a line of the history"


def test_floats_as_typed_and_a_run_as_checkpoint(data, run, tmp):
    cfg = json.load(open(os.path.join(run, "config.json")))
    ckpt = json.load(open(os.path.join(run, "checkpoint", "config.json")))
    assert cfg["beta1"] == 0.9 and cfg["eps"] == 1e-08 and cfg["weight_decay"] == 0.1, \
        f"config.json shows floats as typed (beta1 {cfg['beta1']}, eps {cfg['eps']})"
    assert ckpt["layer_norm_epsilon"] == 1e-05, \
        (f"a checkpoint shows layer_norm_epsilon 1e-05 "
         f"({ckpt['layer_norm_epsilon']})")
    r = gpt2lab("info", run)
    assert r.returncode == 0 and "n_layer" in r.stdout, "info accepts a run directory (its checkpoint)"
    r = gpt2lab("sample", "--model", run, "--prompt-ids", "1 2 3", "--format", "ids", "--max-new-tokens", "4")
    assert r.returncode == 0 and len(r.stdout.split()) == 4, "sample accepts a run directory"
    r = harness.train(data, os.path.join(tmp, "ft"), "--init-from", run, "--steps", "2", "-B", "2", "-T", "16",
                      "--quiet", model=[])
    assert r.returncode == 0, "--init-from accepts a run directory"
    with open(os.path.join(tmp, "model.bin"), "wb") as f:
        f.write(b"\0" * 1024)
    r = gpt2lab("sample", "--model", os.path.join(tmp, "model.bin"), "--prompt-ids", "1")
    assert r.returncode == 1 and "gpt2lab convert --input" in r.stderr, \
        "an llm.c .bin given as a model suggests convert"


def test_eval_equals_the_trainers_evaluation(data, run):
    # The trainer's final evaluation: eval_batches=2 batches of B=2 x T=16 of val, in order.
    final = [row for row in harness.read_metrics(run) if "val_loss" in row][-1]["val_loss"]
    r = gpt2lab("eval", "--model", run, "--data", data, "-B", "2", "-T", "16", "--batches", "2", "--json")
    got = json.loads(r.stdout) if r.returncode == 0 else {}
    assert r.returncode == 0 and abs(got.get("loss", -1) - final) <= 1e-6 * final, \
        f"eval reproduces the trainer's own validation loss ({got.get('loss')} vs {final})"
    assert (got.get("tokens") == 2 * 2 * 16
            and abs(got.get("perplexity", 0) - math.exp(final)) < 1e-3 * math.exp(final)), \
        "eval reports tokens and perplexity"
    r = gpt2lab("eval", "--model", run, "--data", data, "-B", "2", "-T", "16", "--batches", "100000")
    assert r.returncode == 1 and "--batches" in r.stderr, "eval refuses more batches than the split holds"


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """(a BPE tokenizer trained on a small corpus, a run trained on it)."""
    tmp = str(tmp_path_factory.mktemp("text"))
    corpus = os.path.join(tmp, "corpus")
    os.makedirs(corpus)
    for i in range(6):
        with open(os.path.join(corpus, f"d{i}.txt"), "w") as f:
            f.write(TEXT)
    tok, data, run = (os.path.join(tmp, x) for x in ("tok", "text_data", "text_run"))
    gpt2lab("tokenizer", "train", "--input", corpus, "--vocab-size", "280", "--out", tok, check=True)
    gpt2lab("prepare", "--input", corpus, "--tokenizer", tok, "--out", data, "--val-every", "3", check=True)
    harness.train(data, run, "--steps", "30", "--lr", "3e-3", "-B", "2", "-T", "32", "--eval-every", "0",
                  "--eval-batches", "1", "--quiet", model=["--n-layer", "1", "--n-head", "2", "--n-embd", "32",
                                                           "--block-size", "32"], check=True)
    return tok, run


def test_text_eval_and_sample(text_model, tmp):
    tok, run = text_model
    text = os.path.join(tmp, "t.txt")
    with open(text, "w") as f:
        f.write(TEXT)
    r = gpt2lab("eval", "--model", run, "--text", text, "-B", "1", "-T", "32", "--json")
    got = json.loads(r.stdout) if r.returncode == 0 else {}
    assert r.returncode == 0 and 0 < got.get("loss", -1) < math.log(280), \
        f"eval --text scores a text with the model's own tokenizer (loss {got.get('loss')})"
    r = gpt2lab("sample", "--model", run, "--prompt", "The quick", "--temperature", "0", "--max-new-tokens", "24")
    full = r.stdout
    speed = re.search(r"prompt +(\d+) tokens in .* tok/s\)\n.*generation +(\d+) tokens in .* tok/s, ", r.stderr)
    assert r.returncode == 0 and speed is not None and int(speed.group(1)) > 0 and speed.group(2) == "23", \
        f"sample prints prompt and generation speed on stderr: {r.stderr!r}"
    cont = full[len("The quick"):]
    stop = cont.strip()[4:7] if len(cont.strip()) > 8 else None
    assert stop is not None, "greedy sampling continues the prompt"
    r = gpt2lab("sample", "--model", run, "--prompt", "The quick", "--temperature", "0", "--max-new-tokens", "24",
                "--stop", stop, "--quiet")
    want = "The quick" + cont[:cont.find(stop)] + "\n"
    assert r.returncode == 0 and r.stdout == want and r.stderr == "", \
        f"--stop ends the text before the stop string ({stop!r})"


def test_checkpoint_is_self_contained(text_model, tmp):
    tok, run = text_model
    ckpt = os.path.join(run, "checkpoint")
    gen = json.load(open(os.path.join(ckpt, "generation_config.json")))
    assert gen == {"bos_token_id": 279, "eos_token_id": 279}, f"generation_config.json has the model's eot id ({gen})"
    assert (open(os.path.join(ckpt, "vocab.json"), "rb").read() == open(os.path.join(tok, "encoder.json"), "rb").read()
            and open(os.path.join(ckpt, "merges.txt"), "rb").read()
            == open(os.path.join(tok, "vocab.bpe"), "rb").read()), \
        "a checkpoint carries its tokenizer as vocab.json + merges.txt"
    # The tokenizer folder the run recorded is gone: the checkpoint still samples, from another directory.
    os.rename(tok, tok + "-moved")
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere)
    r = gpt2lab("sample", "--model", os.path.abspath(run), "--prompt", "The", "--max-new-tokens", "5", "--quiet",
                cwd=elsewhere)
    assert r.returncode == 0 and r.stdout.startswith("The"), \
        ("a checkpoint samples with its own tokenizer files from "
         f"another directory: {r.stderr.strip()[:150]}")
    os.rename(tok + "-moved", tok)


def test_hf_export_keeps_gpt2s_tokenizer_files(tmp):
    gpt2 = os.path.join(os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data"), "gpt2")
    if not os.path.exists(os.path.join(gpt2, "encoder.json")):
        print("note: GPT-2's tokenizer is not fetched; the byte-for-byte export check did not run", flush=True)
        return
    corpus, data, run, hf = (os.path.join(tmp, x) for x in ("g_corpus", "g_data", "g_run", "g_hf"))
    os.makedirs(corpus)
    with open(os.path.join(corpus, "a.txt"), "w") as f:
        f.write(TEXT * 4)
    with open(os.path.join(corpus, "b.txt"), "w") as f:
        f.write(TEXT * 4)
    gpt2lab("prepare", "--input", corpus, "--tokenizer", "gpt2", "--out", data, "--val-every", "2", check=True)
    harness.train(data, run, "--steps", "1", "-B", "1", "-T", "16", "--eval-batches", "1", "--quiet",
                  model=["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16"], check=True)
    gpt2lab("convert", "--input", run, "--out", hf, "--to", "hf", check=True)
    same = all(open(os.path.join(hf, a), "rb").read() == open(os.path.join(gpt2, b), "rb").read()
               for a, b in (("vocab.json", "encoder.json"), ("merges.txt", "vocab.bpe")))
    assert same, "an exported HF directory's vocab.json and merges.txt are GPT-2's originals byte for byte"
    gen = json.load(open(os.path.join(hf, "generation_config.json")))
    assert gen.get("eos_token_id") == 50256, "a GPT-2-vocabulary model's eos is 50256"


def test_post_ln_export_is_not_called_gpt2(tmp):
    d = os.path.join(tmp, "post")
    gpt2lab("init", "--norm", "post", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "8",
            "--vocab-size", "50", "--out", d, check=True)
    cfg = json.load(open(os.path.join(d, "config.json")))
    assert cfg["model_type"] != "gpt2" and cfg["architectures"] != ["GPT2LMHeadModel"], \
        f"a Post-LN model does not claim to be Hugging Face's GPT-2 ({cfg['model_type']})"
    r = gpt2lab("info", d)
    assert r.returncode == 0, "gpt2lab still loads it"


@pytest.fixture(scope="module")
def again(run, tmp_path_factory):
    """(the exit of `train --config RUN/config.json`, its run folder)."""
    again = str(tmp_path_factory.mktemp("again") / "again")
    r = gpt2lab("train", "--config", os.path.join(run, "config.json"), "--out", again, "--quiet")
    return r, again


def test_toml_config_takes_its_options_flags_override(data, tmp):
    toml = os.path.join(tmp, "small.toml")
    with open(toml, "w") as f:
        f.write("# a training config\nsteps = 4\nlr = 0.002\nbatch-size = 2\nseq-len = 16\neval-batches = 2\n"
                "n-layer = 1\nshuffle = true\n")
    out = os.path.join(tmp, "from_toml")
    r = gpt2lab("train", "--config", toml, "--data", data, "--out", out, "--lr", "0.001", "--quiet",
                "--n-head", "2", "--n-embd", "32", "--block-size", "32", "--vocab-size", "97")
    cfg = json.load(open(os.path.join(out, "config.json"))) if r.returncode == 0 else {}
    assert (r.returncode == 0 and cfg.get("steps") == 4 and cfg.get("lr") == 0.001 and cfg.get("shuffle") is True
            and cfg.get("model", {}).get("n_layer") == 1), \
        f"train --config FILE.toml takes its options, flags override them: {r.stderr.strip()[:150]}"


def test_run_config_json_reruns_the_run_bit_for_bit(run, again):
    r, again = again
    assert (r.returncode == 0
            and harness.stable(harness.read_metrics(again)) == harness.stable(harness.read_metrics(run))), \
        f"train --config RUN/config.json re-runs the run bit for bit: {r.stderr.strip()[:150]}"


def test_unknown_key_in_a_json_config_is_named(data, tmp):
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"steps": 3, "learning_rate": 0.1}')
    r = gpt2lab("train", "--config", bad, "--data", data, "--out", os.path.join(tmp, "bad"))
    assert r.returncode != 0 and "learning_rate" in r.stderr, "an unknown key in a JSON config is named"


def test_prepare_a_single_file(text_model, tmp):
    tok = text_model[0]
    one = os.path.join(tmp, "one.txt")
    with open(one, "w") as f:
        f.write(TEXT * 3)
    r = gpt2lab("prepare", "--input", one, "--tokenizer", tok, "--out", os.path.join(tmp, "p0"))
    assert r.returncode == 1 and "--val-fraction" in r.stderr, "one document with --val-every points to --val-fraction"
    out = os.path.join(tmp, "p1")
    r = gpt2lab("prepare", "--input", one, "--tokenizer", tok, "--out", out, "--val-fraction", "0.1")
    meta = json.load(open(os.path.join(out, "meta.json"))) if r.returncode == 0 else {"tokens": {}}
    tr, va = meta["tokens"].get("train", 0), meta["tokens"].get("val", 0)
    assert r.returncode == 0 and va == round(0.1 * (tr + va)), f"--val-fraction 0.1 holds out 10% ({tr} + {va})"
    out = os.path.join(tmp, "p2")
    r = gpt2lab("prepare", "--input", one, "--tokenizer", tok, "--out", out, "--val-tokens", "100")
    meta = json.load(open(os.path.join(out, "meta.json"))) if r.returncode == 0 else {"tokens": {}}
    assert r.returncode == 0 and meta["tokens"].get("val") == 100, "--val-tokens 100 holds out 100 tokens"


def test_metrics_rows_and_plot(run, again, tmp):
    rows = harness.read_metrics(run)
    kinds = {r.get("kind") for r in rows}
    assert kinds == {"train", "eval", "diag"}, f"every metrics row says its kind ({sorted(map(str, kinds))})"
    train = [r for r in rows if r.get("kind") == "train"]
    assert all(r["tokens"] == (r["step"] + 1) * 2 * 16 for r in train), "train rows count the tokens seen"
    times = [r["elapsed_s"] for r in train]
    assert times == sorted(times) and times[0] >= 0, "train rows carry the run's elapsed seconds, increasing"
    png, html = os.path.join(tmp, "runs.png"), os.path.join(tmp, "runs.html")
    r = gpt2lab("plot", run, again[1], "--out", png)
    assert r.returncode == 0 and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", \
        f"plot draws two runs into a PNG: {r.stderr.strip()[:150]}"
    r = gpt2lab("plot", run, "--out", html)
    assert r.returncode == 0 and "data:image/png;base64," in open(html).read(), \
        "plot --out FILE.html inlines the figure"
    r = gpt2lab("plot", tmp, "--out", png)
    assert r.returncode != 0 and "metrics.jsonl" in r.stderr, "plot on a folder that is not a run says so"


def test_messages_point_to_the_fix(data, tmp):
    run = os.path.join(tmp, "longer")
    harness.train(data, run, "--steps", "4", "-B", "2", "-T", "16", "--eval-batches", "2", "--quiet", check=True)
    r = harness.train(data, run, "--steps", "8", "-B", "2", "-T", "16", "--eval-batches", "2", "--resume")
    assert r.returncode == 0 and "schedule now decays over 8 steps" in r.stderr, \
        "resuming with more --steps says what happens to the cosine schedule"
    texts = os.path.join(tmp, "texts")
    os.makedirs(texts)
    with open(os.path.join(texts, "a.txt"), "w") as f:
        f.write(TEXT)
    r = harness.train(texts, os.path.join(tmp, "t1"), "--steps", "2")
    assert r.returncode == 1 and "gpt2lab prepare --input" in r.stderr, "--data on a folder of text suggests prepare"
    r = harness.train(os.path.join(texts, "a.txt"), os.path.join(tmp, "t2"), "--steps", "2")
    assert r.returncode == 1 and "is a file" in r.stderr, "--data on a file says it is a file"


def test_cli_errors_suggest_the_right_word():
    r = gpt2lab("train", "--out", "x", "--lrr", "3")
    assert r.returncode != 0 and r.stderr.startswith("gpt2lab: error:") and "did you mean --lr" in r.stderr, \
        f"an unknown flag gets the error prefix and a suggestion: {r.stderr.strip()[:120]}"
    r = gpt2lab("tarin")
    assert r.returncode != 0 and "did you mean train" in r.stderr, "a misspelt command gets a suggestion"
