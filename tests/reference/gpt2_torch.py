"""Independent PyTorch reference of GPT-2 for the oracles.

Every norm placement (pre, post, sandwich, deepnorm, rezero, none) and norm
type (LayerNorm, RMSNorm), written from the papers' definitions (GPT-2 /
nanoGPT; CogView's Sandwich-LN; DeepNet's x_{l+1} = LN(alpha x + G(x)),
alpha = (2N)^(1/4) for a decoder-only model of N layers; ReZero's
x + alpha_l F(x); Zhang & Sennrich's RMSNorm) with plain torch ops; it
shares no code with gpt2lab. Weights are read from a gpt2lab (= Hugging Face layout)
checkpoint with a minimal safetensors reader, so no extra package is needed.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    """Returns {name: np.ndarray} (BF16 widened to float32)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[base + b: base + end]
        if e["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=DTYPES[e["dtype"]])
        out[name] = arr.reshape(e["shape"]).copy()
    return out


def write_safetensors(path, tensors, dtype="F32"):
    """tensors: {name: np.ndarray}; written in the given dtype (F32/F16/BF16)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        if dtype == "F32":
            raw = a.tobytes()
        elif dtype == "F16":
            raw = a.astype(np.float16).tobytes()
        else:  # BF16, round to nearest even
            u = a.view(np.uint32).astype(np.uint64)
            u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
            raw = u.astype(np.uint16).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - (len(h) + 8) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class TorchGPT2:
    """GPT-2 forward as a function of a dict of leaf tensors (HF names)."""

    def __init__(self, cfg, weights, dtype=torch.float32):
        self.cfg = cfg
        self.L = cfg["n_layer"]
        self.NH = cfg["n_head"]
        self.C = cfg["n_embd"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.norm = cfg.get("norm", "pre")
        self.rms = cfg.get("norm_type", "layernorm") == "rmsnorm"
        self.final_norm = cfg.get("final_norm", self.norm in ("pre", "sandwich"))
        # DeepNet (Wang et al. 2022), a decoder-only model of N layers: alpha = (2N)^(1/4).
        self.deepnorm_alpha = (2.0 * self.L) ** 0.25
        # Multiplies the sum wte + wpe (not wte alone); absent in GPT-2 configs.
        # unit differs from sqrt only in how the tables were drawn.
        self.embedding_factor = {"none": 1.0, "sqrt": math.sqrt(self.C),
                                 "unit": math.sqrt(self.C)}[cfg.get("embedding_scale", "none")]
        self._attentions = None
        self.p = {}
        for k, v in weights.items():
            k = k if k.startswith("transformer.") else "transformer." + k
            if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
                continue
            self.p[k] = torch.tensor(v, dtype=dtype, requires_grad=True)

    def w(self, name):
        return self.p["transformer." + name]

    def ln(self, x, name):
        if self.rms:  # x / sqrt(mean(x^2) + eps) * g, no bias
            return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.w(name + ".weight")
        return F.layer_norm(x, (self.C,), self.w(name + ".weight"), self.w(name + ".bias"), self.eps)

    def attn(self, x, i):
        B, T, C = x.shape
        hs = C // self.NH
        qkv = x @ self.w(f"h.{i}.attn.c_attn.weight") + self.w(f"h.{i}.attn.c_attn.bias")
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        if self._attentions is not None:
            self._attentions.append(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return y @ self.w(f"h.{i}.attn.c_proj.weight") + self.w(f"h.{i}.attn.c_proj.bias")

    def mlp(self, x, i):
        h = x @ self.w(f"h.{i}.mlp.c_fc.weight") + self.w(f"h.{i}.mlp.c_fc.bias")
        h = F.gelu(h, approximate="tanh")
        return h @ self.w(f"h.{i}.mlp.c_proj.weight") + self.w(f"h.{i}.mlp.c_proj.bias")

    def forward(self, idx, targets=None, hidden_states=None, attentions=None):
        """hidden_states, attentions: lists to append to (when given): the
        embeddings' output, each block's output and the LM head's input; each
        layer's attention probabilities (B, NH, T, T)."""
        x = self.hidden(idx, hidden_states, attentions)
        logits = x @ self.w("wte.weight").t()
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    def hidden(self, idx, hidden_states=None, attentions=None):
        """The final hidden state (B, T, C): the LM head's input (ln_f's
        output; the last block's output without a final norm)."""
        B, T = idx.shape
        self._attentions = attentions
        keep = hidden_states.append if hidden_states is not None else (lambda _: None)
        x = self.w("wte.weight")[idx] + self.w("wpe.weight")[torch.arange(T)]
        if self.embedding_factor != 1.0:
            x = self.embedding_factor * x
        keep(x)
        for i in range(self.L):
            ln_1, ln_2 = f"h.{i}.ln_1", f"h.{i}.ln_2"
            if self.norm == "pre":
                x = x + self.attn(self.ln(x, ln_1), i)
                x = x + self.mlp(self.ln(x, ln_2), i)
            elif self.norm == "sandwich":
                x = x + self.ln(self.attn(self.ln(x, ln_1), i), f"h.{i}.ln_1_post")
                x = x + self.ln(self.mlp(self.ln(x, ln_2), i), f"h.{i}.ln_2_post")
            elif self.norm == "post":
                x = self.ln(x + self.attn(x, i), ln_1)
                x = self.ln(x + self.mlp(x, i), ln_2)
            elif self.norm == "deepnorm":
                x = self.ln(self.deepnorm_alpha * x + self.attn(x, i), ln_1)
                x = self.ln(self.deepnorm_alpha * x + self.mlp(x, i), ln_2)
            elif self.norm == "rezero":  # one alpha per layer, both sublayers
                alpha = self.w(f"h.{i}.rezero_alpha")
                x = x + alpha * self.attn(x, i)
                x = x + alpha * self.mlp(x, i)
            else:
                assert self.norm == "none", self.norm
                x = x + self.attn(x, i)
                x = x + self.mlp(x, i)
            keep(x)
        if self.final_norm:
            x = self.ln(x, "ln_f")
        keep(x)
        return x


def load_checkpoint(d, dtype=torch.float32):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    return TorchGPT2(cfg, read_safetensors(os.path.join(d, "model.safetensors")), dtype)


def rel_err(ours, ref, floor=1e-8):
    """max |ours - ref| / max |ref| over the tensor (floored for all-zero refs)."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), floor))
