#!/usr/bin/env bash
# The ctest suite on a busy machine: every core runs a CPU hog (stress-ng
# --cpu N, N = the cores) while the suite runs, ROUNDS times (default 2). A
# test that passes only on an idle machine (a race, a sleep standing in for
# synchronisation, a time limit too tight) fails here. Uses an existing
# build (scripts/setup.sh builds build/); installs stress-ng if missing.
#   scripts/stress_test.sh                     # build/, two rounds
#   BUILD_DIR=... ROUNDS=... HOGS=... scripts/stress_test.sh [CTEST ARGS...]
#   scripts/stress_test.sh -R 'TeamBarrier|e2e\.test_serve'   # a subset
# Prints per round: seconds, tests passed, skipped, failed (by name); exits
# non-zero if any test failed in any round. The logs stay in
# BUILD_DIR/stress-round-K.log.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-2}
HOGS=${HOGS:-$(nproc)}
JOBS=${JOBS:-2}
[ -f "$BUILD_DIR/CTestTestfile.cmake" ] ||
  { echo "stress_test: no ctest build in $BUILD_DIR (scripts/setup.sh builds one; or set BUILD_DIR)" >&2; exit 1; }

if ! command -v stress-ng >/dev/null 2>&1; then
  echo "stress_test: installing stress-ng"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends stress-ng
fi

# The hog runs as long as the suite does and is stopped however this script
# ends (a failure, Ctrl-C).
hog=""
stop_hog() {
  if [ -n "$hog" ]; then
    kill "$hog" 2>/dev/null || true
    wait "$hog" 2>/dev/null || true
    hog=""
  fi
}
trap stop_hog EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stress-ng --cpu "$HOGS" --quiet &
hog=$!
echo "stress_test: $HOGS CPU hogs (stress-ng pid $hog) on $(nproc) cores" \
  "($(lscpu | sed -n 's/^Model name: *//p' | head -1))"

status=0
summary=()
for round in $(seq 1 "$ROUNDS"); do
  log=$PWD/$BUILD_DIR/stress-round-$round.log
  t0=$(date +%s)
  set +e
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 1800 "$@") >"$log" 2>&1
  rc=$?
  set -e
  secs=$(($(date +%s) - t0))
  read -r failed total < <(grep -oE '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1 | awk '{ print $1, $NF }')
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - [^ ]+ \(Skipped\)' "$log" || true)
  mapfile -t names < <(scripts/ctest_failed.sh "$log")
  line="round $round: $((${total:-0} - ${failed:-0} - skipped)) of ${total:-0} passed, $skipped skipped,"
  line+=" ${failed:-0} failed${names[*]:+ (${names[*]})} in $secs s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "stress_test: $line"
  summary+=("$line")
  # A round counts only if the hog ran all through it.
  if ! kill -0 "$hog" 2>/dev/null; then
    echo "stress_test: stress-ng ended during round $round: the suite did not run under load" >&2
    exit 1
  fi
  if [ "$rc" -ne 0 ]; then
    status=1
    [ ${#names[@]} -gt 0 ] || echo "stress_test: ctest failed without naming a test; see $log" >&2
  fi
done
stop_hog
echo "stress_test: ${#summary[@]} round(s) under $HOGS CPU hogs: $([ "$status" -eq 0 ] && echo passed || echo FAILED)"
printf '  %s\n' "${summary[@]}"
exit "$status"
