#!/usr/bin/env bash
# Commits a study's progress (docs/study/README.md, "A study that survives
# being stopped"): packs its finished runs' metrics and commits what the
# folder's .gitignore lets in (study.json, results, packed metrics).
# Usage: scripts/study_progress.sh [OUT]   (default docs/study/v3)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/study/v3}"
[ -f "$out/study.json" ] || { echo "study_progress: $out/study.json not found" >&2; exit 2; }
[ -f "$out/.gitignore" ] || { echo "study_progress: $out has no .gitignore: it would commit data and checkpoints" >&2; exit 2; }
python3 tools/study_pack.py "$out"
git add -- "$out"
if git diff --cached --quiet -- "$out"; then
  echo "study_progress: nothing new in $out"
  exit 0
fi
done_runs=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(sum(r.get("status") in ("completed","diverged") or "result" in r for r in s.get("runs",[])))' "$out/study.json")
git commit -q -m "study: progress of $out, $done_runs runs finished" -- "$out"
git log --oneline -1
# What the repository holds of it (docs/study/README.md: under 50 MB).
git ls-files -z -- "$out" | du -ch --files0-from=- | tail -1 | sed 's/total$/committed/'
