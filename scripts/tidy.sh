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
# Only files that compile_commands.json knows (the fuzzers need clang's build).
known=()
for f in "${files[@]}"; do
  grep -q "\"file\": \"$PWD/$f\"" "$BUILD/compile_commands.json" && known+=("$f")
done
if [ ${#known[@]} -eq 0 ]; then
  echo "tidy: no changed C++ sources"
  exit 0
fi
printf '%s\n' "${known[@]}" | xargs -P 2 -n 4 clang-tidy -p "$BUILD" --quiet --extra-arg=-Wno-unknown-warning-option \
  2> /dev/null
echo "tidy: ${#known[@]} file(s) clean"
