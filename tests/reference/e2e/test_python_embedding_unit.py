"""`import gpt2lab` with embedding_scale unit: Model.init takes it like
every model field, writes `gpt2lab init --embedding-scale unit`'s weights
byte for byte, says so in its config, draws wte/wpe with std 1/sqrt(n_embd)
and computes the PyTorch reference's logits (input x sqrt(n_embd)).

Skips (exit 77) when the module was not built."""
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
import numpy as np  # noqa: E402
import torch  # noqa: E402
from gpt2_torch import load_checkpoint, read_safetensors, rel_err  # noqa: E402

TINY = dict(n_layer=2, n_head=2, n_embd=64, block_size=32, vocab_size=97)

with harness.scratch() as tmp:
    cli = os.path.join(tmp, "cli")
    harness.run("init", *[x for k, v in TINY.items() for x in ("--" + k.replace("_", "-"), str(v))],
                "--embedding-scale", "unit", "--seed", "3", "--out", cli, check=True)
    m = gpt2lab.Model.init(**TINY, embedding_scale="unit", seed=3)
    expect(m.config["embedding_scale"] == "unit" and m.config["model_type"] == "gpt2lab",
           "Model.init(embedding_scale='unit'): the config says unit, and not Hugging Face's GPT-2")
    py = os.path.join(tmp, "py")
    m.save(py)
    same = [open(os.path.join(x, "model.safetensors"), "rb").read() for x in (cli, py)]
    expect(same[0] == same[1], "Model.init + save writes `gpt2lab init --embedding-scale unit`'s weights")
    w = read_safetensors(os.path.join(py, "model.safetensors"))
    # 97 x 64 = 6208 draws: the std's relative standard error is 0.9%; 5% is 5.6 of them.
    stds = [float(np.std(w[k])) for k in ("transformer.wte.weight", "transformer.wpe.weight")]
    expect(all(abs(s * 8 - 1) < 0.05 for s in stds), f"wte and wpe have std 1/sqrt(64) = 0.125: {stds}")
    ids = np.array([[5, 1, 96, 40, 7, 7, 0, 33]], dtype=np.int64)
    ours = m.forward(ids)
    ref, _ = load_checkpoint(py).forward(torch.tensor(ids))
    e = rel_err(ours, ref.detach().numpy())
    expect(e < 1e-5, f"logits equal the PyTorch reference's (input x 8): {e:.1e} relative")
harness.finish("Python embedding_scale unit")
