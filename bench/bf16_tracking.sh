#!/usr/bin/env bash
# bf16 mixed precision against fp32 on the default corpus: the same model,
# data order and seed trained both ways; prints both loss curves side by side
# (every 25 steps, with a 25-step moving average) and the largest gap.
#   bench/bf16_tracking.sh [STEPS]        (after scripts/setup.sh and `gpt2lab prepare`)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
STEPS=${1:-300}
B=${BUILD_DIR:-build}/gpt2lab
OUT=${OUT:-$(mktemp -d)}
ARGS="--data data/sotu_gpt2 --n-layer 4 --n-head 4 --n-embd 256 --block-size 128 -B 8 -T 128 --steps $STEPS
      --lr 1e-3 --warmup 30 --eval-every 100 --eval-batches 10 --save-every 0 --threads 2 --seed 1 --quiet --force"
machine_line "L4 H4 C256, B=8 T=128, 2 threads, $STEPS steps"
$B train $ARGS --out "$OUT/fp32"
$B train $ARGS --out "$OUT/bf16" --bf16
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
def rows(run): return [json.loads(l) for l in open(f"{sys.argv[1]}/{run}/metrics.jsonl")]
def curve(run): return [r["loss"] for r in rows(run) if "loss" in r and "diverged" not in r]
def vals(run): return {r["step"]: r["val_loss"] for r in rows(run) if "val_loss" in r}
def avg(c, i, w=25): s = c[max(0, i - w + 1): i + 1]; return sum(s) / len(s)
def tps(run):
    t = sorted(r["tokens_per_s"] for r in rows(run) if "tokens_per_s" in r); return t[len(t) // 2]
a, b = curve("fp32"), curve("bf16")
print("| step | fp32 loss (25-step avg) | bf16 loss (25-step avg) | gap |\n|---|---|---|---|")
for i in range(24, len(a), 25):
    print(f"| {i + 1} | {avg(a, i):.4f} | {avg(b, i):.4f} | {avg(b, i) - avg(a, i):+.4f} |")
gap = max(abs(avg(a, i) - avg(b, i)) for i in range(24, len(a)))
va, vb = vals("fp32"), vals("bf16")
print(f"\nlargest gap of the 25-step averages after step 25: {gap:.4f}")
print("val loss: " + ", ".join(f"step {s}: fp32 {va[s]:.4f} / bf16 {vb[s]:.4f}" for s in sorted(va)))
print(f"median tokens/s: fp32 {tps('fp32'):.0f}, bf16 {tps('bf16'):.0f} ({tps('bf16') / tps('fp32'):.2f}x)")
PY
load_after
