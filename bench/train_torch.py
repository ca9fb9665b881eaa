"""A PyTorch training step of the same GPT-2 (Pre-LN, GPT-2 init, tied head):
forward, backward, clip, AdamW. Median of --steps steps after 2 warm-ups.
Prints one JSON line. Run by bench/train_compare.sh.
  train_torch.py L H C V B T THREADS STEPS [bf16]"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

L, H, C, V, B, T, threads, steps = map(int, sys.argv[1:9])
bf16 = len(sys.argv) > 9 and sys.argv[9] == "bf16"
torch.set_num_threads(threads)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        Bx, Tx, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(Bx, Tx, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(F, "scaled_dot_product_attention") \
            else (lambda a: a.masked_fill(torch.ones(Tx, Tx, dtype=torch.bool).triu(1), float("-inf")).softmax(-1) @ v)(
                q @ k.transpose(-2, -1) / math.sqrt(C // H))
        x = x + self.c_proj(y.transpose(1, 2).reshape(Bx, Tx, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(max(T, 64), C)
        self.h = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        for n, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if n.endswith("c_proj.weight") or n.endswith("mlp_proj.weight") else 0.02
                nn.init.normal_(p, 0, std)

    def forward(self, idx, tgt):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.h:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V).float(), tgt.view(-1))


model = GPT()
decay = [p for p in model.parameters() if p.dim() >= 2]
other = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                        lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
idx = torch.randint(0, V, (B, T))
tgt = torch.randint(0, V, (B, T))
times = []
cpu0 = 0.0
for s in range(steps + 2):
    if s == 2:
        cpu0 = time.process_time()
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(idx, tgt)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if s >= 2:
        times.append((time.perf_counter() - t0) * 1000)
cpu_ms = (time.process_time() - cpu0) / steps * 1000
times.sort()
ms = times[len(times) // 2]
N = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
flops = 6 * N * B * T + 6 * L * T * T * C * B
print(json.dumps({"impl": "pytorch" + ("-bf16" if bf16 else ""), "ms": round(ms, 2), "tokens_per_s": round(B * T / ms * 1000, 1),
                  "gflops": round(flops / (ms / 1000) / 1e9, 1),
                  "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "cpu_ms": round(cpu_ms, 1)}),
      flush=True)
