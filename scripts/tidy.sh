#!/usr/bin/env bash
# clang-tidy (.clang-tidy's profile) on the C++ sources a change touches:
# the files changed since TIDY_BASE (default: the previous commit), or the
# files given. Needs a configured build (compile_commands.json).
# Run by scripts/test.sh; `scripts/tidy.sh --all` checks every source.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
if [ "${1:-}" = --all ]; then
  mapfile -t files < <(git ls-files 'src/*.cpp' 'tests/*.cpp' 'examples/*.cpp' 'python/*.cpp')
elif [ $# -gt 0 ]; then
  files=("$@")
else
  base=${TIDY_BASE:-HEAD~1}
  if ! git rev-parse -q --verify "$base^{commit}" > /dev/null; then
    echo "tidy: no base commit $base (a shallow clone?); checking nothing"
    exit 0
  fi
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- 'src/*.cpp' 'tests/*.cpp' 'python/*.cpp')
fi
# A unity build (GPT2LAB_UNITY_CLI) lists only its generated unity_*.cxx
# files in compile_commands.json; each file they include is checked with
# that unit's command, from a database written next to the build's.
db="$BUILD/tidy"
mkdir -p "$db"
python3 - "$BUILD/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = []
for e in json.load(open(sys.argv[1])):
    entries.append(e)
    if re.search(r"/Unity/unity_[^/]*\.cxx$", e["file"]):
        for src in re.findall(r'^#include "(/[^"]+)"', open(e["file"]).read(), re.M):
            entries.append(dict(e, file=src, command=e["command"].replace(e["file"], src)))
json.dump(entries, open(sys.argv[2], "w"), indent=0)
PY
# Only files the database knows (the fuzzers need clang's build; python/
# needs pybind11); any other is named, not passed over in silence.
known=()
for f in "${files[@]}"; do
  if grep -q "\"file\": \"$PWD/$f\"" "$db/compile_commands.json"; then
    known+=("$f")
  else
    echo "tidy: not in $BUILD's compile commands, not checked: $f"
  fi
done
if [ ${#known[@]} -eq 0 ]; then
  echo "tidy: no changed C++ sources"
  exit 0
fi
printf '%s\n' "${known[@]}" | xargs -P 2 -n 4 clang-tidy -p "$db" --quiet --extra-arg=-Wno-unknown-warning-option \
  2> /dev/null
echo "tidy: ${#known[@]} file(s) clean"
