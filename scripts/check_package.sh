#!/usr/bin/env bash
# The installed package works for a user's project: installs the build into
# a scratch prefix, builds examples/ against it with CMake (find_package)
# and with pkg-config, and runs both on a tiny checkpoint. Run by
# scripts/test.sh after the build; prints PASS or fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
scratch=$(mktemp -d /tmp/gpt2lab-package.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
cmake --install "$BUILD" --prefix "$prefix" > "$scratch/install.log"
test -f "$prefix/include/gpt2lab/train/trainer.h"
test -f "$prefix/include/gpt2lab/version.h"
test -d "$prefix/share/gpt2lab/tools/report"
# The installed tools find their shared metrics reader (tools/metrics_file.py):
# the installed plot draws a run.
mkdir -p "$scratch/run"
printf '%s\n' '{"kind":"train","step":0,"loss":5.5,"lr":0.001,"grad_norm":1.0,"tokens_per_s":100}' \
  '{"kind":"eval","step":1,"val_loss":5.4}' > "$scratch/run/metrics.jsonl"
"$prefix/bin/gpt2lab" plot "$scratch/run" --out "$scratch/run.html" > /dev/null
test -s "$scratch/run.html"
# The installed report finds every module it imports (tools/study_pack.py was
# not installed, and every study's report failed to start from an install).
/usr/bin/python3 "$prefix/share/gpt2lab/tools/report" --help | grep -q "^usage: report OUT"
# GPT-2's tokenizer goes with it once fetched: an installed copy needs no source tree.
if [ -f data/gpt2/encoder.json ]; then test -f "$prefix/share/gpt2lab/data/gpt2/encoder.json"; fi
# Internals are not installed: a user's code cannot reach them by accident.
test ! -e "$prefix/include/gpt2lab/train/run_dir.h" && test ! -d "$prefix/include/core"

cmake -S examples -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$scratch/configure.log"
cmake --build "$scratch/build" -j 2 > "$scratch/build.log"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  g++ -O1 examples/generate/main.cpp $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs gpt2lab) \
  -o "$scratch/generate_pc"

# A tiny checkpoint with a vocabulary of our own (no download needed).
"$prefix/bin/gpt2lab" tokenizer train --input README.md --vocab-size 300 --out "$scratch/tok" > /dev/null
"$prefix/bin/gpt2lab" init --out "$scratch/ckpt" --n-layer 1 --n-head 2 --n-embd 32 --block-size 64 \
  --vocab-size 300 > /dev/null
out1=$("$scratch/build/generate" "$scratch/ckpt" "The model" 8 2>&1 || true)
echo "$out1" | grep -q "tokens but the model" || { echo "$out1"; echo "FAIL: expected the tokenizer check"; exit 1; }
# With the tokenizer recorded in the checkpoint, both builds generate the same text.
python3 - "$scratch/ckpt/config.json" "$scratch/tok" <<'PY'
import json, sys
p, tok = sys.argv[1], sys.argv[2]
c = json.load(open(p)); c["tokenizer"] = tok
json.dump(c, open(p, "w"))
PY
a=$("$scratch/build/generate" "$scratch/ckpt" "The model" 8)
b=$("$scratch/generate_pc" "$scratch/ckpt" "The model" 8)
[ "$a" = "$b" ] || { echo "FAIL: CMake and pkg-config builds differ"; exit 1; }
echo "$a" | head -1
# The Python module is installed beside it when it was built (pybind11
# present): it imports from the prefix and generates from the checkpoint.
if compgen -G "$BUILD/python/gpt2lab/_gpt2lab.*.so" > /dev/null; then
  site=$(dirname "$(dirname "$(find "$prefix" -name '_gpt2lab.*.so' | head -1)")")
  PYTHONPATH=$site /usr/bin/python3 -c "import gpt2lab, sys; print('python:', gpt2lab.Model.load(sys.argv[1]).generate([1, 2], max_new_tokens=4, seed=1))" "$scratch/ckpt"
fi
echo "check_package: PASS (installed headers, find_package and pkg-config builds of examples/ run)"
