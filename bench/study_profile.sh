#!/usr/bin/env bash
# Where a study run's time goes, at each of study v3's shapes (the full
# budget's, docs/study/README.md), on one thread (what `--jobs 2 --threads
# 2` gives each run):
#   1. `train_bench --profile`: the training step per op (GEMMs, attention,
#      norms, the V 4,096 head, AdamW, ...), fp32 and --bf16;
#   2. `gpt2lab train` for STEPS steps with the study's evaluation,
#      diagnostics and checkpoint intervals, against the same run with none:
#      what evaluation, metrics and checkpoints add per step.
#   bench/study_profile.sh [STEPS] [DATA]   (after a Release build; DATA: a study's data/dataset, as bench/bf16_control.sh leaves)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
STEPS=${1:-300}
DATA=${2:-build/bf16-control/base/data/dataset}
B=${BUILD_DIR:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
machine_line "1 thread per run, $STEPS steps for the overheads"
machine_peaks 1
# name | L H C | B T | eval_every eval_batches diag_every save_every (v3 full budget)
shapes=(
  "lr-edge/norm|4 4 128|8 64|100 8 100 500"
  "translation|4 4 128|16 64|250 8 250 1000"
  "init (L24)|24 2 64|8 64|100 8 250 500"
  "depth L6|6 2 64|8 64|100 8 250 500"
  "depth L48|48 2 64|8 64|100 8 250 500"
  "atlas L12|12 2 64|8 64|50 8 50 500"
)
echo "| shape | fp32 ms/step | bf16 ms/step | bf16 speed-up | top ops (fp32, % of step) | eval+diag+save, % added |"
echo "|---|---|---|---|---|---|"
for s in "${shapes[@]}"; do
  IFS='|' read -r name model bt every <<<"$s"
  read -r L H C <<<"$model"
  read -r Bs T <<<"$bt"
  read -r ev eb dg sv <<<"$every"
  common=(--layers "$L" --heads "$H" --embd "$C" --vocab 4096 -B "$Bs" -T "$T" --threads 1 --steps 40 --no-peak)
  "$B/bench/train_bench" "${common[@]}" --profile > "$work/prof.txt" 2>&1
  fp=$("$B/bench/train_bench" "${common[@]}" 2>&1 | sed -n 's/.*threads: \([0-9.]*\) ms\/step.*/\1/p')
  bf=$("$B/bench/train_bench" "${common[@]}" --bf16 2>&1 | sed -n 's/.*threads: \([0-9.]*\) ms\/step.*/\1/p')
  top=$(grep '^| [a-z]' "$work/prof.txt" | grep -v '^| op' | grep -v '^| total' | sort -t'|' -k3 -gr | head -4 |
    awk -F'|' '{gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $4); printf "%s%s %s", (NR > 1 ? "; " : ""), $2, $4}')
  train=("$B/gpt2lab" train --data "$DATA" --n-layer "$L" --n-head "$H" --n-embd "$C" --block-size "$T"
    -B "$Bs" -T "$T" --steps "$STEPS" --threads 1 --seed 1 --quiet --force)
  t0=$(date +%s.%N)
  "${train[@]}" --out "$work/bare" --eval-every 0 --diag-every 0 --save-every 0 > /dev/null 2>&1
  t1=$(date +%s.%N)
  "${train[@]}" --out "$work/study" --eval-every "$ev" --eval-batches "$eb" --diag-every "$dg" --save-every "$sv" \
    > /dev/null 2>&1
  t2=$(date +%s.%N)
  added=$(echo "scale=1; 100 * (($t2 - $t1) - ($t1 - $t0)) / ($t1 - $t0)" | bc)
  echo "| $name (L$L C$C, B$Bs T$T) | $fp | $bf | $(echo "scale=2; $fp / $bf" | bc)x | $top | $added % |"
done
machine_peaks 1
load_after
