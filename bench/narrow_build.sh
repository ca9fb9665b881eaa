#!/usr/bin/env bash
# A build of the benchmarks without AVX-512 (x86-64-v3: AVX2, FMA, F16C), for
# bench/train_compare.sh's NARROW_BUILD row: gpt2lab held to 256-bit FMAs,
# which is what Zen 4 executes a 512-bit FMA as. Run after scripts/setup.sh
# (it uses the same Debian packages); nothing is fetched.
#   bench/narrow_build.sh [DIR]      (default build-avx2)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build-avx2}
cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=Release -DGPT2LAB_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=x86-64-v3" \
  -DGPT2LAB_TESTS=OFF -DGPT2LAB_MPI=OFF -DGPT2LAB_PYTHON_MODULE=OFF >/dev/null
cmake --build "$DIR" -j "$(nproc)" --target train_bench
echo "built $DIR/bench/train_bench; run: NARROW_BUILD=$DIR bench/train_compare.sh"
