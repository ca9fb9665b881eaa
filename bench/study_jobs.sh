#!/usr/bin/env bash
# The study's throughput on 2 threads, in two parts.
# 1. The headline: runs per hour at every shape of the v3 study (its
#    committed study.json.gz), two runs side by side on one thread each as
#    `--jobs 2` runs them, fp32 and --bf16 of this build and of an older
#    one (OLD_BUILD, a build folder; ratios to its fp32; the builds
#    alternate in each of SHAPE_ROUNDS rounds of SHAPE_STEPS-step runs):
#    bench/study_shapes.py.
#    SHAPE_STEPS=0 skips it.
# 2. Each run on both threads, one after
#    another (--jobs 1 --threads 2), against two runs at a time on one thread
#    each (--jobs 2 --threads 2), for presets of the quick budget. The study's
#    data (its BPE and shards) is built once and copied into every folder, so
#    the wall times are the runs' own. Also checks that --jobs 2 --threads 2
#    gives the runs of --jobs 1 --threads 1 bit for bit. PRESETS "" skips it.
#   [OLD_BUILD=DIR] [SHAPE_STEPS=200] [SHAPE_ROUNDS=3] bench/study_jobs.sh [PRESETS] [BUDGET] [CORPUS]
#   (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
# shellcheck source=bench/study_data.sh
source bench/study_data.sh
PRESETS=${1-norm init}  # "" (given) skips part 2
BUDGET=${2:-quick}
CORPUS=${3:-data/sotu}
BIN=${BUILD_DIR:-build}/gpt2lab
work=${STUDY_JOBS_DIR:-build/study-jobs}
rm -rf "$work" && mkdir -p "$work"
machine_line
machine_peaks 2
if [ "${SHAPE_STEPS:-200}" != 0 ]; then
  # v3's data (the full budget's 4,096-token BPE): the shapes' own vocabulary.
  study_data "$BIN" full "$CORPUS" "$work/v3"
  old=${OLD_BUILD:+$OLD_BUILD/gpt2lab}
  /usr/bin/python3 bench/study_shapes.py "${old:--}" "$BIN" "$work/v3/data/dataset" "$work/shapes" \
    "${SHAPE_STEPS:-200}" "${SHAPE_ROUNDS:-3}"
  machine_peaks 2
fi
[ -n "$PRESETS" ] || { load_after; exit 0; }
# The study's data once (its BPE and shards), copied into every folder.
study_data "$BIN" "$BUDGET" "$CORPUS" "$work/base"
echo "| preset | runs | --jobs 1 --threads 2 (s) | --jobs 2 --threads 2 (s) | runs/hour, 1x2 | runs/hour, 2x1 | 2x1 / 1x2 |"
echo "|---|---|---|---|---|---|---|"
for preset in $PRESETS; do
  declare -A secs=()
  for mode in "1 2" "2 2" "1 1"; do
    read -r jobs threads <<<"$mode"
    out="$work/$preset-j$jobs-t$threads"
    mkdir -p "$out" && cp -r "$work/base/data" "$out/data"
    t0=$(date +%s.%N)
    "$BIN" study --preset "$preset" --budget "$BUDGET" --data "$CORPUS" --out "$out" --jobs "$jobs" \
      --threads "$threads" --quiet --no-report 2> "$out.log"
    secs[$jobs$threads]=$(echo "$(date +%s.%N) - $t0" | bc)
  done
  /usr/bin/python3 - "$work" "$preset" "${secs[12]}" "${secs[22]}" <<'PY'
import json, os, sys
sys.path.insert(0, "tests/reference")
from harness import stable  # without the wall-clock fields, as the tests compare runs
work, preset, a, b = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
def study(name):
    with open(os.path.join(work, f"{preset}-{name}", "study.json")) as f:
        return json.load(f)
def metrics(name, run):
    with open(os.path.join(work, f"{preset}-{name}", run["metrics"])) as f:
        return stable([json.loads(l) for l in f])
runs = study("j2-t2")["runs"]
same = lambda x, y: all(metrics(x, r) == metrics(y, r) for r in runs if r["kind"] == "train")
n = len(runs)
print(f"| {preset} | {n} | {a:.1f} | {b:.1f} | {n * 3600 / a:.0f} | {n * 3600 / b:.0f} | {a / b:.2f} |")
print(f"<!-- {preset}: 2x1 bit-identical to 1x1: {same('j2-t2', 'j1-t1')}; 1x2 identical to 1x1: {same('j1-t2', 'j1-t1')} -->")
PY
done
machine_peaks 2
load_after
