#!/usr/bin/env bash
# Prints the tests that failed in a ctest log, one name a line, once each:
# the names in every "The following tests FAILED:" list ctest printed there
# ("\t 42 - NAME (Failed)"; also Timeout, SEGFAULT, ...), so that a log of
# several ctest runs names the failures of each. Used by scripts/sanitize.sh
# and scripts/stress_test.sh.
#   scripts/ctest_failed.sh LOG
set -euo pipefail
awk '/^The following tests FAILED:/ { list = 1; next }
     list && /^[[:space:]]+[0-9]+ - / { print $3; next }
     { list = 0 }' "$1" | sort -u
