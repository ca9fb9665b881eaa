"""llama.cpp runs what `gpt2lab convert --to gguf` writes: its llama-simple
(greedy, its own GPT-2 tokenizer reading our exported vocabulary and
merges) prints the same text as `gpt2lab sample --temperature 0` on the
checkpoint, for several prompts. Needs llama.cpp built
(scripts/fetch_llama_cpp.sh, ~10 min on 2 cores); skipped without it."""
import os

import numpy as np
import pytest

import harness
from harness import SOURCE
from test_gguf import BLOCK, random_model, write_hf_dir

SIMPLE = os.environ.get("LLAMA_SIMPLE") or os.path.join(SOURCE, "data", "llama.cpp", "build", "bin", "llama-simple")
PROMPTS = ["The quick brown fox", "Hello, world! It is", " 1 2 3 4", "État—naïve café"]
NEW = 12


def ours(hf, prompt):
    r = harness.run("sample", "--model", hf, "--prompt", prompt, "--max-new-tokens", str(NEW), "--temperature", "0",
                    "--stop-at-eot", "--quiet", text=False, check=True)
    return r.stdout.rstrip(b"\n")


def theirs(gguf, prompt):
    r = harness.command([SIMPLE, "-m", gguf, "-n", str(NEW), prompt], text=False, check=True, timeout=120)
    return r.stdout.rstrip(b"\n")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(HF directory, its GGUF conversion) of a random model."""
    if not os.access(SIMPLE, os.X_OK):
        pytest.skip(f"llama.cpp's llama-simple is not built at {SIMPLE} (scripts/fetch_llama_cpp.sh)")
    tmp = str(tmp_path_factory.mktemp("gguf"))
    w = random_model(np.random.default_rng(11))
    hf = os.path.join(tmp, "hf")
    write_hf_dir(hf, w)
    gguf = os.path.join(tmp, "f32.gguf")
    harness.run("convert", "--input", hf, "--out", gguf, "--to", "gguf", check=True)
    return hf, gguf


@pytest.mark.parametrize("p", PROMPTS)
def test_llama_cpp_prints_what_gpt2lab_samples(converted, p):
    hf, gguf = converted
    a, b = ours(hf, p), theirs(gguf, p)
    assert a == b and len(a) > len(p), f"{p!r}: gpt2lab {a[:60]!r} == llama.cpp {b[:60]!r}"


def test_prompts_fit_the_context(converted):
    assert len(PROMPTS[0]) + NEW < BLOCK, "prompts and continuations fit the context"
