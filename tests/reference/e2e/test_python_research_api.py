"""What a researcher coming from Hugging Face transformers or nanoGPT expects
of `gpt2lab.Model`: state_dict / named_parameters / load_state_dict (HF
names, checked at the boundary), forward's hidden states and attention
probabilities against the PyTorch reference (tests/reference/gpt2_torch.py)
for Pre-LN and Post-LN, and batched generation with log-probabilities equal
to generating each row alone.

Skips (77) where the module is not built.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
TINY = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, vocab_size=97)
TOL = 1e-5  # max |ours - torch| / max |torch|, as the oracle tests


@pytest.fixture(scope="module")
def gpt2lab():
    if not MODULE_DIR:
        pytest.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    sys.path.insert(0, MODULE_DIR)
    import gpt2lab as module
    return module


@pytest.fixture(scope="module")
def torch_ref():
    torch = pytest.importorskip("torch")
    import gpt2_torch
    return torch, gpt2_torch


def batch(T=12, B=2, seed=0):
    return np.random.default_rng(seed).integers(0, TINY["vocab_size"], size=(B, T), dtype=np.int64)


def test_state_dict_names_shapes_and_round_trip(gpt2lab):
    m = gpt2lab.Model.init(**TINY, seed=1)
    sd = m.state_dict()
    assert list(sd)[:2] == ["transformer.wte.weight", "transformer.wpe.weight"]
    assert sd["transformer.wte.weight"].shape == (97, 32)
    assert sd["transformer.h.1.attn.c_attn.weight"].shape == (32, 96)  # Conv1D: (in, out), as HF
    assert sd["transformer.h.0.mlp.c_proj.weight"].shape == (128, 32)
    assert all(a.dtype == np.float32 for a in sd.values())
    names = [n for n, _ in m.named_parameters()]
    assert names == list(sd)
    for (name, view), copy in zip(m.named_parameters(), sd.values()):
        assert np.array_equal(view, copy) and not view.flags.writeable, name
    # A copy: changing it leaves the model alone.
    sd["transformer.wte.weight"][:] = 0
    assert not np.array_equal(m.state_dict()["transformer.wte.weight"], sd["transformer.wte.weight"])
    # Round trip into another model: every tensor and the logits equal.
    other = gpt2lab.Model.init(**TINY, seed=2)
    src = m.state_dict()
    assert other.load_state_dict(src) == {"missing_keys": [], "unexpected_keys": []}
    assert all(np.array_equal(a, src[k]) for k, a in other.state_dict().items())
    x = batch()
    assert np.array_equal(other.forward(x), m.forward(x))


def test_load_state_dict_checks_keys_shapes_and_dtypes(gpt2lab):
    m = gpt2lab.Model.init(**TINY, seed=1)
    before = m.state_dict()
    good = m.state_dict()
    bad_cases = [
        ({**good, "transformer.h.0.ln_1.weight": np.ones(31, np.float32)},
         "'transformer.h.0.ln_1.weight' has shape (31,), expected (32,)"),
        ({**good, "transformer.h.0.attn.c_attn.weight": good["transformer.h.0.attn.c_attn.weight"].T.copy()},
         "'transformer.h.0.attn.c_attn.weight' has shape (96, 32), expected (32, 96)"),
        ({**good, "transformer.wpe.weight": good["transformer.wpe.weight"].astype(np.float64)},
         "'transformer.wpe.weight' has dtype float64, expected float32"),
        ({k: v for k, v in good.items() if k != "transformer.ln_f.bias"},
         "missing keys: transformer.ln_f.bias"),
        ({**good, "lm_head.weight": good["transformer.wte.weight"]}, "unexpected keys: lm_head.weight"),
    ]
    for i, (d, fragment) in enumerate(bad_cases):
        # Poison one tensor first: a refused dict must write nothing at all.
        d = {k: (v + 1 if k == "transformer.wte.weight" else v) for k, v in d.items()}
        with pytest.raises(gpt2lab.Error) as e:
            m.load_state_dict(d)
        assert fragment in str(e.value), (i, str(e.value))
        assert all(np.array_equal(a, before[k]) for k, a in m.state_dict().items()), i
    # strict=False loads what matches and says what did not.
    partial = {"transformer.ln_f.bias": np.full(32, 0.5, np.float32), "lm_head.weight": good["transformer.wte.weight"]}
    r = m.load_state_dict(partial, strict=False)
    assert r["unexpected_keys"] == ["lm_head.weight"] and "transformer.wte.weight" in r["missing_keys"]
    assert np.all(m.state_dict()["transformer.ln_f.bias"] == 0.5)


def test_changed_weight_changes_logits_as_the_reference(gpt2lab, torch_ref):
    torch, gpt2_torch = torch_ref
    m = gpt2lab.Model.init(**TINY, seed=4)
    sd = m.state_dict()
    sd["transformer.h.1.mlp.c_fc.weight"] *= 3.0
    sd["transformer.wpe.weight"][0] += 0.25
    m.load_state_dict(sd)
    x = batch(seed=5)
    ref = gpt2_torch.TorchGPT2(m.config, sd, dtype=torch.float64)
    logits, _ = ref.forward(torch.tensor(x))
    ours = m.forward(x)
    assert gpt2_torch.rel_err(ours, logits.detach().numpy()) < TOL
    # ...and differs from the unchanged model's.
    assert gpt2_torch.rel_err(gpt2lab.Model.init(**TINY, seed=4).forward(x), logits.detach().numpy()) > 1e-2


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_hidden_states_and_attentions_equal_the_reference(gpt2lab, torch_ref, norm):
    torch, gpt2_torch = torch_ref
    m = gpt2lab.Model.init(**TINY, norm=norm, init="normal", seed=7)
    x = batch(seed=8)
    out = m.forward(x, return_hidden_states=True, return_attentions=True)
    hidden, att = [], []
    ref = gpt2_torch.TorchGPT2(m.config, m.state_dict(), dtype=torch.float64)
    logits, _ = ref.forward(torch.tensor(x), hidden_states=hidden, attentions=att)
    L, B, T, C, NH = TINY["n_layer"], 2, 12, TINY["n_embd"], TINY["n_head"]
    assert len(out["hidden_states"]) == L + 2 and len(hidden) == L + 2
    assert len(out["attentions"]) == L and len(att) == L
    assert np.array_equal(out["logits"], m.forward(x))
    for i, (ours, theirs) in enumerate(zip(out["hidden_states"], hidden)):
        assert ours.shape == (B, T, C) and ours.dtype == np.float32
        assert gpt2_torch.rel_err(ours, theirs.detach().numpy()) < TOL, (norm, i)
    for layer, (ours, theirs) in enumerate(zip(out["attentions"], att)):
        assert ours.shape == (B, NH, T, T)
        assert gpt2_torch.rel_err(ours, theirs.detach().numpy()) < TOL, (norm, layer)
        assert np.all(np.triu(ours, 1) == 0)
    if norm == "post":  # no final norm: the LM head reads the last block's output
        assert not m.config["final_norm"]
        assert np.array_equal(out["hidden_states"][-1], out["hidden_states"][-2])
    # One row alone: (T, C) and (NH, T, T), equal to that row of the batch.
    one = m.forward(x[1], return_hidden_states=True, return_attentions=True)
    assert one["hidden_states"][1].shape == (T, C) and one["attentions"][0].shape == (NH, T, T)
    assert gpt2_torch.rel_err(one["hidden_states"][L], out["hidden_states"][L][1]) < TOL


def test_batched_generate_equals_each_row_alone(gpt2lab):
    m = gpt2lab.Model.init(**TINY, seed=3)
    prompts = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    rows = m.generate(prompts, max_new_tokens=10, seed=11, top_k=20)
    assert rows == [m.generate(list(p), max_new_tokens=10, seed=11 + i, top_k=20) for i, p in enumerate(prompts)]
    assert len(set(map(tuple, rows))) == 3
    # A list of prompts of different lengths, one seed each.
    ragged = [[1], [2, 3, 4, 5], np.array([6, 7])]
    got = m.generate(ragged, max_new_tokens=6, seed=[5, 6, 7])
    assert got == [m.generate(list(p), max_new_tokens=6, seed=s) for p, s in zip(ragged, [5, 6, 7])]
    with pytest.raises(gpt2lab.Error, match="seed has 2 entries but the batch has 3 rows"):
        m.generate(ragged, max_new_tokens=6, seed=[1, 2])
    with pytest.raises(gpt2lab.Error, match="prompt row 1"):
        m.generate([[1, 2], [3, 500]], max_new_tokens=2, seed=1)
    # Without a seed each row and each call draws a fresh one.
    a, b = (m.generate(prompts, max_new_tokens=30) for _ in range(2))
    assert a != b and len({tuple(r) for r in a}) == 3


def test_generate_logprobs(gpt2lab):
    m = gpt2lab.Model.init(**TINY, seed=3)
    r = m.generate([1, 2, 3], max_new_tokens=8, seed=2, return_logprobs=True, top_logprobs=3)
    assert r["tokens"] == m.generate([1, 2, 3], max_new_tokens=8, seed=2)
    assert len(r["logprobs"]) == 8 and len(r["top_logprobs"]) == 8
    # The model's log-softmax of the raw logits at each step (OpenAI's logprobs).
    seq = [1, 2, 3] + r["tokens"]
    logits = m.forward(np.array(seq[:-1]))[2:].astype(np.float64)
    logsm = logits - logits.max(-1, keepdims=True)
    logsm -= np.log(np.exp(logsm).sum(-1, keepdims=True))
    for step, tok in enumerate(r["tokens"]):
        assert abs(r["logprobs"][step] - logsm[step, tok]) < 1e-4, step
        best = np.argsort(-logsm[step], kind="stable")[:3]
        assert [t for t, _ in r["top_logprobs"][step]] == best.tolist()
    batched = m.generate([[1, 2, 3], [4]], max_new_tokens=5, seed=2, return_logprobs=True)
    alone = [m.generate(p, max_new_tokens=5, seed=2 + i, return_logprobs=True) for i, p in enumerate([[1, 2, 3], [4]])]
    assert batched == alone and "top_logprobs" not in batched[0]


if __name__ == "__main__":
    if not MODULE_DIR:
        harness.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
