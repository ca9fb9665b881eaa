"""PyTorch KV-cache generator for a GPT-2 124M-sized model (random weights),
as fast as we could make it on the CPU: one-row decode steps through
matrix-vector products, LM head only on the last position, no autograd.
Decode: 128 new tokens after a DEPTH-token prompt (default 16).
Prints one JSON line per dtype. Run by bench/sample_compare.sh [THREADS [DEPTH]]."""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

L, NH, C, V, BLOCK = 12, 12, 768, 50257, 1024
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 16
torch.set_num_threads(threads)
torch.manual_seed(0)


def make(dtype):
    g = lambda *s: (torch.randn(*s) * 0.02).to(dtype)  # noqa: E731
    z = lambda *s: torch.zeros(*s, dtype=dtype)  # noqa: E731
    o = lambda *s: torch.ones(*s, dtype=dtype)  # noqa: E731
    layers = [dict(ln1w=o(C), ln1b=z(C), wqkv=g(3 * C, C), bqkv=z(3 * C), wo=g(C, C), bo=z(C), ln2w=o(C), ln2b=z(C),
                   wfc=g(4 * C, C), bfc=z(4 * C), wpr=g(C, 4 * C), bpr=z(C)) for _ in range(L)]
    return dict(wte=g(V, C), wpe=g(BLOCK, C), lnfw=o(C), lnfb=z(C), layers=layers)


@torch.no_grad()
def forward(m, idx, cache, pos):
    """idx: (T,) new tokens at positions pos..pos+T-1; cache: per layer (K, V) of (NH, BLOCK, hs)."""
    T = idx.shape[0]
    hs = C // NH
    x = m["wte"][idx] + m["wpe"][pos:pos + T]
    for l, p in enumerate(m["layers"]):
        h = F.layer_norm(x, (C,), p["ln1w"], p["ln1b"])
        qkv = F.linear(h, p["wqkv"], p["bqkv"])
        q, k, v = qkv.split(C, dim=1)
        K, Vc = cache[l]
        K[:, pos:pos + T] = k.view(T, NH, hs).transpose(0, 1)
        Vc[:, pos:pos + T] = v.view(T, NH, hs).transpose(0, 1)
        q = q.view(T, NH, hs).transpose(0, 1)
        kk, vv = K[:, :pos + T], Vc[:, :pos + T]
        att = (q @ kk.transpose(1, 2)) / math.sqrt(hs)
        if T > 1:
            mask = torch.ones(T, pos + T, dtype=torch.bool).tril(diagonal=pos)
            att = att.masked_fill(~mask, float("-inf"))
        y = (att.softmax(dim=-1) @ vv).transpose(0, 1).reshape(T, C)
        x = x + F.linear(y, p["wo"], p["bo"])
        h = F.layer_norm(x, (C,), p["ln2w"], p["ln2b"])
        x = x + F.linear(F.gelu(F.linear(h, p["wfc"], p["bfc"]), approximate="tanh"), p["wpr"], p["bpr"])
    h = F.layer_norm(x[-1:], (C,), m["lnfw"], m["lnfb"])
    return F.linear(h, m["wte"])[0]


def run(dtype, name):
    m = make(dtype)
    hs = C // NH
    new_cache = lambda: [(torch.zeros(NH, BLOCK, hs, dtype=dtype), torch.zeros(NH, BLOCK, hs, dtype=dtype))  # noqa: E731
                         for _ in range(L)]
    prompt = torch.tensor([(i * 7919) % V for i in range(max(512, depth))])
    best_prefill = 1e30
    for _ in range(3):
        cache = new_cache()
        t0 = time.perf_counter()
        forward(m, prompt[:512], cache, 0)
        best_prefill = min(best_prefill, time.perf_counter() - t0)
    best_decode = 1e30
    for _ in range(3):
        cache = new_cache()
        logits = forward(m, prompt[:depth], cache, 0)
        t0 = time.perf_counter()
        for i in range(128):
            nxt = int(torch.argmax(logits))
            logits = forward(m, torch.tensor([nxt]), cache, depth + i)
        best_decode = min(best_decode, time.perf_counter() - t0)
    print(json.dumps({"impl": "pytorch", "dtype": name, "threads": threads, "depth": depth, "prefill_tok_s": round(512 / best_prefill, 1),
                      "decode_ms": round(best_decode / 128 * 1000, 3)}), flush=True)


run(torch.float32, "f32")
run(torch.bfloat16, "bf16")
