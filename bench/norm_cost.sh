#!/usr/bin/env bash
# The cost of RMSNorm against LayerNorm in a training step (the atlas
# study's "RMSNorm matches LayerNorm at lower cost"): the same model with
# each norm type, alternating LN, RMS, LN, RMS, ... so that a change in the
# machine's load hits both alike, REPEATS times per shape. Shapes: the
# atlas's sweep (n_embd 64) at 12 and 48 layers, and a wider model (L6
# C384) where the norms are a smaller share of the step. Prints the CPU,
# the load average before and after, every repeat's median ms/step, and a
# Markdown table (median over repeats, min-max, RMS/LN ratio).
#   bench/norm_cost.sh [THREADS] [STEPS] [REPEATS]   (after a Release build; minutes at the defaults on 1 thread)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
TH=${1:-1}
STEPS=${2:-30}
REPEATS=${3:-5}
BENCH=${BUILD_DIR:-build}/bench/train_bench
out=$(mktemp)
trap 'rm -f "$out"' EXIT
machine_line "$TH thread(s), median of $STEPS steps per run, $REPEATS repeats"
machine_peaks "$TH"
# name: L H C V B T
CONFIGS=("atlas-L12 12 2 64 4096 8 64" "atlas-L48 48 2 64 4096 8 64" "L6-C384 6 6 384 4096 8 128")
for cfg in "${CONFIGS[@]}"; do
  read -r name L H C V B T <<<"$cfg"
  for rep in $(seq "$REPEATS"); do
    for nt in layernorm rmsnorm; do
      run=$(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$TH $BENCH --layers "$L" --heads "$H" --embd "$C" --vocab "$V" \
        -B "$B" -T "$T" --threads "$TH" --steps "$STEPS" --json --no-peak --norm-type $nt)
      echo "{\"config\": \"$name\", \"norm_type\": \"$nt\", \"repeat\": $rep, \"run\": $run}" | tee -a "$out"
    done
  done
done
machine_peaks "$TH"
load_after
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| shape | norm | ms/step, median of repeats | min–max | RMSNorm / LayerNorm |")
print("|---|---|---|---|---|")
for name in dict.fromkeys(r["config"] for r in rows):
    ms = {nt: [r["run"]["ms"] for r in rows if r["config"] == name and r["norm_type"] == nt]
          for nt in ("layernorm", "rmsnorm")}
    med = {nt: statistics.median(v) for nt, v in ms.items()}
    for nt, v in ms.items():
        ratio = f"{med['rmsnorm'] / med['layernorm']:.3f}" if nt == "rmsnorm" else ""
        print(f"| {name} | {nt} | {med[nt]:.2f} | {min(v):.2f}–{max(v):.2f} | {ratio} |")
PY
