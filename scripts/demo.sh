#!/usr/bin/env bash
# The main job on the default data: set-up (packages, data, build), prepare
# the State of the Union corpus with GPT-2's tokenizer, train a small Pre-LN
# GPT-2 with GPT-2 init for a few minutes on 2 cores, then sample from it.
# Idempotent: a finished run is kept (delete runs/demo to train again).
#   OUT=runs/demo STEPS=400 THREADS=2 scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
B=${BUILD_DIR:-build}/gpt2lab
OUT=${OUT:-runs/demo}
STEPS=${STEPS:-400}
THREADS=${THREADS:-2}

if [ ! -f data/sotu_gpt2/train.bin ]; then
  $B prepare --input data/sotu --tokenizer gpt2 --out data/sotu_gpt2
fi

if [ -f "$OUT/result.json" ] && grep -q '"completed"' "$OUT/result.json"; then
  echo "demo: $OUT already trained (delete it to train again)"
else
  RESUME=""
  [ -f "$OUT/config.json" ] && RESUME=--resume   # an interrupted demo continues
  $B train --data data/sotu_gpt2 --out "$OUT" $RESUME \
    --n-layer 4 --n-head 4 --n-embd 256 --block-size 128 --norm pre --init gpt2 \
    -B 8 -T 128 --steps "$STEPS" --lr 1e-3 --warmup $((STEPS / 10)) --min-lr 1e-4 \
    --eval-every 100 --eval-batches 10 --diag-every 100 --save-every 100 --threads "$THREADS" --seed 1337
fi

echo
echo "== loss (every 50 steps) =="
/usr/bin/python3 - "$OUT/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = {r["step"]: r["loss"] for r in rows if "loss" in r and "diverged" not in r}
val = {r["step"]: r["val_loss"] for r in rows if "val_loss" in r}
for s in sorted(train):
    if s % 50 == 0 or s == max(train):
        print(f"step {s:4d}  train loss {train[s]:.3f}" + (f"  val loss {val[s]:.3f}" if s in val else ""))
if val:
    print(f"final val loss {val[max(val)]:.3f} (step {max(val)})")
PY

echo
echo "== sample (temperature 0.8, top-k 40) =="
$B sample --model "$OUT/checkpoint" --prompt "The state of the Union is" --max-new-tokens 60 \
  --temperature 0.8 --top-k 40 --seed 42 --threads "$THREADS"
