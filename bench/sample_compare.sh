#!/usr/bin/env bash
# Generation speed, gpt2lab vs PyTorch, same machine, same run, same threads.
#   bench/sample_compare.sh [THREADS]      (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2}
BENCH=${BUILD_DIR:-build}/bench/sample_bench
export OMP_NUM_THREADS=$T
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $T threads"
out=$(mktemp)
OMP_WAIT_POLICY=PASSIVE $BENCH --threads "$T" --json | tee -a "$out"
OMP_WAIT_POLICY=PASSIVE $BENCH --threads "$T" --bf16 --json | tee -a "$out"
# PyTorch at its best here: passive OpenMP waiting (its pool and OpenBLAS's fight otherwise).
OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/sample_torch.py "$T" | tee -a "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
get = lambda impl, dt: next(r for r in rows if r["impl"] == impl and r["dtype"] == dt)
print("\n| mode | gpt2lab prefill tok/s | PyTorch prefill tok/s | ratio | gpt2lab decode ms/token | PyTorch decode ms/token | ratio | bandwidth bound ms/token |")
print("|---|---|---|---|---|---|---|---|")
for dt in ("f32", "bf16"):
    g, p = get("gpt2lab", dt), get("pytorch", dt)
    print(f"| {dt} | {g['prefill_tok_s']:.0f} | {p['prefill_tok_s']:.0f} | {g['prefill_tok_s']/p['prefill_tok_s']:.2f}x | "
          f"{g['decode_ms']:.2f} | {p['decode_ms']:.2f} | {g['decode_ms']/p['decode_ms']:.2f}x | {g['bandwidth_bound_ms']:.2f} "
          f"({g['bandwidth_gb_s']:.0f} GB/s) |")
PY
rm -f "$out"
