#!/usr/bin/env bash
# The full test suite: set-up (packages, data, build), then ctest; then the
# reliability checks of issue 9: every fuzz target for a bounded time
# (scripts/fuzz.sh, its own build dir build-fuzz/), and, on request, the
# whole suite again under ASan+UBSan (scripts/sanitize.sh, build-asan/).
# Both print their figures.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 20; 0 skips fuzzing)
#   SANITIZE=1       also runs the sanitizer suite. Off by default for now:
#                    it has not yet been run to completion on the 2-core CI
#                    machine, so its time (a second full build plus the suite
#                    under ASan) is not known to fit CI's budget
#                    (docs/reliability.md, "Figures").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j 2 --timeout 1800)

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
if [ "$FUZZ_SECONDS" != 0 ]; then
  scripts/fuzz.sh "$FUZZ_SECONDS"
fi
if [ "${SANITIZE:-0}" != 0 ]; then
  scripts/sanitize.sh
fi
