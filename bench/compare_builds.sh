#!/usr/bin/env bash
# Two builds of gpt2lab side by side, in one run, alternating A B A B...:
# training tokens/s (from metrics.jsonl) and generation wall time. For a
# refactor that must not slow anything down; read the ratios, not the times.
#   bench/compare_builds.sh OLD_GPT2LAB NEW_GPT2LAB [ROUNDS] [THREADS]
# Needs the GPT-2 tokenizer and corpus (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
A=$1 B=$2 ROUNDS=${3:-3} T=${4:-2}
work=$(mktemp -d /tmp/gpt2lab-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Both builds read the same data (an old build looks in its own source tree).
export GPT2LAB_DATA=${GPT2LAB_DATA:-$PWD/data}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$T
machine_line "$T threads"
# The machine's sgemm peak, measured now (train_bench), with the same model's
# step at B's build for scale: the table is read against it.
BENCH=${BUILD_DIR:-build}/bench/train_bench
if [ -x "$BENCH" ]; then
  "$BENCH" --layers 4 --heads 4 --embd 256 -B 8 -T 256 --steps 3 --threads "$T" 2>&1 | grep -E "^sgemm peak|GFLOP/s \(" |
    sed 's/^/# /'
else
  machine_peaks "$T"
fi
echo "# A = $A"
echo "# B = $B"
"$B" prepare --out "$work/data" --threads "$T" > /dev/null
"$B" init --out "$work/model" --n-layer 6 --n-head 6 --n-embd 384 --block-size 256 > /dev/null
MODEL=(--n-layer 4 --n-head 4 --n-embd 256 --block-size 256)
train() {  # BIN OUT -> median tokens/s of steps 2.. of one run
  "$1" train "${MODEL[@]}" --data "$work/data" --out "$2" -B 8 -T 256 --steps 12 --eval-every 0 --save-every 0 \
    --diag-every 1000 --threads "$T" --quiet --force
  python3 -c "import json,statistics,sys; r=[json.loads(l) for l in open(sys.argv[1])]; \
print(statistics.median(x['tokens_per_s'] for x in r if 'tokens_per_s' in x and x['step']>=2))" "$2/metrics.jsonl"
}
sample() {  # BIN -> seconds for 128 new tokens (greedy), prompt included
  local t0 t1
  t0=$(date +%s.%N)
  "$1" sample --model "$work/model" --prompt "The state of the union is" --max-new-tokens 128 --temperature 0 \
    --threads "$T" > /dev/null 2>&1
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=${!side}
    echo "$side train $(train "$bin" "$work/run-$side") sample $(sample "$bin")"
  done
done | tee "$work/rows"
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = lambda side, i: statistics.median(float(r[i]) for r in rows if r[0] == side)
ta, tb, sa, sb = med("A", 2), med("B", 2), med("A", 4), med("B", 4)
spread = lambda side, i: (max(float(r[i]) for r in rows if r[0] == side) - min(float(r[i]) for r in rows if r[0] == side))
print("\n| measure | A (old) | B (new) | B / A | A's own spread |")
print("|---|---|---|---|---|")
print(f"| train tokens/s (median) | {ta:.0f} | {tb:.0f} | {tb/ta:.3f} | {spread('A', 2)/ta:.1%} |")
print(f"| sample 128 tokens, s (median) | {sa:.3f} | {sb:.3f} | {sb/sa:.3f} | {spread('A', 4)/sa:.1%} |")
PY
load_after
