#!/usr/bin/env bash
# Builds llama.cpp (ggml's engine) for the side-by-side benchmarks and the
# GGUF export check, from the llama.cpp source that the node-llama-cpp npm
# package carries as a git bundle (llama/gitRelease.bundle), pinned by
# version and tarball SHA-256. Nothing is fetched at benchmark time.
#   scripts/fetch_llama_cpp.sh           # -> data/llama.cpp/build/bin/{llama-bench,llama-simple}
#   scripts/fetch_llama_cpp.sh --source  # only the source (data/llama.cpp/src)
# Idempotent. setup.sh fetches the source only, for its Python GGUF reader
# (gguf-py, which tests/reference/oracle/test_gguf.py reads our files with);
# the build takes minutes, and what needs it (bench/
# sample_compare.sh, oracle/test_gguf_llama_cpp.py) skips with a message
# without it.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=data
CACHE=$DATA/.tarballs
LOG=fetch_llama_cpp
PINS=("node-llama-cpp@3.22.1 a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f")
. scripts/npm_fetch.sh

DIR=$DATA/llama.cpp
BIN=$DIR/build/bin
SOURCE_ONLY=0
[ "${1:-}" = --source ] && SOURCE_ONLY=1
mkdir -p "$DATA"
if [ -f $DIR/src/CMakeLists.txt ]; then
  echo "$LOG: $DIR/src present"
else
  spec=node-llama-cpp@3.22.1
  tgz=$(fetch "$spec" "$(pin_for $spec)")
  extract_to "$tgz" $DIR/bundle "package/llama/gitRelease.bundle package/llama/llama.cpp.info.json" 2
  rm -rf $DIR/src
  # Cloned beside, then renamed: an interrupted clone is never taken as done.
  rm -rf $DIR/src.part
  git -c advice.detachedHead=false clone -q $DIR/bundle/gitRelease.bundle $DIR/src.part
  mv $DIR/src.part $DIR/src
  echo "$LOG: llama.cpp $(cat $DIR/bundle/llama.cpp.info.json | tr -d ' \n') from $spec"
fi
[ $SOURCE_ONLY = 1 ] && exit 0
if [ -x $BIN/llama-bench ] && [ -x $BIN/llama-simple ]; then
  echo "$LOG: $BIN present"
  exit 0
fi
# CPU only, tuned for this machine (as llama.cpp's own build does by
# default), no network client, static so the binaries run from anywhere.
cmake -S $DIR/src -B $DIR/build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
cmake --build $DIR/build -j "$(nproc)" --target llama-bench llama-simple >$DIR/build.log 2>&1 ||
  { tail -20 $DIR/build.log >&2; echo "$LOG: build failed (log: $DIR/build.log)" >&2; exit 1; }
echo "$LOG: built $BIN/llama-bench and $BIN/llama-simple"
