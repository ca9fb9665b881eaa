#!/usr/bin/env bash
# How far the study's training step is from the best that moving data could
# make it: this build's train_bench beside a copy of it patched
# (bench/warm_bound.patch) so that every layer's activations share the first
# layer's buffers, which keeps each step's operations and shapes but has its
# activations in cache (its numbers are meaningless). fp32 and --bf16, one
# thread, at the v3 study's main shapes, alternated in each of ROUNDS rounds
# with an older build's fp32 step (OLD_BUILD, a build folder with
# bench/train_bench) as the reference; then the all-in-cache bf16 step with
# its products at the bf16 dot products' peak (bench/warm_bound.py).
#   [OLD_BUILD=DIR] [ROUNDS=3] [STEPS=30] bench/warm_bound.sh   (after a Release build)
# The patched copy is of the committed HEAD, built in build/warm-bound.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
new=${BUILD_DIR:-build}/bench/train_bench
[ -x "$new" ] || { echo "warm_bound: build $new first (cmake --build build --target train_bench)" >&2; exit 2; }
work=${WARM_BOUND_DIR:-build/warm-bound}
rm -rf "$work" && mkdir -p "$work/src"
git archive HEAD | tar -x -C "$work/src"
patch -d "$work/src" -p1 --quiet < bench/warm_bound.patch
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGPT2LAB_TESTS=OFF \
  -DGPT2LAB_PYTHON_MODULE=OFF > "$work/cmake.log"
cmake --build "$work/build" -j "$(nproc)" --target train_bench > "$work/build.log"
machine_line "1 thread"
old=${OLD_BUILD:+$OLD_BUILD/bench/train_bench}
/usr/bin/python3 bench/warm_bound.py "${old:--}" "$new" "$work/build/bench/train_bench" "${ROUNDS:-3}" "${STEPS:-30}"
load_after
