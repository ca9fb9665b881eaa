#!/usr/bin/env bash
# The control that lets a study train in bf16 (`gpt2lab study --bf16`,
# docs/study/README.md): the same presets and budget run twice, fp32 and
# bf16, from the same study data, then
#   - the verdict of every claim under both (the report's rules), side by side;
#   - each run's final validation loss under both (paired by run name);
#   - wall time and runs per hour of each.
# bf16 may stand in for fp32 in a study only where no verdict changes.
# FP32_FROM=DIR (a committed study, e.g. docs/study/v3, of the same budget)
# skips the fp32 half: DIR's runs stand for it (bench/bf16_against.py).
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
  machine_peaks 2
  load_after
  exit 0
fi
/usr/bin/python3 - "$work" "${secs[fp32]}" "${secs[bf16]}" <<'PY'
import json, os, sys
work, a, b = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def verdicts(p):
    rows, on = {}, False
    for line in open(os.path.join(work, p, "report.md")):
        if line.startswith("| claim | verdict |"):
            on = True
        elif on and not line.startswith("|"):
            break
        elif on and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[cells[0]] = cells[1]
    return rows
def losses(p):
    with open(os.path.join(work, p, "study.json")) as f:
        s = json.load(f)
    return {r["name"]: r["outcome"].get("val_loss") for r in s["runs"]
            if r.get("kind") == "train" and isinstance(r.get("outcome"), dict)}, len(s["runs"])
va, vb = verdicts("fp32"), verdicts("bf16")
print("| claim | fp32 | bf16 | same |\n|---|---|---|---|")
for claim in va:
    print(f"| {claim} | {va[claim]} | {vb.get(claim, '-')} | {'yes' if va[claim] == vb.get(claim) else '**no**'} |")
(la, n), (lb, _) = losses("fp32"), losses("bf16")
d = [abs(la[k] - lb[k]) for k in la if k in lb and la[k] is not None and lb[k] is not None]
print(f"\nverdicts changed: {sum(va[c] != vb.get(c) for c in va)} of {len(va)}")
if d:
    print(f"final val loss, bf16 - fp32 over {len(d)} paired runs: mean |diff| {sum(d) / len(d):.4f}, max {max(d):.4f}")
print(f"wall: fp32 {a:.1f} s, bf16 {b:.1f} s ({a / b:.2f}x); runs/hour {n * 3600 / a:.0f} vs {n * 3600 / b:.0f}")
PY
machine_peaks 2
load_after
