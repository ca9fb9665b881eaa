"""`import gpt2lab` with embedding_scale unit: Model.init takes it like
every model field, writes `gpt2lab init --embedding-scale unit`'s weights
byte for byte, says so in its config, draws wte/wpe with std 1/sqrt(n_embd)
and computes the PyTorch reference's logits (input x sqrt(n_embd)).

Skips when the module was not built."""
import os

import numpy as np
import pytest
import torch

import harness
from gpt2_torch import load_checkpoint, read_safetensors, rel_err

TINY = dict(n_layer=2, n_head=2, n_embd=64, block_size=32, vocab_size=97)


@pytest.fixture(scope="module")
def m(gpt2lab):
    return gpt2lab.Model.init(**TINY, embedding_scale="unit", seed=3)


@pytest.fixture(scope="module")
def saved(m, tmp_path_factory):
    py = str(tmp_path_factory.mktemp("unit") / "py")
    m.save(py)
    return py


def test_config_says_unit(m):
    assert m.config["embedding_scale"] == "unit" and m.config["model_type"] == "gpt2lab", \
        "Model.init(embedding_scale='unit'): the config says unit, and not Hugging Face's GPT-2"


def test_weights_equal_the_cli_init(saved, tmp_path):
    cli = os.path.join(tmp_path, "cli")
    harness.run("init", *[x for k, v in TINY.items() for x in ("--" + k.replace("_", "-"), str(v))],
                "--embedding-scale", "unit", "--seed", "3", "--out", cli, check=True)
    same = [open(os.path.join(x, "model.safetensors"), "rb").read() for x in (cli, saved)]
    assert same[0] == same[1], "Model.init + save writes `gpt2lab init --embedding-scale unit`'s weights"


def test_embedding_tables_have_unit_scale_std(saved):
    w = read_safetensors(os.path.join(saved, "model.safetensors"))
    # 97 x 64 = 6208 draws: the std's relative standard error is 0.9%; 5% is 5.6 of them.
    stds = [float(np.std(w[k])) for k in ("transformer.wte.weight", "transformer.wpe.weight")]
    assert all(abs(s * 8 - 1) < 0.05 for s in stds), f"wte and wpe have std 1/sqrt(64) = 0.125: {stds}"


def test_logits_equal_the_reference(m, saved):
    ids = np.array([[5, 1, 96, 40, 7, 7, 0, 33]], dtype=np.int64)
    ours = m.forward(ids)
    ref, _ = load_checkpoint(saved).forward(torch.tensor(ids))
    e = rel_err(ours, ref.detach().numpy())
    assert e < 1e-5, f"logits equal the PyTorch reference's (input x 8): {e:.1e} relative"
