#!/usr/bin/env bash
# The full test suite: set-up (packages, data, build), then ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j 2 --timeout 1800
