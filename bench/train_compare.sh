#!/usr/bin/env bash
# Training-step speed, gpt2lab vs PyTorch, same machine, same run, same threads:
# configs (a) GPT-2 124M B=4 T=64, (b) L6 C384 V50257 B=8 T=128,
# (c) L6 C384 V8192 B=16 T=256. PyTorch runs twice: as installed, and tuned
# (OMP_WAIT_POLICY=PASSIVE and tcmalloc when present); then gpt2lab --bf16 and
# PyTorch's CPU bf16 autocast (tuned). Prints a Markdown table with each
# row's share of the sgemm peak and of the FMA peak (bench/fma_peak.h).
#   bench/train_compare.sh [THREADS] [STEPS]      (after scripts/setup.sh)
# NARROW_BUILD=DIR adds an fp32 row per config from a build without AVX-512
# (bench/narrow_build.sh), with oneDNN held to AVX2: gpt2lab at the 256-bit
# FMA rate, which on Zen 4 is also its 512-bit rate. Debian's PyTorch runs its
# fp32 GEMMs through OpenBLAS's AVX2 kernels on either kind, so this row
# stands in for the Zen 4 ratio on a Zen 5 machine (docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
T=${1:-2}
STEPS=${2:-10}
BENCH=${BUILD_DIR:-build}/bench/train_bench
export OMP_NUM_THREADS=$T
TCMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null || true)
out=$(mktemp)
machine_line "$T threads, median of $STEPS steps"
CONFIGS=("a 12 12 768 50257 4 64" "b 6 6 384 50257 8 128" "c 6 6 384 8192 16 256")
for cfg in "${CONFIGS[@]}"; do
  read -r name L H C V B TT <<<"$cfg"
  args=(--layers "$L" --heads "$H" --embd "$C" --vocab "$V" -B "$B" -T "$TT" --threads "$T" --steps "$STEPS" --json)
  torch=(/usr/bin/python3 bench/train_torch.py "$L" "$H" "$C" "$V" "$B" "$TT" "$T" "$STEPS")
  row() { echo "{\"config\": \"$name\", \"run\": $1}" | tee -a "$out"; }
  # OMP_WAIT_POLICY=PASSIVE: what the gpt2lab CLI sets for itself (src/cli/main.cpp).
  row "$(OMP_WAIT_POLICY=PASSIVE "$BENCH" "${args[@]}")"
  if [[ -n ${NARROW_BUILD:-} ]]; then
    row "$(ONEDNN_MAX_CPU_ISA=AVX2 OMP_WAIT_POLICY=PASSIVE "$NARROW_BUILD/bench/train_bench" "${args[@]}" |
      sed 's/"gpt2lab"/"gpt2lab-avx2"/')"
  fi
  row "$("${torch[@]}" | sed 's/"pytorch"/"pytorch-default"/')"
  row "$(OMP_WAIT_POLICY=PASSIVE LD_PRELOAD=$TCMALLOC "${torch[@]}" | sed 's/"pytorch"/"pytorch-tuned"/')"
  row "$(OMP_WAIT_POLICY=PASSIVE "$BENCH" "${args[@]}" --no-peak --bf16)"
  row "$(OMP_WAIT_POLICY=PASSIVE LD_PRELOAD=$TCMALLOC "${torch[@]}" bf16 | sed 's/"pytorch-bf16"/"pytorch-tuned-bf16"/')"
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
native = [r["run"] for r in rows if r["run"]["impl"] == "gpt2lab"]  # peaks measured around each fp32 row
peak = max(r["sgemm_peak"] for r in native)
fma = max(r["fma_peak_512"] for r in native) or max(r["fma_peak_256"] for r in native)
fma256 = max(r["fma_peak_256"] for r in native)
print(f"\nsgemm peak (best of OpenBLAS and oneDNN, 2048^3, before and after each gpt2lab fp32 row): {peak:.0f} GFLOP/s")
print(f"FMA peak (bench/fma_peak.h, same times): {fma:.0f} GFLOP/s at the widest vector, {fma256:.0f} at 256 bits\n")
print("| config | impl | ms/step | tokens/s | GFLOP/s | % sgemm peak | % FMA peak | peak RSS MB | gpt2lab / tuned PyTorch fp32 |")
print("|---|---|---|---|---|---|---|---|---|")
for c in "abc":
    rs = {r["run"]["impl"]: r["run"] for r in rows if r["config"] == c}
    tuned = rs["pytorch-tuned"]["tokens_per_s"]
    for impl in ("gpt2lab", "gpt2lab-avx2", "pytorch-default", "pytorch-tuned", "gpt2lab-bf16", "pytorch-tuned-bf16"):
        if impl not in rs:
            continue
        r = rs[impl]
        ratio = f"{r['tokens_per_s'] / tuned:.2f}x" if impl.startswith("gpt2lab") else ""
        # The AVX2 row's own peaks are those of its width: 256-bit FMAs, oneDNN held to AVX2.
        sg, fp = (r["sgemm_peak"], fma256) if impl == "gpt2lab-avx2" else (peak, fma)
        print(f"| ({c}) | {impl} | {r['ms']:.0f} | {r['tokens_per_s']:.0f} | {r['gflops']:.0f} | {100 * r['gflops'] / sg:.0f}% | "
              f"{100 * r['gflops'] / fp:.0f}% | {r['rss_mb']:.0f} | {ratio} |")
PY
load_after
rm -f "$out"
