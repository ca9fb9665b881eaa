"""`import gpt2lab` (python/) against independent references and the CLI:
tokenizer ids equal tiktoken's (node, the oracle test's helper) and the C++
tests' goldens; logits, loss and per-layer gradient norms equal the PyTorch
reference model's; generate and stream equal `gpt2lab sample` for the same
seed; a 5-step train from Python writes the CLI's metrics bit for bit; the
library's errors arrive as gpt2lab.Error with its message; Ctrl-C during a
long train finishes the step, saves, and raises KeyboardInterrupt.

Skips when the module was not built (no pybind11, or the
sanitizer build, whose instrumented module an uninstrumented python3 cannot
load); GPT-2's tokenizer files and node/tiktoken are needed by their checks
only, and missing them under CI is a failure.
"""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import harness

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
HAVE_GPT2 = os.path.exists(os.path.join(DATA, "gpt2", "encoder.json"))
TIKTOKEN = os.path.join(DATA, "node_modules", "tiktoken")
TINY = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, vocab_size=97)


def tiny_flags(**fields):
    return [x for k, v in fields.items() for x in ("--" + k.replace("_", "-"), str(v))]


def prerequisite(ok, what):
    """A check that needs fetched data: skipped outside CI, failed in it."""
    if not ok and os.environ.get("CI"):
        pytest.fail(f"{what} missing under CI")
    elif not ok:
        pytest.skip(f"{what} missing: its checks are not run")


def raises(fn, fragment):
    try:
        fn()
    except sys.modules["gpt2lab"].Error as e:
        return fragment in str(e)
    return False


@pytest.fixture(scope="module")
def tok(gpt2lab):
    prerequisite(HAVE_GPT2, "GPT-2's tokenizer files (scripts/fetch_data.sh)")
    return gpt2lab.Tokenizer.load("gpt2")


def test_tokenizer_goldens(tok):
    # Goldens of tests/tokenizer/tokenizer_test.cpp (tiktoken's ids).
    assert tok.encode("Hello world") == [15496, 995], "encode: 'Hello world' as tiktoken"
    assert tok.encode("don't   stop") == [9099, 470, 220, 220, 2245], "encode: contractions and spaces"
    assert (tok.encode("a<|endoftext|>b", allow_special=True) == [64, 50256, 65]
            and 50256 not in tok.encode("a<|endoftext|>b")), \
        "<|endoftext|> is special only when allowed"


def test_tokenizer_numpy_batch_and_decode(tok):
    arr = tok.encode("Hello world", numpy=True)
    assert arr.dtype == np.int32 and arr.tolist() == [15496, 995], "encode(numpy=True): an int32 array"
    texts = ["The economy", "", "naïve café ☕", "line\n\nbreaks  "] * 3
    assert tok.encode_batch(texts, threads=2) == [tok.encode(t) for t in texts], "encode_batch equals encode"
    assert tok.decode(tok.encode(texts[2])) == texts[2], "decode(encode(x)) == x"
    assert tok.decode_bytes([15496, 995]) == b"Hello world" and tok.vocab_size == 50257 and tok.eot_id == 50256, \
        "decode_bytes, vocab_size, eot_id"


def adversarial():
    with open(os.path.join(harness.REFERENCE, "tokenizer_adversarial.txt"), "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def test_tokenizer_equals_the_cli_on_adversarial_text(tok):
    valid = adversarial()
    ours = tok.encode(valid)
    cli = [int(x) for x in harness.run("tokenize", input=valid.encode(), text=False, check=True).stdout.split()]
    assert ours == cli, f"adversarial text: the CLI's ids ({len(ours)} tokens)"


def test_tokenizer_equals_tiktoken_on_adversarial_text(tok, tmp):
    valid = adversarial()
    ours = tok.encode(valid)
    prerequisite(shutil.which("node") and os.path.exists(TIKTOKEN), "node + tiktoken")
    path = os.path.join(tmp, "adversarial.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(valid)
    r = harness.command(["node", os.path.join(harness.REFERENCE, "tiktoken_encode.js"), TIKTOKEN, "gpt2",
                         "ordinary", path], check=True)
    assert ours == [int(x) for x in r.stdout.split()], "adversarial text: tiktoken's ids"


@pytest.fixture(scope="module")
def checkpoint(gpt2lab, tmp_path_factory):
    """A Post-LN xavier checkpoint written by `gpt2lab init --seed 3`."""
    d = str(tmp_path_factory.mktemp("m") / "m")
    harness.run("init", *tiny_flags(**TINY, norm="post", init="xavier"), "--seed", "3", "--out", d, check=True)
    return d


def test_model_load_reads_the_config(gpt2lab, checkpoint):
    m = gpt2lab.Model.load(checkpoint)
    assert m.config["n_layer"] == 2 and m.config["norm"] == "post", "config: the checkpoint's"


def test_model_init_writes_the_cli_init_weights(gpt2lab, checkpoint, tmp):
    d = checkpoint
    fresh = gpt2lab.Model.init(**TINY, norm="post", init="xavier", seed=3)
    fresh.save(os.path.join(tmp, "fresh"))
    same = [open(os.path.join(x, "model.safetensors"), "rb").read() for x in (d, os.path.join(tmp, "fresh"))]
    assert same[0] == same[1], "Model.init + save writes `gpt2lab init`'s weights byte for byte"


@pytest.fixture(scope="module")
def reference(gpt2lab, checkpoint):
    """(the model, a batch of ids and targets, the PyTorch model, its logits and loss)."""
    import torch
    from gpt2_torch import load_checkpoint
    d = checkpoint
    m = gpt2lab.Model.load(d)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 97, size=(3, 16))
    targets = rng.integers(0, 97, size=(3, 16))
    targets[0, :4] = -1
    ref = load_checkpoint(d)
    ref_logits, ref_loss = ref.forward(torch.tensor(ids), torch.tensor(targets))
    return m, ids, targets, ref, ref_logits, ref_loss


def test_forward_equals_pytorch(reference):
    from gpt2_torch import rel_err
    m, ids, targets, ref, ref_logits, ref_loss = reference
    logits = m.forward(ids)
    assert logits.shape == (3, 16, 97) and logits.dtype == np.float32, f"forward: (B, T, V) float32 {logits.shape}"
    err = rel_err(logits, ref_logits.detach().numpy())
    assert err < 1e-5, f"forward: logits equal PyTorch's (rel err {err:.1e})"
    assert m.forward(ids[1]).shape == (16, 97) and np.array_equal(m.forward(ids[1]), logits[1]), \
        "forward: a 1-D input is one row, same logits"


def test_loss_equals_pytorch(reference):
    m, ids, targets, ref, ref_logits, ref_loss = reference
    loss = m.loss(ids, targets)
    assert abs(loss - ref_loss.item()) < 1e-5 * ref_loss.item(), \
        f"loss {loss:.6f} equals PyTorch's {ref_loss.item():.6f} (-1 skipped)"


def test_grad_norms_equal_pytorch(reference):
    from gpt2_torch import rel_err
    m, ids, targets, ref, ref_logits, ref_loss = reference
    loss = m.loss(ids, targets)
    g = m.grad_norms(ids, targets)
    ref_loss.backward()
    for name in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
        want = [ref.w(f"h.{i}.{name}.weight").grad.norm().item() for i in range(2)]
        assert g[name].shape == (2,) and rel_err(g[name], want) < 1e-4, f"grad_norms {name}: PyTorch's {want}"
    assert abs(g["loss"] - loss) < 1e-6 and g["residual_rms"].shape == (3,), "grad_norms: loss, residual_rms"


GEN_ARGS = dict(max_new_tokens=12, temperature=0.8, top_k=20, top_p=0.9, seed=7)


@pytest.fixture(scope="module")
def generated(gpt2lab, checkpoint):
    """(the model, generate's tokens with GEN_ARGS)."""
    m = gpt2lab.Model.load(checkpoint)
    return m, m.generate([5, 6, 7], **GEN_ARGS)


def test_generate_equals_sample(checkpoint, generated):
    d = checkpoint
    ids = generated[1]
    r = harness.run("sample", "--model", d, "--prompt-ids", "5 6 7", "--format", "ids", "--quiet",
                    "--max-new-tokens", "12", "--temperature", "0.8", "--top-k", "20", "--top-p", "0.9",
                    "--seed", "7", check=True)
    assert ids == [int(x) for x in r.stdout.split()] and len(ids) == 12, f"generate equals `gpt2lab sample`: {ids}"


def test_stream_yields_generates_tokens(generated):
    m, ids = generated
    assert list(m.stream([5, 6, 7], **GEN_ARGS)) == ids, "stream yields generate's tokens"


def test_generate_takes_a_numpy_prompt(generated):
    m, ids = generated
    assert m.generate(np.array([5, 6, 7]), **GEN_ARGS) == ids, "a numpy prompt too"


def test_generation_stops_at_a_full_context(generated):
    m = generated[0]
    assert len(m.generate([1] * 30, max_new_tokens=10, seed=1)) == 3, "generation stops at a full context (32)"


def test_bad_sampling_options_raise(generated):
    m = generated[0]
    assert raises(lambda: m.generate([1], max_new_tokens=1, top_p=0), "top_p"), "bad sampling options: Error"


def test_text_prompt_generates_the_clis_tokens(gpt2lab, tok, tmp):
    d = os.path.join(tmp, "v")
    harness.run("init", *tiny_flags(n_layer=1, n_head=2, n_embd=16, block_size=32, vocab_size=50257), "--out", d,
                check=True)
    m = gpt2lab.Model.load(d)
    r = harness.run("sample", "--model", d, "--prompt", "The economy", "--format", "ids", "--quiet",
                    "--max-new-tokens", "8", "--seed", "3", check=True)
    want = [int(x) for x in r.stdout.split()]
    ids = m.tokenizer.encode("The economy", allow_special=True)
    assert m.generate(ids, max_new_tokens=8, seed=3) == want, "a text prompt: the CLI's tokens"
    assert m.generate("The economy", max_new_tokens=8, seed=3) == m.tokenizer.decode(want), \
        "generate(str) returns the new text"


TRAIN_FLAGS = dict(batch_size=2, seq_len=16, steps=5, lr=3e-3, warmup=2, eval_every=2, eval_batches=2,
                   diag_every=2, seed=11, threads=2)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    import shards
    return shards.make_dataset(str(tmp_path_factory.mktemp("data")), 97, n_train=4000, n_val=1000)


@pytest.fixture(scope="module")
def trained(gpt2lab, data, tmp_path_factory):
    """(train's result, its progress events, the CLI's run folder, the Python run's folder)."""
    tmp = str(tmp_path_factory.mktemp("train"))
    flags = TRAIN_FLAGS
    cli_out, py_out = os.path.join(tmp, "cli"), os.path.join(tmp, "py")
    harness.run("train", *tiny_flags(**TINY), *tiny_flags(**flags), "--data", data, "--out", cli_out, "--quiet",
                check=True)
    events = []
    res = gpt2lab.train(**TINY, **flags, data=data, out=py_out, progress=events.append)
    return res, events, cli_out, py_out


def test_train_completes(trained):
    res = trained[0]
    assert res["status"] == "completed" and res["steps_done"] == 5, f"train: completed {res}"


def test_train_reports_progress_every_step(trained):
    events = trained[1]
    assert [e["step"] for e in events if e["kind"] == "step"] == [1, 2, 3, 4, 5], "progress: every step"


def test_train_writes_the_clis_metrics(trained):
    _, _, cli_out, py_out = trained
    cli, py = harness.read_metrics(cli_out), harness.read_metrics(py_out)
    assert len(py) > 5 and harness.stable(py) == harness.stable(cli), \
        f"train from Python: the CLI's metrics bit for bit ({len(py)} rows)"


def test_read_metrics_gives_the_rows(gpt2lab, trained):
    py_out = trained[3]
    rows = gpt2lab.read_metrics(py_out, pandas=False)
    assert rows == harness.read_metrics(py_out), "read_metrics: the rows of metrics.jsonl"


def test_train_does_not_replace_a_run(gpt2lab, data, trained):
    py_out = trained[3]
    assert raises(lambda: gpt2lab.train(**TRAIN_FLAGS, data=data, out=py_out), "--force"), \
        "train refuses to replace a run, as the CLI does"


def test_errors_arrive_as_gpt2lab_error(gpt2lab, tmp):
    assert raises(lambda: gpt2lab.Model.load(os.path.join(tmp, "nothing")), "not a directory"), \
        "Model.load of a missing folder: gpt2lab.Error"
    assert issubclass(gpt2lab.Error, RuntimeError), "gpt2lab.Error is a RuntimeError"
    m = gpt2lab.Model.init(**TINY)
    assert raises(lambda: m.forward([[1, 2, 97]]), "97"), "forward: an id outside the vocabulary"
    assert raises(lambda: m.forward([1] * 33), "block_size"), "forward: longer than the context"
    assert raises(lambda: m.forward([1.5]), "token ids"), "forward: floats are not ids"
    assert raises(lambda: gpt2lab.Model.init(n_layer=2, norm="middle"), "--norm"), "Model.init: a bad choice"
    assert raises(lambda: gpt2lab.train(bogus=1), "unknown training option 'bogus'"), "train: an unknown option"
    assert raises(lambda: gpt2lab.train(out=os.path.join(tmp, "r")), "--data is required"), "train: no data"
    assert raises(lambda: gpt2lab.train(lr=-1), "--lr"), "train: a value out of range names the flag"
    assert raises(lambda: gpt2lab.read_metrics(tmp), "metrics.jsonl"), "read_metrics of a folder with no run"


def test_decode_of_an_id_out_of_range_raises(tok):
    assert raises(lambda: tok.decode([50257]), "outside the vocabulary"), "decode: an id out of range"


# A long run in a child python; SIGINT once it is under way.
CTRL_C = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import gpt2lab
    def progress(e):
        if e["kind"] == "step" and e["step"] == 3:
            print("running", flush=True)
    gpt2lab.train(n_layer=2, n_head=2, n_embd=32, block_size=32, vocab_size=97, data=sys.argv[2], out=sys.argv[3],
                  batch_size=2, seq_len=16, steps=100000, save_every=0, eval_every=0, threads=2, progress=progress)
""")


def test_ctrl_c_finishes_the_step_saves_and_raises(gpt2lab, data, tmp):
    out = os.path.join(tmp, "interrupted")
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, MODULE_DIR, data, out], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    result = os.path.join(out, "result.json")
    status = open(result).read() if os.path.exists(result) else ""
    assert (line == "running\n" and "KeyboardInterrupt" in err and '"interrupted"' in status
            and harness.checkpoint_problems(out) == []), \
        f"Ctrl-C: the step finishes, a checkpoint is saved, KeyboardInterrupt raised (exit {p.returncode})"
