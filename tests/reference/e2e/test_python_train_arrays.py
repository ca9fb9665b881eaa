"""gpt2lab.train(train_tokens=..., val_tokens=...) trains from numpy arrays
with the CLI's trainer and options: the same tokens written as shard files
and trained by `gpt2lab train` give the same losses, bit for bit, for the
same seed. The arrays become a dataset folder beside the run (OUT.data) or
in data=, written once, so resume=True finds the same data; other data in
that folder is refused. Skips (77) where the module is not built.
"""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
import shards  # noqa: E402

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
MODEL = dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=97)
RUN = dict(batch_size=4, seq_len=16, steps=6, lr=1e-3, warmup=2, eval_every=3, eval_batches=2, seed=5, threads=2)


@pytest.fixture(scope="module")
def gpt2lab():
    if not MODULE_DIR:
        pytest.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    sys.path.insert(0, MODULE_DIR)
    import gpt2lab as module
    return module


def losses(run):
    rows = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    return [(r["kind"], r["step"], r.get("loss", r.get("val_loss"))) for r in rows if r["kind"] in ("train", "eval")]


def flags(d):
    return [x for k, v in d.items() for x in ("--" + k.replace("_", "-"), str(v))]


def test_arrays_train_as_the_cli_trains_their_shards(gpt2lab, tmp_path):
    train = shards.synthetic_stream(4000, 97, seed=1)
    val = shards.synthetic_stream(600, 97, seed=2).astype(np.int32)
    data = tmp_path / "shards"
    data.mkdir()
    shards.write_shard(data / "train.bin", train)
    shards.write_shard(data / "val.bin", val)
    cli_run = str(tmp_path / "cli")
    harness.run("train", "--data", str(data), "--out", cli_run, "--quiet", *flags(MODEL), *flags(RUN), check=True)

    py_run = str(tmp_path / "py")
    r = gpt2lab.train(train_tokens=train, val_tokens=val, out=py_run, **MODEL, **RUN)
    assert r["status"] == "completed" and r["steps_done"] == RUN["steps"]
    ours, theirs = losses(py_run), losses(cli_run)
    # 6 steps and evals at steps 0, 3 and 6; exact floats: bit for bit.
    assert len(ours) == RUN["steps"] + 3 and ours == theirs
    # The arrays' dataset: OUT.data, the CLI's shard bytes.
    for split in ("train.bin", "val.bin"):
        assert (tmp_path / "py.data" / split).read_bytes() == (data / split).read_bytes()
    assert sorted(os.listdir(tmp_path / "py.data")) == ["train.bin", "val.bin"]

    # The same arrays again: resume finds its data; a longer run continues.
    r = gpt2lab.train(train_tokens=train, val_tokens=val, out=py_run, resume=True, **MODEL, **{**RUN, "steps": 8})
    assert r["status"] == "completed" and r["steps_done"] == 8


def test_array_errors(gpt2lab, tmp_path):
    train = shards.synthetic_stream(2000, 97, seed=1)
    out = str(tmp_path / "run")
    short = dict(batch_size=4, seq_len=16, steps=2, lr=1e-3, warmup=1, seed=5, threads=2)
    gpt2lab.train(train_tokens=train, out=out, **MODEL, **short)
    # Other tokens into the same data folder: refused, the folder kept.
    with pytest.raises(gpt2lab.Error, match="already holds other files than these tokens' shards"):
        gpt2lab.train(train_tokens=train[::-1].copy(), out=str(tmp_path / "run2"), data=out + ".data", **MODEL, **short)
    assert sorted(os.listdir(out + ".data")) == ["train.bin"]
    with pytest.raises(gpt2lab.Error, match="train_tokens: token 70000 at index 1 does not fit a shard"):
        gpt2lab.train(train_tokens=np.array([1, 70000, 3]), out=str(tmp_path / "r3"), **MODEL, **short)
    with pytest.raises(gpt2lab.Error, match="train_tokens: no tokens"):
        gpt2lab.train(train_tokens=np.array([], dtype=np.int64), out=str(tmp_path / "r4"), **MODEL, **short)
    with pytest.raises(gpt2lab.Error, match="val_tokens needs train_tokens"):
        gpt2lab.train(val_tokens=train, out=str(tmp_path / "r5"), **MODEL, **short)
    # A bad option is refused before the arrays are written.
    with pytest.raises(gpt2lab.Error, match="--lr = -1 is out of range"):
        gpt2lab.train(train_tokens=train, out=str(tmp_path / "r6"), **MODEL, **{**short, "lr": -1})
    for name in ("r3", "r4", "r5", "r6"):
        assert not os.path.exists(tmp_path / (name + ".data")), name


if __name__ == "__main__":
    if not MODULE_DIR:
        harness.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
