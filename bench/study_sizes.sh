#!/usr/bin/env bash
# Training-step speed at the study's model sizes (the `full` budget's
# shapes, src/study/budget.cpp), gpt2lab vs PyTorch in the same run, at 1 and
# 2 threads: the study's speed decides how much evidence fits its budget,
# and at these small sizes per-step overheads, not the matmuls, dominate.
# Prints a Markdown table with the CPU, the sgemm peak measured in the same
# run and the load average.
#   bench/study_sizes.sh [STEPS]      (after a Release build)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
STEPS=${1:-20}
BENCH=${BUILD_DIR:-build}/bench/train_bench
out=$(mktemp)
trap 'rm -f "$out"' EXIT
machine_line "median of $STEPS steps"
# preset: L H C V B T
CONFIGS=("lr-edge,norm 4 4 128 4096 8 64" "init 24 2 64 4096 8 64" "depth-L6 6 2 64 4096 8 64"
         "grad-at-init-L24 24 4 128 4096 8 64" "v1-norm 6 4 256 4096 8 128")
first=1
for cfg in "${CONFIGS[@]}"; do
  read -r name L H C V B T <<<"$cfg"
  for th in 1 2; do
    # The sgemm peak at each thread count, measured in the first shape's runs.
    peak=--no-peak; [ $first = 1 ] && peak=""
    echo "{\"config\": \"$name\", \"threads\": $th, \"run\": $(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$th $BENCH --layers $L --heads $H --embd $C --vocab $V -B $B -T $T --threads $th --steps $STEPS --json $peak)}" >>"$out"
    echo "{\"config\": \"$name\", \"threads\": $th, \"run\": $(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$th /usr/bin/python3 bench/train_torch.py $L $H $C $V $B $T $th $STEPS)}" >>"$out"
  done
  first=0
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
peak = {r["threads"]: r["run"]["sgemm_peak"] for r in rows if r["run"].get("sgemm_peak")}
print("\nsgemm peak (2048^3, same run): " + ", ".join(f"{p:.0f} GFLOP/s at {t} thread(s)" for t, p in sorted(peak.items())) + "\n")
print("| study shape | threads | gpt2lab ms/step | PyTorch ms/step | gpt2lab / PyTorch speed | gpt2lab % of sgemm peak (same threads) |")
print("|---|---|---|---|---|---|")
seen = []
for r in rows:
    key = (r["config"], r["threads"])
    if key in seen:
        continue
    seen.append(key)
    pair = {x["run"]["impl"]: x["run"] for x in rows if (x["config"], x["threads"]) == key}
    g, t = pair["gpt2lab"], pair["pytorch"]
    print(f"| {key[0]} | {key[1]} | {g['ms']:.1f} | {t['ms']:.1f} | "
          f"{t['ms'] / g['ms']:.2f}x | {g['gflops'] / peak[key[1]] * 100:.0f}% |")
PY
load_after
