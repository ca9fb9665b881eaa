#!/usr/bin/env bash
# The quality cost of decoding with bf16 and int8 weights, on a model
# trained here on the default corpus (no real GPT-2 weights can be fetched):
#   1. val loss and perplexity with every prediction made by a decode step
#      (`gpt2lab eval --weights`), f32 / bf16 / int8, beside the batched
#      f32 forward;
#   2. greedy continuations of val prompts: how many of the new tokens
#      equal f32's, and how long the common prefix runs.
#   bench/int8_quality.sh            (after scripts/demo.sh: needs data/sotu_gpt2)
#   RUN=out/quality STEPS=1500 BATCHES=40 bench/int8_quality.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
B=${BUILD_DIR:-build}/gpt2lab
RUN=${RUN:-out/quality-L6}
STEPS=${STEPS:-600}
BATCHES=${BATCHES:-40}
DATA=data/sotu_gpt2
[ -f $DATA/val.bin ] || { echo "int8_quality: $DATA is missing: run scripts/demo.sh first" >&2; exit 1; }
machine_line
if ! grep -q '"completed"' "$RUN/result.json" 2>/dev/null; then
  RESUME=""
  [ -f "$RUN/config.json" ] && RESUME=--resume
  $B train --data $DATA --out "$RUN" $RESUME --n-layer 6 --n-head 6 --n-embd 384 --block-size 256 \
    -B 8 -T 128 --steps "$STEPS" --lr 1e-3 --warmup $((STEPS / 10)) --min-lr 1e-4 --eval-every "$STEPS" \
    --save-every 200 --seed 1337 --quiet
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$B eval --model "$RUN" --data $DATA -B 4 -T 128 --batches "$BATCHES" --json >"$work/forward.json"
for w in f32 bf16 int8; do
  $B eval --model "$RUN" --data $DATA -B 4 -T 128 --batches "$BATCHES" --weights $w --json >"$work/eval-$w.json"
done
# 16 prompts of 32 val tokens (llm.c shard: 256 int32 header, then uint16 ids).
/usr/bin/python3 - $DATA/val.bin >"$work/prompts.txt" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
ids = struct.unpack(f"<{(len(data) - 1024) // 2}H", data[1024:])
step = len(ids) // 16
for k in range(16):
    print(" ".join(map(str, ids[k * step:k * step + 32])))
PY
for w in f32 bf16 int8; do
  while read -r p; do
    $B sample --model "$RUN" --prompt-ids "$p" --max-new-tokens 64 --temperature 0 --format ids --weights $w --quiet
  done <"$work/prompts.txt" >"$work/greedy-$w.txt"
done
/usr/bin/python3 - "$work" "$RUN" <<'PY'
import json, os, sys
work, run = sys.argv[1], sys.argv[2]
fwd = json.load(open(os.path.join(work, "forward.json")))
print(f"\nmodel: {run} (L6 H6 C384, default corpus); val: {fwd['tokens']} predictions\n")
print("| weights | path | val loss | perplexity | Δ loss vs f32 decode | greedy tokens equal to f32 | mean common prefix |")
print("|---|---|---|---|---|---|---|")
print(f"| f32 | batched forward | {fwd['loss']:.5f} | {fwd['perplexity']:.3f} | | | |")
base = json.load(open(os.path.join(work, "eval-f32.json")))["loss"]
ref = [l.split() for l in open(os.path.join(work, "greedy-f32.txt"))]
for w in ("f32", "bf16", "int8"):
    e = json.load(open(os.path.join(work, f"eval-{w}.json")))
    got = [l.split() for l in open(os.path.join(work, f"greedy-{w}.txt"))]
    same = sum(a == b for r, g in zip(ref, got) for a, b in zip(r, g))
    total = sum(len(r) for r in ref)
    prefix = []
    for r, g in zip(ref, got):
        n = 0
        while n < min(len(r), len(g)) and r[n] == g[n]:
            n += 1
        prefix.append(n)
    print(f"| {w} | decode | {e['loss']:.5f} | {e['perplexity']:.3f} | {e['loss'] - base:+.5f} "
          f"| {same}/{total} | {sum(prefix) / len(prefix):.1f} of 64 |")
PY
