#!/usr/bin/env bash
# The full test suite: set-up (packages, data, build), the team checks
# (layers, format, lint, the installed package), then ctest; then the
# reliability checks (docs/reliability.md) on one clang ASan+UBSan build (build-san/,
# scripts/san_build.sh): the whole suite again under the sanitizers
# (scripts/sanitize.sh), and every fuzz target for a bounded time
# (scripts/fuzz.sh). Both print their figures.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 30; 0 skips fuzzing)
#   SANITIZE=0       skips the sanitizer suite (default: run it)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
python3 scripts/check_layers.py   # no include goes up a layer (src/, include/gpt2lab/)
scripts/check_format.sh           # every C++ file is laid out as .clang-format says
scripts/check_doc_paths.sh        # docs name no path of this machine
python3 scripts/check_design.py    # docs/design.md: paths and names exist, public headers, sizes, layers
flake8 tools scripts tests/reference  # Python lint, configured in .flake8
scripts/tidy.sh                   # clang-tidy on the C++ files the last commit changed
scripts/check_package.sh          # the installed package builds and runs examples/
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j 2 --timeout 1800)

if [ "${SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
if [ "$FUZZ_SECONDS" != 0 ]; then
  scripts/fuzz.sh "$FUZZ_SECONDS"
fi
