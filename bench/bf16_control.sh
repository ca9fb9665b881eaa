#!/usr/bin/env bash
# The control that lets a study train in bf16 (`gpt2lab study --bf16`,
# docs/study/README.md): the same presets and budget run twice, fp32 and
# bf16, from the same study data, then
#   - the verdict of every claim under both (the report's rules), side by side;
#   - each run's final validation loss under both (paired by run name);
#   - wall time and runs per hour of each.
# bf16 may stand in for fp32 in a study only where no verdict changes.
# FP32_FROM=DIR (a committed study, e.g. docs/study/v3, of the same budget)
# skips the fp32 half: DIR's runs stand for it. The comparison:
# bench/bf16_against.py.
#   [FP32_FROM=DIR] bench/bf16_control.sh [PRESETS] [BUDGET] [CORPUS]   (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
# shellcheck source=bench/study_data.sh
source bench/study_data.sh
PRESETS=${1:-norm}
BUDGET=${2:-quick}
CORPUS=${3:-data/sotu}
BIN=${BUILD_DIR:-build}/gpt2lab
work=${BF16_CONTROL_DIR:-build/bf16-control}
rm -rf "$work" && mkdir -p "$work"
machine_line "presets '$PRESETS', budget $BUDGET, --jobs 2 --threads 2"
machine_peaks 2
# The study's data once (its BPE and shards), copied into both folders.
study_data "$BIN" "$BUDGET" "$CORPUS" "$work/base"
declare -A secs=()
precisions=(fp32 bf16)
[ -n "${FP32_FROM:-}" ] && precisions=(bf16)
for p in "${precisions[@]}"; do
  mkdir -p "$work/$p" && cp -r "$work/base/data" "$work/$p/data"
  flag=() && [ "$p" = bf16 ] && flag=(--bf16)
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # PRESETS is a list
  "$BIN" study --preset "${PRESETS// /,}" --budget "$BUDGET" --data "$CORPUS" --out "$work/$p" --jobs 2 --threads 2 \
    --quiet --no-report "${flag[@]}" 2> "$work/$p.log"
  secs[$p]=$(echo "$(date +%s.%N) - $t0" | bc)
  /usr/bin/python3 tools/report "$work/$p" --no-figures > /dev/null
done
if [ -n "${FP32_FROM:-}" ]; then
  /usr/bin/python3 bench/bf16_against.py "$FP32_FROM" "$work/bf16" "${secs[bf16]}"
else
  /usr/bin/python3 bench/bf16_against.py "$work/fp32" "$work/bf16" "${secs[bf16]}" "${secs[fp32]}"
fi
machine_peaks 2
load_after
