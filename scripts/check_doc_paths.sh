#!/usr/bin/env bash
# No tracked file under docs/ (nor the README) names a path of the machine
# that builds it: the checkout's own folder, the folder it sits in, or the
# home folder. Docs name paths relative to the repository; a machine's path
# means nothing on a reader's machine (example paths such as /opt/gpt2lab
# are fine, and are not what this looks for).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
patterns=("$root" "$(dirname "$root")/")
[ -n "${HOME:-}" ] && [ "$HOME" != / ] && patterns+=("$HOME/")
args=()
for p in "${patterns[@]}"; do
  [ "$p" = // ] || args+=(-e "$p")
done
if hits=$(git ls-files -z docs README.md | xargs -0 grep -nF "${args[@]}"); then
  echo "check_doc_paths: docs name a path of this machine (use a path relative to the repository):" >&2
  echo "$hits" >&2
  exit 1
fi
# What is committed gzipped (a study's packed study.json, cut in parts, and
# its runs' metrics) is read inflated; grep reads all of it (no -q: under
# pipefail, -q would stop the reader early and fail the pipe on a match).
packed=$(git ls-files docs | grep -E '/study\.json\.gz(\.1)?$' || true)
for first in $packed; do
  dir=$(dirname "$first")
  parts=("$first")
  [[ $first == *.1 ]] && for ((i = 2; ; i++)); do
    [ -f "$dir/study.json.gz.$i" ] || break
    parts+=("$dir/study.json.gz.$i")
  done
  if cat "${parts[@]}" | gzip -dc | grep -F "${args[@]}" > /dev/null; then
    echo "check_doc_paths: $dir's packed study.json names a path of this machine (record it relative to the study)" >&2
    exit 1
  fi
done
if git ls-files -z 'docs/*.jsonl.gz' | xargs -0 -r zcat | grep -F "${args[@]}" > /dev/null; then
  echo "check_doc_paths: a packed metrics file under docs/ names a path of this machine:" >&2
  git ls-files -z 'docs/*.jsonl.gz' | while IFS= read -r -d '' f; do
    zcat "$f" | grep -F "${args[@]}" > /dev/null && echo "$f" >&2
  done
  exit 1
fi
echo "check_doc_paths: no machine paths in docs/ or README.md (packed study files read inflated)"
