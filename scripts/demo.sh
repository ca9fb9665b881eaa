#!/usr/bin/env bash
# The main job on the default data: set-up, then a small GPT-2 from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
B=build/gpt2lab
OUT=${OUT:-runs/demo}
mkdir -p "$(dirname "$OUT")"
$B init --n-layer 6 --n-head 6 --n-embd 384 --block-size 256 --vocab-size 50257 \
  --norm pre --init gpt2 --seed 1337 --out "$OUT/init" --force
$B info "$OUT/init"
