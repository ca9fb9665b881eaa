#!/usr/bin/env bash
# Training-step speed, gpt2lab vs PyTorch, same machine, same run, same threads:
# configs (a) GPT-2 124M B=4 T=64, (b) L6 C384 V50257 B=8 T=128,
# (c) L6 C384 V8192 B=16 T=256. PyTorch runs twice: as installed, and tuned
# (OMP_WAIT_POLICY=PASSIVE and tcmalloc when present); then gpt2lab --bf16 and
# PyTorch's CPU bf16 autocast (tuned). Prints a Markdown table.
#   bench/train_compare.sh [THREADS] [STEPS]      (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2}
STEPS=${2:-10}
BENCH=${BUILD_DIR:-build}/bench/train_bench
export OMP_NUM_THREADS=$T
TCMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null || true)
out=$(mktemp)
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $T threads, median of $STEPS steps"
CONFIGS=("a 12 12 768 50257 4 64" "b 6 6 384 50257 8 128" "c 6 6 384 8192 16 256")
for cfg in "${CONFIGS[@]}"; do
  read -r name L H C V B TT <<<"$cfg"
  # OMP_WAIT_POLICY=PASSIVE: what the gpt2lab CLI sets for itself (src/cli/main.cpp).
  echo "{\"config\": \"$name\", \"run\": $(OMP_WAIT_POLICY=PASSIVE $BENCH --layers $L --heads $H --embd $C --vocab $V -B $B -T $TT --threads $T --steps $STEPS --json)}" | tee -a "$out"
  echo "{\"config\": \"$name\", \"run\": $(/usr/bin/python3 bench/train_torch.py $L $H $C $V $B $TT $T $STEPS | sed 's/"pytorch"/"pytorch-default"/')}" | tee -a "$out"
  echo "{\"config\": \"$name\", \"run\": $(OMP_WAIT_POLICY=PASSIVE LD_PRELOAD=$TCMALLOC /usr/bin/python3 bench/train_torch.py $L $H $C $V $B $TT $T $STEPS | sed 's/"pytorch"/"pytorch-tuned"/')}" | tee -a "$out"
  echo "{\"config\": \"$name\", \"run\": $(OMP_WAIT_POLICY=PASSIVE $BENCH --layers $L --heads $H --embd $C --vocab $V -B $B -T $TT --threads $T --steps $STEPS --json --no-peak --bf16)}" | tee -a "$out"
  echo "{\"config\": \"$name\", \"run\": $(OMP_WAIT_POLICY=PASSIVE LD_PRELOAD=$TCMALLOC /usr/bin/python3 bench/train_torch.py $L $H $C $V $B $TT $T $STEPS bf16 | sed 's/"pytorch-bf16"/"pytorch-tuned-bf16"/')}" | tee -a "$out"
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
peak = max(r["run"].get("sgemm_peak", 0) for r in rows)  # measured around each fp32 gpt2lab row
print(f"\nsgemm peak (best of OpenBLAS and oneDNN, 2048^3, before and after each gpt2lab fp32 row): {peak:.0f} GFLOP/s\n")
print("| config | impl | ms/step | tokens/s | GFLOP/s | % sgemm peak | peak RSS MB | gpt2lab / tuned PyTorch fp32 |")
print("|---|---|---|---|---|---|---|---|")
for c in "abc":
    rs = {r["run"]["impl"]: r["run"] for r in rows if r["config"] == c}
    tuned = rs["pytorch-tuned"]["tokens_per_s"]
    for impl in ("gpt2lab", "pytorch-default", "pytorch-tuned", "gpt2lab-bf16", "pytorch-tuned-bf16"):
        r = rs[impl]
        ratio = f"{r['tokens_per_s'] / tuned:.2f}x" if impl.startswith("gpt2lab") else ""
        print(f"| ({c}) | {impl} | {r['ms']:.0f} | {r['tokens_per_s']:.0f} | {r['gflops']:.0f} | {100 * r['gflops'] / peak:.0f}% | "
              f"{r['rss_mb']:.0f} | {ratio} |")
PY
rm -f "$out"
