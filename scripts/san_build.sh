#!/usr/bin/env bash
# Configures and builds the sanitized tree that scripts/sanitize.sh (the test
# suite under ASan+UBSan) and scripts/fuzz.sh (the libFuzzer targets) share:
# one clang build of the whole library with -DGPT2LAB_FUZZ=ON, i.e.
# -fsanitize=address,undefined (float-cast-overflow included in clang's
# "undefined") -fno-sanitize-recover=all, plus the coverage hooks libFuzzer
# needs. Building the instrumented library once and linking both the tests
# and the fuzz targets against it halves the CI time of these checks.
#   scripts/san_build.sh [TARGET ...]      # default: everything
#   SAN_BUILD_DIR=... JOBS=...             # default build-san, 2 jobs
# -O2 keeps the numerical tests fast enough; -gline-tables-only gives file:line
# in every report at a fraction of -g's compile and link time; no NDEBUG, so
# assert() is live. -Werror: our code builds without warnings under clang too
# (a file that fails is rebuilt, and fails again, on every rerun).
# GPT2LAB_UNITY_CLI (the default, named here because this build depends on
# it for its time): the command line's 20 files as two units, so CLI11's
# header-only implementation is compiled twice, not 20 times.
# -no-pie: the executables are linked at a fixed address, so the loader has
# no relocations to apply to them (217,000 in the sanitized gpt2lab, whose
# pages were each copied on write at every start). The tests start the
# sanitized CLI hundreds of times, so the pages each start no longer
# faults in add up (docs/performance.md has the counts).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${SAN_BUILD_DIR:-build-san}
JOBS=${JOBS:-2}

# clang and its runtimes (libFuzzer, sanitizers); Debian 12 ships clang 14.
# scripts/setup.sh installs them; this covers a machine set up before that.
if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "san_build: installing clang libclang-rt-14-dev libomp-dev"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev libomp-dev
fi

mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS=-Werror -DGPT2LAB_FUZZ=ON -DGPT2LAB_TESTS=ON -DGPT2LAB_BENCH=OFF \
  -DGPT2LAB_UNITY_CLI=ON -DCMAKE_EXE_LINKER_FLAGS=-no-pie >"$BUILD_DIR/configure.log"
start=$(date +%s)
targets=()
for t in "$@"; do targets+=(--target "$t"); done
# The log goes to a file; its tail is shown only if the build fails.
if ! cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}" >"$BUILD_DIR/build.log" 2>&1; then
  tail -60 "$BUILD_DIR/build.log" >&2
  echo "san_build: build failed (log: $BUILD_DIR/build.log)" >&2
  exit 1
fi
echo "san_build: $BUILD_DIR built in $(( $(date +%s) - start )) s${*:+ (targets: $*)}"
