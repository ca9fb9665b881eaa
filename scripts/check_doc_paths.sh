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
echo "check_doc_paths: no machine paths in docs/ or README.md"
