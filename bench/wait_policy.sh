#!/usr/bin/env bash
# How OpenMP threads should wait, per workload (the choice src/cli/main.cpp
# makes): decode ms/token through `gpt2lab sample` (GPT-2 124M shape,
# random weights, bf16, 128 tokens after 16) and a training step of the
# study's shape (L6 H4 C256 V4096 B8 T128), each with passive waiting and
# with libgomp's bounded spin, on the machine as it is and beside one busy
# process (a shell loop: the "shared machine" case). Prints a Markdown table.
#   bench/wait_policy.sh [THREADS]      (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
T=${1:-2}
B=${BUILD_DIR:-build}
work=$(mktemp -d)
busy=""
trap '[ -n "$busy" ] && kill $busy 2>/dev/null; rm -rf "$work"' EXIT
machine_line "$T threads"
machine_peaks "$T"
"$B/gpt2lab" init --n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --out "$work/model" >/dev/null
prompt=$(seq -s ' ' 100 115)

# GPT2LAB_REEXECED=1 keeps the CLI from choosing for itself; an unset
# OMP_WAIT_POLICY is libgomp's bounded spin.
policy_env() { if [ "$1" = passive ]; then echo "OMP_WAIT_POLICY=PASSIVE"; else echo "GPT2LAB_REEXECED=1"; fi; }

decode() {  # POLICY -> best of 3 ms/token
  for _ in 1 2 3; do
    env "$(policy_env "$1")" "$B/gpt2lab" sample --model "$work/model" --prompt-ids "$prompt" --max-new-tokens 128 \
      --temperature 0 --format ids --weights bf16 --threads "$T" 2>&1 >/dev/null |
      sed -n 's/.*tok\/s, \([0-9.]*\) ms\/token.*/\1/p'
  done | sort -g | head -1
}

train() {  # POLICY -> median ms/step
  env "$(policy_env "$1")" "$B/bench/train_bench" --layers 6 --heads 4 --embd 256 --vocab 4096 -B 8 -T 128 \
    --threads "$T" --steps 15 --json --no-peak | sed -n 's/.*"ms": \([0-9.]*\).*/\1/p'
}

rows=()
for load in alone beside-busy; do
  if [ $load = beside-busy ]; then
    (while :; do :; done) &
    busy=$!
  fi
  for p in passive spin; do rows+=("$load $p $(decode $p) $(train $p)"); done
done
echo
echo "| machine | waiting | decode ms/token (bf16, CLI) | training step ms (study shape) |"
echo "|---|---|---|---|"
for r in "${rows[@]}"; do
  read -r load p d t <<<"$r"
  echo "| $load | $p | $d | $t |"
done
# The peaks after are the machine's, not those left beside our busy loop.
{ kill "$busy" && wait "$busy"; } 2>/dev/null || true
busy=""
machine_peaks "$T"
load_after
