"""GGUF export (`gpt2lab convert --to gguf`) read back by llama.cpp's own
Python reader (gguf-py, from the llama.cpp source scripts/fetch_llama_cpp.sh
--source unpacks): the metadata llama.cpp's gpt2 architecture reads, every
tensor's name, shape and type, and its bytes: f32 equal to the weights,
f16 equal to numpy's float16 rounding, q8_0 equal to gguf-py's own q8_0
quantizer. The tokenizer equals GPT-2's files. Models gpt2lab cannot
express in GGUF, and files it did not write, are refused."""
import json
import os
import sys

import numpy as np

import pytest

import harness
from gpt2_torch import write_safetensors
from harness import SOURCE

GGUF_PY = os.path.join(SOURCE, "data", "llama.cpp", "src", "gguf-py")
GPT2_DIR = os.path.join(SOURCE, "data", "gpt2")
L, NH, C, BLOCK, V = 2, 2, 64, 32, 50257

# ours (Hugging Face Conv1D names and (in, out) shapes) -> GGUF name, transposed
MATRICES = {"attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
VECTORS = {"ln_1": "attn_norm", "ln_2": "ffn_norm"}


def random_model(rng):
    """Weights large enough that greedy decoding has clear winners."""
    w = {"wte.weight": rng.normal(0, 0.5, (V, C)), "wpe.weight": rng.normal(0, 0.1, (BLOCK, C)),
         "ln_f.weight": 1 + rng.normal(0, 0.1, C), "ln_f.bias": rng.normal(0, 0.1, C)}
    for i in range(L):
        for ours, (rows, cols) in {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C),
                                   "mlp.c_proj": (4 * C, C)}.items():
            w[f"h.{i}.{ours}.weight"] = rng.normal(0, 0.2 if rows == C else 0.1, (rows, cols))
            w[f"h.{i}.{ours}.bias"] = rng.normal(0, 0.1, cols)
        for ln in VECTORS:
            w[f"h.{i}.{ln}.weight"] = 1 + rng.normal(0, 0.1, C)
            w[f"h.{i}.{ln}.bias"] = rng.normal(0, 0.1, C)
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_hf_dir(d, w, norm="pre"):
    os.makedirs(d, exist_ok=True)
    cfg = {"model_type": "gpt2", "n_layer": L, "n_head": NH, "n_embd": C, "n_positions": BLOCK, "n_ctx": BLOCK,
           "vocab_size": V, "layer_norm_epsilon": 1e-5, "norm": norm}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    write_safetensors(os.path.join(d, "model.safetensors"), w)


def expected_tensors(w):
    """GGUF name -> float32 array in GGUF's row order (ne1 rows of ne0)."""
    e = {"token_embd.weight": w["wte.weight"], "position_embd.weight": w["wpe.weight"],
         "output_norm.weight": w["ln_f.weight"], "output_norm.bias": w["ln_f.bias"]}
    for i in range(L):
        for ours, name in MATRICES.items():
            e[f"blk.{i}.{name}.weight"] = np.ascontiguousarray(w[f"h.{i}.{ours}.weight"].T)
            e[f"blk.{i}.{name}.bias"] = w[f"h.{i}.{ours}.bias"]
        for ours, name in VECTORS.items():
            e[f"blk.{i}.{name}.weight"] = w[f"h.{i}.{ours}.weight"]
            e[f"blk.{i}.{name}.bias"] = w[f"h.{i}.{ours}.bias"]
    return e


def field(r, key):
    return r.fields[key].contents()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(random weights, their HF directory, the scratch folder)."""
    if not os.path.isdir(GGUF_PY):
        pytest.skip(f"llama.cpp's gguf-py is not at {GGUF_PY} (scripts/fetch_llama_cpp.sh --source)")
    sys.path.insert(0, GGUF_PY)
    w = random_model(np.random.default_rng(7))
    tmp = str(tmp_path_factory.mktemp("gguf"))
    hf = os.path.join(tmp, "hf")
    write_hf_dir(hf, w)
    return w, hf, tmp


@pytest.fixture(scope="module")
def exported(model):
    """The model converted to each GGUF dtype: {dtype: GGUFReader}."""
    from gguf import GGUFReader
    _, hf, tmp = model
    readers = {}
    for dtype in DTYPES:
        out = os.path.join(tmp, f"{dtype}.gguf")
        harness.run("convert", "--input", hf, "--out", out, "--to", "gguf", "--dtype", dtype, check=True)
        readers[dtype] = GGUFReader(out)
    return readers


DTYPES = ("f32", "f16", "q8_0")


@pytest.mark.parametrize("dtype", DTYPES)
def test_metadata(exported, dtype):
    r = exported[dtype]
    assert field(r, "general.architecture") == "gpt2", f"{dtype}: general.architecture is gpt2"
    want = {"gpt2.context_length": BLOCK, "gpt2.embedding_length": C, "gpt2.feed_forward_length": 4 * C,
            "gpt2.block_count": L, "gpt2.attention.head_count": NH, "tokenizer.ggml.eos_token_id": 50256,
            "general.file_type": {"f32": 0, "f16": 1, "q8_0": 7}[dtype]}
    got = {k: field(r, k) for k in want}
    assert got == want, f"{dtype}: hyperparameters {got}"
    eps = field(r, "gpt2.attention.layer_norm_epsilon")
    assert abs(eps - 1e-5) < 1e-12, f"{dtype}: layer_norm_epsilon {eps}"


def test_tokenizer(exported):
    r = exported["f32"]
    with open(os.path.join(GPT2_DIR, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(GPT2_DIR, "vocab.bpe"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#version")]
    tokens = field(r, "tokenizer.ggml.tokens")
    by_id = sorted(encoder, key=encoder.get)
    assert tokens == by_id, f"tokenizer.ggml.tokens equal encoder.json by id ({len(tokens)} tokens)"
    assert field(r, "tokenizer.ggml.merges") == merges, f"tokenizer.ggml.merges equal vocab.bpe ({len(merges)})"
    types = field(r, "tokenizer.ggml.token_type")
    assert types[50256] == 3 and set(types[:50256]) == {1}, "<|endoftext|> alone is a control token"
    assert field(r, "tokenizer.ggml.model") == "gpt2", "tokenizer.ggml.model is gpt2"


def encoded(a, dtype):
    """The bytes ggml holds for a float32 array (rows of ne0) in dtype."""
    if dtype == "f32":
        return a.astype(np.float32).view(np.uint8)
    if dtype == "f16":
        return a.astype(np.float16).view(np.uint8)
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize
    return quantize(a, GGMLQuantizationType.Q8_0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensors(model, exported, dtype):
    r, w = exported[dtype], model[0]
    want = expected_tensors(w)
    got = {t.name: t for t in r.tensors}
    assert sorted(got) == sorted(want), f"{dtype}: the {len(want)} tensors llama.cpp's gpt2 reads, no more"
    bad = []
    for name, a in want.items():
        t = got.get(name)
        if t is None:
            continue
        is_mat = a.ndim == 2 and name not in ("position_embd.weight",)
        ttype = {"f32": "F32", "f16": "F16", "q8_0": "Q8_0"}[dtype] if is_mat else "F32"
        shape = list(reversed(a.shape))
        if t.tensor_type.name != ttype or [int(x) for x in t.shape] != shape:
            bad.append(f"{name}: {t.tensor_type.name} {list(t.shape)}, expected {ttype} {shape}")
            continue
        ref = encoded(a, dtype if is_mat else "f32").reshape(-1)
        if not np.array_equal(np.asarray(t.data).view(np.uint8).reshape(-1), ref):
            bad.append(f"{name}: bytes differ")
    assert not bad, f"{dtype}: every tensor's type, shape and bytes" + (": " + "; ".join(bad[:4]) if bad else "")


def test_post_ln_model_is_refused(model):
    w, hf, tmp = model
    post = os.path.join(tmp, "post")
    write_hf_dir(post, w, norm="post")
    r = harness.run("convert", "--input", post, "--out", os.path.join(tmp, "post.gguf"), "--to", "gguf")
    assert r.returncode != 0 and "Pre-LN" in r.stderr and not os.path.exists(os.path.join(tmp, "post.gguf")), \
        f"a Post-LN model is refused: {r.stderr.strip()[:120]}"


def test_file_we_did_not_write_is_never_replaced(model):
    _, hf, tmp = model
    mine = os.path.join(tmp, "notes.txt")
    with open(mine, "w") as f:
        f.write("not a model\n")
    r = harness.run("convert", "--input", hf, "--out", mine, "--to", "gguf", "--force")
    with open(mine) as f:
        kept = f.read() == "not a model\n"
    assert r.returncode != 0 and kept, f"a file gpt2lab did not write is never replaced: {r.stderr.strip()[:100]}"


def test_q8_0_without_gguf_is_refused(model):
    _, hf, tmp = model
    r = harness.run("convert", "--input", hf, "--out", os.path.join(tmp, "x"), "--to", "hf", "--dtype", "q8_0")
    assert r.returncode != 0 and "--to gguf" in r.stderr, "--dtype q8_0 without --to gguf is refused"


def test_existing_gguf_file_needs_force(model, exported):
    _, hf, tmp = model
    again = harness.run("convert", "--input", hf, "--out", os.path.join(tmp, "f32.gguf"), "--to", "gguf")
    assert again.returncode != 0 and "--force" in again.stderr, "an existing GGUF file needs --force"
