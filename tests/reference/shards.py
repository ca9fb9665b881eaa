"""Data the tests make: llm.c token shards, a learnable synthetic token
stream (a noisy linear recurrence), runs of random letters and a small
text corpus for the studies, with numpy only. (What a run writes is read by harness.py.)"""
import os
import random

import numpy as np


def _write_with_header(path, magic, values, dtype):
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = magic, 1, len(values)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(values, dtype=dtype).tobytes())


def write_shard(path, tokens):
    _write_with_header(path, 20240520, tokens, np.uint16)


def write_mask(path, mask):
    """A loss mask beside a shard (X.bin -> X.mask): header then one 0/1 byte per token."""
    _write_with_header(path, 20261101, mask, np.uint8)


def read_shard(path):
    raw = np.fromfile(path, dtype=np.uint8)
    header = raw[:1024].view(np.int32)
    assert header[0] == 20240520 and header[1] == 1
    return raw[1024:].view(np.uint16)[: header[2]].astype(np.int64)


def synthetic_stream(n, vocab, seed):
    rng = np.random.default_rng(seed)
    out, x = np.empty(n, dtype=np.int64), 0
    noise = rng.random(n)
    jumps = rng.integers(0, vocab, size=n)
    for i in range(n):
        x = (x * 5 + 3) % vocab if noise[i] < 0.85 else jumps[i]
        out[i] = x
    return out


def make_dataset(d, vocab, n_train=40000, n_val=4000, seed=0):
    os.makedirs(d, exist_ok=True)
    write_shard(os.path.join(d, "train.bin"), synthetic_stream(n_train, vocab, seed))
    write_shard(os.path.join(d, "val.bin"), synthetic_stream(n_val, vocab, seed + 1))
    return d


def random_letters(n, alphabet, seed):
    """n bytes drawn from alphabet (no white space: one pre-token for GPT-2)."""
    rng = np.random.default_rng(seed)
    a = np.frombuffer(alphabet.encode(), dtype=np.uint8)
    return a[rng.integers(0, len(a), size=n)].tobytes()


def study_corpus(path):
    """24 documents of sentences from a 25-word vocabulary: what the tiny
    studies train their BPE and models on."""
    rnd = random.Random(7)
    words = ("the congress shall make laws for the people of the united states and the nation will keep "
             "its promise to every citizen in peace and in war").split()
    os.makedirs(path)
    for i in range(24):
        with open(os.path.join(path, f"doc{i:02d}.txt"), "w") as f:
            for _ in range(60):
                f.write(" ".join(rnd.choice(words) for _ in range(rnd.randint(5, 14))).capitalize() + ". ")
