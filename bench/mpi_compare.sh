#!/usr/bin/env bash
# Data parallel on one machine: tokens/s of 1 rank x 2 threads vs 2 ranks x 1
# thread, same model and the same global batch (the single rank accumulates
# 2 micro-batches), in the same run. Median tokens/s over the steps after
# the first 3.
#   bench/mpi_compare.sh [STEPS] [DATA]        (after scripts/setup.sh and `gpt2lab prepare`)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
STEPS=${1:-20}
DATA=${2:-data/sotu_gpt2}
B=${BUILD_DIR:-build}/gpt2lab
OUT=$(mktemp -d)
MODEL="--n-layer 6 --n-head 6 --n-embd 384 --block-size 128 -B 8 -T 128 --steps $STEPS --eval-every 0 --save-every 0 --quiet"
machine_line "L6 H6 C384 V50257, B=8 T=128, global batch 2 x 8 x 128 tokens"
machine_peaks 2
OMP_NUM_THREADS=2 $B train --data "$DATA" --out "$OUT/one" $MODEL --accum 2 --threads 2
mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 $B train --data "$DATA" --out "$OUT/two" $MODEL --threads 1
/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
def tps(run):
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/{run}/metrics.jsonl")]
    return statistics.median([r["tokens_per_s"] for r in rows if "tokens_per_s" in r][3:])
def losses(run):
    return [json.loads(l)["loss"] for l in open(f"{sys.argv[1]}/{run}/metrics.jsonl") if '"loss"' in l and "diverged" not in l]
one, two = tps("one"), tps("two")
diff = max(abs(a - b) / a for a, b in zip(losses("one"), losses("two")))
print(f"| layout | tokens/s |\n|---|---|\n| 1 rank x 2 threads (accum 2) | {one:.0f} |\n| 2 ranks x 1 thread (MPI) | {two:.0f} |")
print(f"\nratio 2 ranks / 1 rank: {two / one:.2f}x; losses agree to {diff:.1e} relative")
PY
machine_peaks 2
load_after
rm -rf "$OUT"
