"""Model.generate and Model.stream without a seed draw a fresh one per call,
as Hugging Face's generate does (every call once used 1337, so asking twice
gave the same text twice); seed=None is the same; an explicit seed stays
reproducible, equal between generate, stream and `gpt2lab sample --seed`.

A tiny random-weight model over 97 tokens samples near uniformly: two fresh
40-token samples are equal with probability about 97**-40. Skips when the
module was not built.
"""
import os

import pytest

import harness

TINY = dict(n_layer=1, n_head=2, n_embd=32, block_size=64, vocab_size=97)
N = 40


@pytest.fixture(scope="module")
def m(gpt2lab):
    return gpt2lab.Model.init(**TINY, seed=3)


@pytest.fixture(scope="module")
def seeded(m):
    return [m.generate([1, 2], max_new_tokens=N, seed=7) for _ in range(2)]


def test_generate_without_a_seed_draws_fresh_samples(m):
    a, b = (m.generate([1, 2], max_new_tokens=N) for _ in range(2))
    assert len(a) == N and len(b) == N and a != b, \
        f"generate without a seed: two calls, two samples ({a[:8]} / {b[:8]})"


def test_stream_without_a_seed_draws_fresh_samples(m):
    c, d = (list(m.stream([1, 2], max_new_tokens=N)) for _ in range(2))
    assert len(c) == N and c != d, "stream without a seed: two calls, two samples"


def test_seed_none_draws_fresh_samples(m):
    e, f = (m.generate([1, 2], max_new_tokens=N, seed=None) for _ in range(2))
    assert e != f, "seed=None: a fresh seed per call, as without one"


def test_explicit_seed_is_reproducible(seeded):
    assert seeded[0] == seeded[1], "seed=7: the same tokens on every call"


def test_stream_with_a_seed_draws_generates_tokens(m, seeded):
    assert list(m.stream([1, 2], max_new_tokens=N, seed=7)) == seeded[0], "stream(seed=7) draws generate's tokens"


def test_old_default_seed_is_reproducible(m):
    assert m.generate([1, 2], max_new_tokens=N, seed=1337) == m.generate([1, 2], max_new_tokens=N, seed=1337), \
        "seed=1337 (the old fixed default) is still reproducible"


def test_seed_equals_the_cli_seed(m, seeded, tmp_path):
    path = os.path.join(tmp_path, "tiny")
    m.save(path)
    r = harness.run("sample", "--model", path, "--prompt-ids", "1 2", "--max-new-tokens", str(N), "--seed", "7",
                    "--format", "ids", "--quiet", check=True)
    assert [int(x) for x in r.stdout.split()] == seeded[0], "generate(seed=7) equals `gpt2lab sample --seed 7`"
