"""Model.generate and Model.stream without a seed draw a fresh one per call,
as Hugging Face's generate does (every call once used 1337, so asking twice
gave the same text twice); seed=None is the same; an explicit seed stays
reproducible, equal between generate, stream and `gpt2lab sample --seed`.

A tiny random-weight model over 97 tokens samples near uniformly: two fresh
40-token samples are equal with probability about 97**-40. Skips (77) when
the module was not built.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
if not MODULE_DIR:
    harness.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
sys.path.insert(0, MODULE_DIR)
import gpt2lab  # noqa: E402

TINY = dict(n_layer=1, n_head=2, n_embd=32, block_size=64, vocab_size=97)
N = 40

with harness.scratch() as tmp:
    m = gpt2lab.Model.init(**TINY, seed=3)
    a, b = (m.generate([1, 2], max_new_tokens=N) for _ in range(2))
    expect(len(a) == N and len(b) == N and a != b, f"generate without a seed: two calls, two samples ({a[:8]} / {b[:8]})")
    c, d = (list(m.stream([1, 2], max_new_tokens=N)) for _ in range(2))
    expect(len(c) == N and c != d, "stream without a seed: two calls, two samples")
    e, f = (m.generate([1, 2], max_new_tokens=N, seed=None) for _ in range(2))
    expect(e != f, "seed=None: a fresh seed per call, as without one")
    seeded = [m.generate([1, 2], max_new_tokens=N, seed=7) for _ in range(2)]
    expect(seeded[0] == seeded[1], "seed=7: the same tokens on every call")
    expect(list(m.stream([1, 2], max_new_tokens=N, seed=7)) == seeded[0], "stream(seed=7) draws generate's tokens")
    expect(m.generate([1, 2], max_new_tokens=N, seed=1337) == m.generate([1, 2], max_new_tokens=N, seed=1337),
           "seed=1337 (the old fixed default) is still reproducible")
    path = os.path.join(tmp, "tiny")
    m.save(path)
    r = harness.run("sample", "--model", path, "--prompt-ids", "1 2", "--max-new-tokens", str(N), "--seed", "7",
                    "--format", "ids", "--quiet", check=True)
    expect([int(x) for x in r.stdout.split()] == seeded[0], "generate(seed=7) equals `gpt2lab sample --seed 7`")
harness.finish("python seed")
