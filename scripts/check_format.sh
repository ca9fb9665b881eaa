#!/usr/bin/env bash
# Fails when a C++ file of ours differs from .clang-format's layout, naming
# the files; `scripts/check_format.sh --fix` rewrites them in place.
# Run by scripts/test.sh. Generated tables (*.inc) are not checked.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  'src/*.cpp' 'src/*.h' 'include/*.h' 'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'fuzz/*.cpp' 'fuzz/*.h' \
  'examples/*.cpp' 'python/*.cpp' 'python/*.h' | sort -u)
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf '%s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} file(s) not formatted (run scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
