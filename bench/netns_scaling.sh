#!/usr/bin/env bash
# Data parallel across 2 simulated hosts (network namespaces, each link
# limited by tc to RATE): step time, tokens/s, time waiting for the gradient
# sum, and scaling efficiency = 2 ranks' tokens/s / (2 x 1 rank's), with the
# blocking sum after backward (--bucket-mb 0) and the sum overlapped with
# backward (--bucket-mb MB), all in one run. One thread per rank. Needs root.
#   bench/netns_scaling.sh [STEPS] [DATA] [RATES] [MB] [MODEL FLAGS...]
#   (defaults: 8 data/sotu_gpt2 "1gbit 10gbit" 25, GPT-2 124M with B=1 T=128)
# Medians over the steps after the first 2. Prints a Markdown table.
# MPI_MCA="--mca NAME VALUE ..." is added to mpirun's options (an algorithm).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
STEPS=${1:-8}
DATA=${2:-data/sotu_gpt2}
RATES=${3:-1gbit 10gbit}
MB=${4:-25}
shift $(($# < 4 ? $# : 4))
MODEL=("$@")
((${#MODEL[@]})) || MODEL=(--n-layer 12 --n-head 12 --n-embd 768 --block-size 1024)
BIN=$PWD/${BUILD_DIR:-build}/gpt2lab
NAME=g2lb$$
OUT=$(mktemp -d)
cleanup() {
  scripts/netns_cluster.sh down --name "$NAME"
  rm -rf "$OUT"
}
trap cleanup EXIT
COMMON=(--data "$(realpath "$DATA")" "${MODEL[@]}" -B 1 -T 128 --steps "$STEPS" --eval-every 0 --eval-batches 1
  --save-every 0 --diag-every 0 --threads 1 --quiet --comm-timeout 600)
export OMP_NUM_THREADS=1

machine_line "${MODEL[*]}, B=1 T=128 per rank, $STEPS steps${MPI_MCA:+; $MPI_MCA}"
machine_peaks 1
timeout 1800 "$BIN" train --out "$OUT/one" "${COMMON[@]}"
for rate in $RATES; do
  scripts/netns_cluster.sh up 2 --name "$NAME" --rate "$rate" >/dev/null
  read -ra options <"/run/gpt2lab-netns/$NAME/mpirun"
  read -ra extra <<<"${MPI_MCA:-}"
  options+=("${extra[@]}")
  for mb in 0 "$MB"; do
    timeout 1800 scripts/netns_cluster.sh exec 0 --name "$NAME" -- mpirun "${options[@]}" -np 2 \
      -x OMP_NUM_THREADS=1 "$BIN" train --out "$OUT/$rate-$mb" "${COMMON[@]}" --bucket-mb "$mb"
  done
  scripts/netns_cluster.sh down --name "$NAME"
done
machine_peaks 1
load_after

/usr/bin/python3 - "$OUT" "$MB" "$RATES" <<'PY'
import json, os, statistics, sys
out, mb, rates = sys.argv[1], sys.argv[2], sys.argv[3].split()
def rows(run):
    with open(os.path.join(out, run, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r.get("kind") == "train"][2:]
def med(run, key):
    return statistics.median(r[key] for r in rows(run))
one = med("one", "tokens_per_s")
print("| layout | link | gradient sum | step ms | tokens/s | waiting for the sum, ms/step | scaling efficiency |")
print("|---|---|---|---|---|---|---|")
print(f"| 1 rank | - | - | {med('one', 'ms'):.0f} | {one:.0f} | - | - |")
for rate in rates:
    for b in ("0", mb):
        run = f"{rate}-{b}"
        how = "blocking, after backward" if b == "0" else f"overlapped, {b} MB buckets"
        tps = med(run, "tokens_per_s")
        print(f"| 2 ranks, 2 hosts | {rate} | {how} | {med(run, 'ms'):.0f} | {tps:.0f} | "
              f"{med(run, 'comm_wait_ms'):.0f} | {tps / (2 * one):.2f} |")
PY
