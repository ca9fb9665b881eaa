"""Interop: Hugging Face GPT-2 directories and llm.c files written here by
PyTorch/numpy code load in gpt2lab and agree; greedy generation matches a
PyTorch reference token for token; conversions round-trip exactly; damaged
files fail cleanly."""
import json
import os

import numpy as np
import torch

import pytest

import harness
from gpt2_torch import TorchGPT2, read_safetensors, rel_err, write_safetensors
from harness import TOOL

torch.set_num_threads(1)
L, NH, C, BLOCK, V = 2, 4, 32, 24, 101


def random_weights(rng):
    w = {"wte.weight": rng.normal(0, 0.5, (V, C)), "wpe.weight": rng.normal(0, 0.1, (BLOCK, C)),
         "ln_f.weight": 1 + rng.normal(0, 0.1, C), "ln_f.bias": rng.normal(0, 0.1, C)}
    for i in range(L):
        p = f"h.{i}."
        w[p + "ln_1.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_1.bias"] = rng.normal(0, 0.1, C)
        w[p + "attn.c_attn.weight"] = rng.normal(0, 0.2, (C, 3 * C))
        w[p + "attn.c_attn.bias"] = rng.normal(0, 0.1, 3 * C)
        w[p + "attn.c_proj.weight"] = rng.normal(0, 0.2, (C, C))
        w[p + "attn.c_proj.bias"] = rng.normal(0, 0.1, C)
        w[p + "ln_2.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_2.bias"] = rng.normal(0, 0.1, C)
        w[p + "mlp.c_fc.weight"] = rng.normal(0, 0.2, (C, 4 * C))
        w[p + "mlp.c_fc.bias"] = rng.normal(0, 0.1, 4 * C)
        w[p + "mlp.c_proj.weight"] = rng.normal(0, 0.1, (4 * C, C))
        w[p + "mlp.c_proj.bias"] = rng.normal(0, 0.1, C)
    return {k: v.astype(np.float32) for k, v in w.items()}


def round_to(w, dtype):
    if dtype == "F16":
        return {k: v.astype(np.float16).astype(np.float32) for k, v in w.items()}
    if dtype == "BF16":
        out = {}
        for k, v in w.items():
            u = v.view(np.uint32).astype(np.uint64)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
            out[k] = u.astype(np.uint32).view(np.float32)
        return out
    return w


HF_CONFIG = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
             "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
             "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": BLOCK, "n_embd": C, "n_head": NH,
             "n_layer": L, "n_positions": BLOCK, "resid_pdrop": 0.1, "vocab_size": V}


def write_hf_dir(d, w, dtype):
    """As published on the Hub: no `transformer.` prefix, mask buffers present."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(HF_CONFIG, f)
    t = dict(w)
    for i in range(L):
        t[f"h.{i}.attn.bias"] = np.tril(np.ones((BLOCK, BLOCK), dtype=np.float32)).reshape(1, 1, BLOCK, BLOCK)
    write_safetensors(os.path.join(d, "model.safetensors"), t, dtype)


def write_llmc(path, w, version):
    Vp = (V + 127) // 128 * 128
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, version, BLOCK, V, L, NH, C, Vp]
    wte = np.zeros((Vp, C), dtype=np.float32)
    wte[:V] = w["wte.weight"]
    parts = [wte, w["wpe.weight"]]
    for name, tr in (("ln_1.weight", False), ("ln_1.bias", False), ("attn.c_attn.weight", True),
                     ("attn.c_attn.bias", False), ("attn.c_proj.weight", True), ("attn.c_proj.bias", False),
                     ("ln_2.weight", False), ("ln_2.bias", False), ("mlp.c_fc.weight", True),
                     ("mlp.c_fc.bias", False), ("mlp.c_proj.weight", True), ("mlp.c_proj.bias", False)):
        for i in range(L):
            a = w[f"h.{i}.{name}"]
            parts.append(a.T if tr else a)  # llm.c keeps nn.Linear's (out, in)
    parts += [w["ln_f.weight"], w["ln_f.bias"]]
    blob = np.concatenate([np.ascontiguousarray(p, dtype=np.float32).ravel() for p in parts])
    with open(path, "wb") as f:
        f.write(header.tobytes())
        if version == 3:
            f.write(blob.tobytes())
        else:
            u = blob.view(np.uint32).astype(np.uint64)
            f.write((((u + 0x7FFF + ((u >> 16) & 1)) >> 16)).astype(np.uint16).tobytes())


def gpt2lab_logits(d, tokens):
    B, T = tokens.shape
    batch = os.path.join(d, "..", os.path.basename(d) + ".batch")
    np.concatenate([tokens.ravel(), tokens.ravel()]).astype(np.int32).tofile(batch)
    out = batch + ".out"
    harness.command([TOOL, "fwdbwd", "--model", d, "--batch", batch, "--B", str(B), "--T", str(T), "--out", out],
                    check=True)
    return read_safetensors(out)["logits"]


def greedy_reference(w, prompt, n):
    model = TorchGPT2(HF_CONFIG, w)
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            logits, _ = model.forward(torch.tensor([ids[-BLOCK:]]))
            ids.append(int(torch.argmax(logits[0, -1])))
    return ids[len(prompt):]


@pytest.fixture(scope="module")
def weights():
    """(random weights, a token batch) every case uses."""
    rng = np.random.default_rng(3)
    w = random_weights(rng)
    return w, rng.integers(0, V, size=(2, BLOCK))


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return str(tmp_path_factory.mktemp("interop"))


@pytest.fixture(scope="module")
def hf_dirs(weights, tmp):
    """An HF directory per dtype: {dtype: folder}."""
    w, _ = weights
    dirs = {}
    for dtype in ("F32", "F16", "BF16"):
        dirs[dtype] = os.path.join(tmp, "hf-" + dtype)
        write_hf_dir(dirs[dtype], w, dtype)
    return dirs


@pytest.mark.parametrize("dtype", ["F32", "F16", "BF16"])
def test_hf_directory_logits_match(weights, hf_dirs, dtype):
    w, tokens = weights
    wr = round_to(w, dtype)
    ref, _ = TorchGPT2(HF_CONFIG, wr).forward(torch.tensor(tokens))
    err = rel_err(gpt2lab_logits(hf_dirs[dtype], tokens), ref.detach().numpy())
    assert err < 1e-5, f"Hugging Face directory ({dtype}, no prefix, mask buffers) logits match ({err:.1e})"


def test_greedy_generation_equals_the_reference(weights, hf_dirs):
    w, _ = weights
    prompt = [5, 17, 42]
    ref_ids = greedy_reference(w, prompt, 30)
    r = harness.run("sample", "--model", hf_dirs["F32"], "--prompt-ids", " ".join(map(str, prompt)),
                    "--temperature", "0", "--max-new-tokens", "30", "--format", "ids", "--context", "slide")
    ours = [int(x) for x in r.stdout.split()]
    assert ours[:21] == ref_ids[:21], (f"greedy generation equals the PyTorch reference within the context "
                                       f"({sum(a == b for a, b in zip(ours, ref_ids))}/30 equal overall)")


# llm.c files written here load exactly; exports are byte-identical to them.

@pytest.fixture(scope="module")
def llmc_files(weights, tmp):
    """{version: (llm.c file, its import)}."""
    w, _ = weights
    files = {}
    for version in (3, 5):
        f = os.path.join(tmp, f"model_v{version}.bin")
        write_llmc(f, w, version)
        out = os.path.join(tmp, f"from-llmc-{version}")
        harness.run("convert", "--input", f, "--out", out, check=True)
        files[version] = f, out
    return files


@pytest.mark.parametrize("version,label", [(3, "fp32"), (5, "bf16")])
def test_llmc_file_imports_exactly(weights, llmc_files, version, label):
    w, _ = weights
    got = read_safetensors(os.path.join(llmc_files[version][1], "model.safetensors"))
    wr = round_to(w, "F32" if version == 3 else "BF16")
    exact = all(np.array_equal(got["transformer." + k], v) for k, v in wr.items())
    assert exact, f"llm.c version {version} ({label}) file imports exactly"


@pytest.mark.parametrize("version,label", [(3, "fp32"), (5, "bf16")])
def test_llmc_export_is_byte_identical(llmc_files, tmp, version, label):
    f, out = llmc_files[version]
    back = os.path.join(tmp, f"back-{version}.bin")
    harness.run("convert", "--input", out, "--out", back, "--to", "llmc", "--dtype", label, check=True)
    with open(f, "rb") as a, open(back, "rb") as b:
        assert a.read() == b.read(), f"export to llm.c {label} is byte-identical to the file written by the reference"


def test_llmc_round_trip_is_byte_identical(llmc_files, tmp):
    harness.run("convert", "--input", llmc_files[3][0], "--out", os.path.join(tmp, "rt1"), check=True)
    harness.run("convert", "--input", os.path.join(tmp, "rt1"), "--out", os.path.join(tmp, "rt.bin"), check=True)
    harness.run("convert", "--input", os.path.join(tmp, "rt.bin"), "--out", os.path.join(tmp, "rt2"), check=True)
    with open(os.path.join(tmp, "rt1", "model.safetensors"), "rb") as a, \
            open(os.path.join(tmp, "rt2", "model.safetensors"), "rb") as b:
        assert a.read() == b.read(), "checkpoint -> llm.c -> checkpoint round trip is byte-identical"


# Damaged inputs fail cleanly with a message naming the problem.
DAMAGE = {"truncated": "truncated", "header only": "truncated", "short": "header", "bad version": "version",
          "zero layers": "num_layers"}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damaged_llmc_file_is_refused(llmc_files, tmp_path, name):
    with open(llmc_files[3][0], "rb") as fh:
        good = fh.read()
    cases = {"truncated": good[:-10], "header only": good[:1024], "short": good[:100],
             "bad version": good[:4] + np.int32(7).tobytes() + good[8:],
             "zero layers": good[:16] + np.int32(0).tobytes() + good[20:]}
    p = str(tmp_path / "bad.bin")
    with open(p, "wb") as f:
        f.write(cases[name])
    r = harness.run("convert", "--input", p, "--out", str(tmp_path / "bad-out"))
    assert r.returncode == 1 and DAMAGE[name] in r.stderr and not os.path.exists(tmp_path / "bad-out"), \
        f"llm.c file, {name}: refused ({r.stderr.strip()[:90]})"


def test_post_ln_model_is_not_exported_to_llmc(tmp_path):
    harness.run("init", "--n-layer", "1", "--n-head", "2", "--n-embd", "8", "--vocab-size", "20",
                "--block-size", "8", "--norm", "post", "--out", str(tmp_path / "post"))
    r = harness.run("convert", "--input", str(tmp_path / "post"), "--out", str(tmp_path / "post.bin"))
    assert r.returncode == 1 and "Pre-LN" in r.stderr, "a Post-LN model is not exported to llm.c"
