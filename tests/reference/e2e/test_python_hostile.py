"""`import gpt2lab` against hostile arguments: every entry point validates as
its CLI twin does and fails with gpt2lab.Error naming the argument, never a
crash, never pybind11's "Unable to cast" or TypeError, never a value that
wraps; Model.save stages the weights and the tokenizer together, so a
failed save leaves the old checkpoint byte for byte and no new folder.

Cases: encode_batch(threads=100000) crashed the process (run in a child
here, so a crash fails the check instead of ending the test) and
threads=-1 meant all cores; Model.save(overwrite=True, tokenizer=BAD)
destroyed the old checkpoint; lone surrogates, seeds of -1 or 2**64 and
ints beyond 64 bits raised pybind11's cast errors; a folder locked by this
same process was blamed on "another gpt2lab process".

Skips when the module was not built.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import harness

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
gpt2lab = None  # the module, once the fixture below has imported it


@pytest.fixture(scope="module", autouse=True)
def module(request):
    """Makes the module (conftest's fixture: a skip where it is not built)
    this file's global `gpt2lab`, as the helpers and cases use it."""
    global gpt2lab
    gpt2lab = request.getfixturevalue("gpt2lab")


TINY = dict(n_layer=1, n_head=2, n_embd=16, block_size=32)
VOCAB = 300  # the trained tokenizer's size below


def refused(fn, fragments, what):
    """fn() raises gpt2lab.Error whose message holds every fragment."""
    try:
        fn()
    except gpt2lab.Error as e:
        missing = [f for f in fragments if f not in str(e)]
        assert not missing, f"{what}: gpt2lab.Error with {missing or fragments} ({e})"
        return
    except BaseException as e:  # noqa: B036 - the wrong kind of failure is the finding
        pytest.fail(f"{what}: expected gpt2lab.Error, got {type(e).__name__}: {e}")
    pytest.fail(f"{what}: accepted, expected gpt2lab.Error")


def gives(fn, want, what):
    """fn() returns want (an exception is a failed check, not a crash)."""
    try:
        got = fn()
    except BaseException as e:  # noqa: B036
        pytest.fail(f"{what}: raised {type(e).__name__}: {str(e)[:300]}")
    assert got == want, f"{what} ({got!r:.200})"


def label(v):
    """A value as a check names it: a huge int by its size."""
    return f"<{v.bit_length()}-bit int>" if isinstance(v, int) and v.bit_length() > 64 else repr(v)


def child(code):
    """Runs code in a child python that has the module; returns (exit, out)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), MODULE_DIR], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, OMP_NUM_THREADS="2"))
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    """A BPE tokenizer of VOCAB tokens trained by `gpt2lab tokenizer train`."""
    tmp = str(tmp_path_factory.mktemp("tok"))
    text = os.path.join(tmp, "corpus.txt")
    rng = np.random.default_rng(1)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(2, 9)))
             for _ in range(3000)]
    with open(text, "w", encoding="utf-8") as f:
        f.write("the quick brown fox " + " ".join(words))
    out = os.path.join(tmp, "tok")
    harness.run("tokenizer", "train", "--input", text, "--vocab-size", str(VOCAB), "--out", out, check=True)
    return out


# ---------------------------------------------------------------- threads

THREADS = """
    import sys
    sys.path.insert(0, sys.argv[1])
    import gpt2lab
    tok = gpt2lab.Tokenizer.load(%r)
    for n in %r:
        try:
            tok.encode_batch(["one text", "another"], threads=n)
            print("accepted", n, flush=True)
        except gpt2lab.Error as e:
            print("Error", n, e, flush=True)
        except BaseException as e:
            print(type(e).__name__, n, e, flush=True)
    print("same", tok.encode_batch(["one text", "another"], threads=0) == [tok.encode("one text"),
          tok.encode("another")] == tok.encode_batch(["one text", "another"], threads=2), flush=True)
"""


def test_encode_batch_hostile_threads(tok_dir):
    bad = [100000, 4097, -1, 2**64, True, 1.5, "2"]
    rc, out = child(THREADS % (tok_dir, bad))
    assert rc == 0, \
        f"encode_batch with hostile threads: the process lives (exit {rc})" + ("" if rc == 0 else "\n" + out[-2000:])
    lines = out.splitlines()
    for n in bad:
        line = next((x for x in lines if x.split(" ")[1:2] == [str(n)]), "")
        frag = "out of range: it must be an integer in [0, 4096]" if isinstance(n, int) and not isinstance(
            n, bool) else "must be an integer in [0, 4096]"
        assert line.startswith("Error ") and "threads" in line and frag in line, \
            f"encode_batch(threads={n!r}): gpt2lab.Error naming threads and [0, 4096] ({line})"
    assert "same True" in lines, "encode_batch: threads=0 (all cores) and 2 give encode()'s ids"


# ---------------------------------------------------------------- save

def snapshot(d):
    return {name: open(os.path.join(d, name), "rb").read() for name in sorted(os.listdir(d))}


def test_save_stages_weights_and_tokenizer(tmp, tok_dir):
    m = gpt2lab.Model.init(**TINY, vocab_size=VOCAB, seed=5)
    parent = os.path.join(tmp, "saves")
    os.makedirs(parent)
    old = os.path.join(parent, "ckpt")
    m.save(old, tokenizer=tok_dir)
    before = snapshot(old)
    assert {"config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json"} <= set(before), \
        f"save(tokenizer=DIR): the tokenizer's files go with the weights ({sorted(before)})"
    assert gpt2lab.Model.load(old).tokenizer.encode("the fox") == gpt2lab.Tokenizer.load(tok_dir).encode("the fox"), \
        "the saved checkpoint carries its tokenizer"
    other = gpt2lab.Model.init(**TINY, vocab_size=VOCAB, seed=6)
    listing = sorted(os.listdir(parent))
    refused(lambda: other.save(old, overwrite=True, tokenizer=os.path.join(tmp, "no-such-tokenizer")),
            ["no-such-tokenizer"], "save(overwrite=True, tokenizer=missing)")
    assert snapshot(old) == before, "a failed save(overwrite=True) leaves the old checkpoint byte for byte"
    assert sorted(os.listdir(parent)) == listing, f"no staging folder is left beside it ({os.listdir(parent)})"
    rc, out = child(f"""
        import sys
        sys.path.insert(0, sys.argv[1])
        import gpt2lab
        print(gpt2lab.Model.load({old!r}).generate("the", max_new_tokens=3, seed=1) is not None)
    """)
    assert rc == 0 and "True" in out, f"the old checkpoint still samples with its tokenizer (exit {rc}) {out[-500:]}"

    refused(lambda: other.save(old, tokenizer=tok_dir), ["already holds a model checkpoint", "overwrite=True"],
            "save over a checkpoint without overwrite=True names the keyword, not --force")
    assert snapshot(old) == before, "... and the old checkpoint is untouched"
    wrong = gpt2lab.Model.init(**TINY, vocab_size=VOCAB + 1, seed=6)
    refused(lambda: wrong.save(old, overwrite=True, tokenizer=tok_dir), ["has 300 tokens", "vocab_size is 301"],
            "save with a tokenizer of another size than the model's vocabulary")
    assert snapshot(old) == before, "... and the old checkpoint is untouched"

    new = os.path.join(parent, "new")
    refused(lambda: other.save(new, tokenizer=os.path.join(tmp, "no-such-tokenizer")), ["no-such-tokenizer"],
            "save to a new folder with a missing tokenizer")
    assert not os.path.exists(new) and sorted(os.listdir(parent)) == listing, \
        f"a failed save to a new folder leaves no folder and no staging ({sorted(os.listdir(parent))})"
    refused(lambda: other.save(new, overwrite="yes"), ["overwrite must be True or False"], "save(overwrite='yes')")
    refused(lambda: other.save(new, tokenizer=5), ["tokenizer must be a path"], "save(tokenizer=5)")
    assert not os.path.exists(new), "a refused save writes nothing"


# ---------------------------------------------------------------- text

def test_lone_surrogates_are_refused(tmp, tok_dir):
    tok = gpt2lab.Tokenizer.load(tok_dir)
    m = gpt2lab.Model.init(**TINY, vocab_size=VOCAB)
    m.save(os.path.join(tmp, "m"), tokenizer=tok_dir)
    m = gpt2lab.Model.load(os.path.join(tmp, "m"))
    bad = "ab\udc80c"
    refused(lambda: tok.encode(bad), ["encode: text", "lone surrogate (U+DC80 at index 2)"], "encode(lone surrogate)")
    refused(lambda: tok.encode_batch(["ok", "\ud800"]), ["texts[1]", "lone surrogate"],
            "encode_batch([..., lone surrogate])")
    assert tok.encode(b"ab\x80c") == tok.encode_batch([b"ab\x80c"])[0], "bytes that are not UTF-8 are still text"
    refused(lambda: m.generate(bad, max_new_tokens=1), ["prompt", "lone surrogate"], "generate(lone surrogate)")
    refused(lambda: m.stream(bad, max_new_tokens=1), ["prompt", "lone surrogate"], "stream(lone surrogate)")
    refused(lambda: gpt2lab.Tokenizer.load(bad), ["Tokenizer.load: spec", "lone surrogate"],
            "Tokenizer.load(lone surrogate)")
    refused(lambda: gpt2lab.Model.load(os.path.join(tmp, bad)), ["Model.load: dir", "lone surrogate"],
            "Model.load(lone surrogate)")
    refused(lambda: m.save(os.path.join(tmp, bad)), ["Model.save: dir", "lone surrogate"], "save(lone surrogate)")
    refused(lambda: gpt2lab.train(data=bad, out=os.path.join(tmp, "r")), ["data", "lone surrogate"],
            "train(data=lone surrogate)")
    refused(lambda: gpt2lab.train(**{bad: 1}), ["train: a keyword", "lone surrogate"], "train(**{surrogate: 1})")
    refused(lambda: gpt2lab.Model.init(**{bad: 1}), ["Model.init: a keyword", "lone surrogate"],
            "Model.init(**{surrogate: 1})")
    refused(lambda: gpt2lab.Model.init(norm=bad), ["norm", "lone surrogate"], "Model.init(norm=surrogate)")
    refused(lambda: gpt2lab.read_metrics(bad), ["read_metrics: run", "lone surrogate"], "read_metrics(surrogate)")
    refused(lambda: tok.decode([1], errors=bad), ["errors", "lone surrogate"], "decode(errors=surrogate)")
    refused(lambda: gpt2lab.train(progress=bad), ["progress must be a callable"], "train(progress=surrogate)")
    refused(lambda: m.generate([1], weights=bad), ["weights", "lone surrogate"], "generate(weights=surrogate)")


def test_paths_with_nul_are_refused(tmp, tok_dir):
    m = gpt2lab.Model.init(**TINY, vocab_size=VOCAB)
    target = os.path.join(tmp, "nul")
    refused(lambda: m.save(target + "\0junk"), ["Model.save: dir", "NUL character (at byte"], "save(path with NUL)")
    assert not os.path.exists(target), "a path with NUL is not cut at the NUL and written"
    refused(lambda: gpt2lab.Model.load(tmp + "/m\0x"), ["NUL"], "Model.load(path with NUL)")
    refused(lambda: gpt2lab.Tokenizer.load(tok_dir + "\0x"), ["NUL"], "Tokenizer.load(path with NUL)")
    refused(lambda: gpt2lab.train(data=tmp + "\0x", out=target), ["data", "NUL"], "train(data with NUL)")
    refused(lambda: m.save(target, tokenizer=tok_dir + "\0x"), ["tokenizer", "NUL"], "save(tokenizer with NUL)")
    assert not os.path.exists(target), "... nothing written"
    tok = gpt2lab.Tokenizer.load(tok_dir)
    assert tok.decode(tok.encode("a\0b")) == "a\0b", "NUL in text (not a path) is text"


# ---------------------------------------------------------------- numbers

def test_seeds_and_big_integers(tmp):
    for seed in (-1, 2**64, 2**200):
        refused(lambda: gpt2lab.Model.init(**TINY, vocab_size=97, seed=seed),
                ["seed", "out of range", "[0, 18446744073709551615]"],
                f"Model.init(seed={label(seed)})")
    gives(lambda: gpt2lab.Model.init(**TINY, vocab_size=97, seed=2**64 - 1).config["n_layer"], 1,
          "Model.init(seed=2**64-1): the largest seed")
    m = gpt2lab.Model.init(**TINY, vocab_size=97)
    refused(lambda: gpt2lab.Model.init(**TINY, vocab_size=97, seed=1.0), ["seed must be an integer"],
            "Model.init(seed=1.0)")
    refused(lambda: gpt2lab.Model.init(**TINY, vocab_size=97, seed=True), ["seed must be an integer"],
            "Model.init(seed=True)")
    for seed in (-1, 2**64):
        refused(lambda: m.generate([1], max_new_tokens=1, seed=seed), ["seed", "out of range"],
                f"generate(seed={seed})")
    gives(lambda: len(m.generate([1], max_new_tokens=2, seed=2**64 - 1)), 2, "generate(seed=2**64-1): the largest seed")
    gives(lambda: len(m.generate([1], max_new_tokens=2, seed=np.uint64(7))), 2, "generate(seed=numpy.uint64)")
    refused(lambda: gpt2lab.train(seed=2**64, out=os.path.join(tmp, "r")),
            ["seed = 18446744073709551616 is out of range", "[0, 18446744073709551615]"],
            "train(seed=2**64)")
    refused(lambda: gpt2lab.train(seed=-1, out=os.path.join(tmp, "r")), ["--seed"], "train(seed=-1)")
    refused(lambda: gpt2lab.train(steps=2**64), ["steps = 18446744073709551616 is out of range"],
            "train(steps=2**64)")
    refused(lambda: gpt2lab.train(steps=2**63 + 5), ["--steps = 9223372036854775813 is out of range"],
            "train(steps=2**63+5): not wrapped")
    refused(lambda: gpt2lab.train(steps=2**5000), ["steps", "out of range"], "train(steps=2**5000)")
    refused(lambda: gpt2lab.train(lr=float("nan")), ["--lr"], "train(lr=nan)")
    refused(lambda: gpt2lab.train(threads=100000), ["--threads", "[0, 4096]"], "train(threads=100000)")
    refused(lambda: gpt2lab.Model.init(n_layer=2**64), ["n_layer = 18446744073709551616 is out of range"],
            "Model.init(n_layer=2**64)")
    refused(lambda: gpt2lab.Model.init(n_layer=1.5), ["--n-layer", "integer"], "Model.init(n_layer=1.5)")


def test_sampling_arguments(tok_dir):
    m = gpt2lab.Model.init(**TINY, vocab_size=97)
    cases = [
        ("max_new_tokens", -1, "[0, 16777216]"), ("max_new_tokens", 2**24 + 1, "[0, 16777216]"),
        ("max_new_tokens", 2**64, "[0, 16777216]"), ("max_new_tokens", 2.0, "must be an integer"),
        ("temperature", float("nan"), "finite number >= 0 and <= 1e+06"), ("temperature", float("inf"), "finite"),
        ("temperature", -0.1, ">= 0"), ("temperature", 1e7, "<= 1e+06"), ("temperature", 2**2000, "out of range"),
        ("temperature", "hot", "must be a finite number"),
        ("top_k", -1, "[0, 16777216]"), ("top_k", 2**40, "[0, 16777216]"),
        ("top_p", 0, ">= 1e-06 and <= 1"), ("top_p", 1e-7, ">= 1e-06"), ("top_p", 1.5, "<= 1"),
        ("top_p", float("nan"), "finite"),
        ("repetition_penalty", 0, ">= 0.001 and <= 1000"), ("repetition_penalty", 1e4, "<= 1000"),
        ("repetition_penalty", float("-inf"), "finite"),
        ("stop_at_eot", "yes", "stop_at_eot must be True or False"), ("stop_at_eot", None, "True or False"),
        ("weights", None, "weights must be a str"),
    ]
    for name, value, frag in cases:
        for call in ("generate", "stream"):
            refused(lambda: getattr(m, call)([1], **{name: value}), [name, frag], f"{call}({name}={label(value)})")
    refused(lambda: m.generate([1], weights="f64"), ["weight type 'f64' is not one of f32, bf16, int8"],
            "generate(weights='f64')")
    gives(lambda: len(m.generate([1], max_new_tokens=3, temperature=0, top_k=2**24, top_p=1e-6,
                                 repetition_penalty=1e3, seed=np.int64(3))), 3, "the CLI's extremes are accepted")
    gives(lambda: m.generate([1], max_new_tokens=np.int32(2), seed=1), m.generate([1], max_new_tokens=2, seed=1),
          "numpy integers are integers")


def test_token_ids():
    m = gpt2lab.Model.init(**TINY, vocab_size=97)
    big = np.array([[1, 2, 3]], dtype=np.uint64)
    big[0, 2] = 2**64 - 1
    refused(lambda: m.loss(np.array([[1, 2, 3]]), big), ["id 18446744073709551615 at index 2", "not a token id"],
            "loss: a uint64 target of 2**64-1 is not the skipped -1")
    refused(lambda: m.forward(big), ["not a token id"], "forward: a uint64 id of 2**64-1")
    refused(lambda: m.forward(np.array([-1, 2])), ["token id -1", "outside the vocabulary"], "forward: id -1")
    refused(lambda: m.forward(np.zeros((3, 0), dtype=np.int64)), ["no tokens"], "forward: rows of no ids")
    refused(lambda: m.forward(np.zeros((0, 4), dtype=np.int64)), ["no tokens"], "forward: no rows")
    refused(lambda: m.forward(np.zeros((2, 2, 2), dtype=np.int64)), ["dimensions"], "forward: 3-D ids")
    refused(lambda: m.forward(None), ["token ids"], "forward(None)")
    refused(lambda: m.forward("abc"), ["token ids"], "forward(str)")
    refused(lambda: m.forward([[1, 2], [3]]), ["token ids"], "forward: ragged rows")
    refused(lambda: m.forward([2**70]), ["token ids"], "forward: an id beyond 64 bits")
    refused(lambda: m.forward(np.array([True, False])), ["token ids"], "forward: bools are not ids")
    refused(lambda: m.loss([[1, 2]], [[1, 2, 3]]), ["shape"], "loss: targets of another shape")
    refused(lambda: m.grad_norms([[1, 2]], [[1, 200]]), ["target id 200"], "grad_norms: a target out of range")
    refused(lambda: m.generate([], max_new_tokens=1), ["at least one token"], "generate: an empty prompt")
    refused(lambda: m.generate([97], max_new_tokens=1), ["outside the model's vocabulary"], "generate: id 97")
    refused(lambda: m.generate([-1], max_new_tokens=1), ["outside the model's vocabulary"], "generate: id -1")
    refused(lambda: m.generate(None, max_new_tokens=1), ["token ids"], "generate(None)")


def test_tokenizer_arguments(tok_dir):
    tok = gpt2lab.Tokenizer.load(tok_dir)
    refused(lambda: tok.encode_batch("one text"), ["a list of texts", "got str"], "encode_batch(a str)")
    refused(lambda: tok.encode_batch(5), ["a list of texts"], "encode_batch(5)")
    refused(lambda: tok.encode_batch(["a", 1]), ["texts[1]", "got int"], "encode_batch([str, int])")
    refused(lambda: tok.encode(None), ["encode: text", "got NoneType"], "encode(None)")
    refused(lambda: tok.encode("a", allow_special="no"), ["allow_special must be True or False"],
            "encode(allow_special='no')")
    refused(lambda: tok.encode("a", numpy=1), ["numpy must be True or False"], "encode(numpy=1)")
    refused(lambda: tok.decode([1], errors="bogus"), ["not a codec error handler"], "decode(errors='bogus')")
    refused(lambda: tok.decode([VOCAB]), ["outside the vocabulary"], "decode: an id out of range")
    refused(lambda: tok.decode_bytes([-1]), ["outside the vocabulary"], "decode_bytes: id -1")
    refused(lambda: gpt2lab.Tokenizer.load(None), ["spec must be a path"], "Tokenizer.load(None)")
    gives(lambda: tok.encode_batch(iter(["a b", "c"])), [tok.encode("a b"), tok.encode("c")],
          "encode_batch takes any iterable of texts")


def test_read_metrics_arguments(tmp):
    refused(lambda: gpt2lab.read_metrics(tmp, pandas="yes"), ["pandas must be True or False"],
            "read_metrics(pandas='yes')")
    refused(lambda: gpt2lab.read_metrics(None), ["run must be a path"], "read_metrics(None)")


# ---------------------------------------------------------------- locks

def test_lock_held_by_this_process(tmp):
    import shards

    data = shards.make_dataset(os.path.join(tmp, "data"), 97, n_train=4000, n_val=1000)
    out = os.path.join(tmp, "run")
    flags = dict(n_layer=1, n_head=2, n_embd=16, block_size=16, batch_size=2, seq_len=8, steps=3, lr=1e-3,
                 warmup=0, eval_every=0, threads=2, data=data, out=out)
    seen = []

    def progress(e):
        if e["kind"] == "step" and not seen:
            try:
                gpt2lab.train(**flags, resume=True)
                seen.append("accepted")
            except gpt2lab.Error as err:
                seen.append(str(err))

    gpt2lab.train(**flags, progress=progress)
    msg = seen[0] if seen else ""
    assert f"already in use by this process (pid {os.getpid()})" in msg and "another gpt2lab process" not in msg, \
        f"a folder this process holds is said to be held by this process ({msg})"
