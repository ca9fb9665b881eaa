#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan+UBSan; scripts/san_build.sh,
# build-san/) and runs each for a bounded time. Fails on any crash, sanitizer
# report, leak, timeout (a slow input) or out-of-memory (an allocation above
# the limit), leaving the input in $BUILD_DIR/artifacts/.
#   scripts/fuzz.sh [SECONDS]       # seconds per target, default 60
#   FUZZ_TARGETS="fuzz_llmc fuzz_cli" scripts/fuzz.sh 10
# Prints per target: executions, seconds, corpus size; and a total line.
# The corpus of each target grows in $BUILD_DIR/corpus/ across local runs;
# seeds are regenerated from the library's own writers every run (make_seeds),
# and fuzz/regressions/<target>/* (inputs that once failed) are replayed first.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-60}
BUILD_DIR=${SAN_BUILD_DIR:-build-san}
JOBS=${JOBS:-2}
ALL_TARGETS="fuzz_safetensors fuzz_checkpoint fuzz_config fuzz_llmc fuzz_token_shard fuzz_tokenizer_load fuzz_tokenizer_encode fuzz_cli"
TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}

start=$(date +%s)
# The instrumented library is shared with the sanitized test suite
# (scripts/sanitize.sh); after that has run, this builds nothing.
SAN_BUILD_DIR=$BUILD_DIR JOBS=$JOBS scripts/san_build.sh make_seeds $TARGETS
built=$(date +%s)
echo "fuzz: targets ready in $((built - start)) s"

B=$BUILD_DIR
X=$BUILD_DIR/fuzz   # where CMake puts the fuzz executables
rm -rf "$B/seeds"
"$X/make_seeds" "$B/seeds" >/dev/null
mkdir -p "$B/artifacts"

# A leak or a report ends the process with an error; so does an allocation
# above -malloc_limit_mb: a hostile header must be refused before allocating.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export OMP_NUM_THREADS=1

# fuzz_one TARGET: replays its regressions, fuzzes it for $SECS seconds,
# and leaves its table row in $B/TARGET.row; fails if the target did.
fuzz_one() {
  local t=$1 corpus=$B/corpus/$1 log=$B/$1.log t0 t1 rc execs secs size
  mkdir -p "$corpus"
  : >"$log"
  printf '%-24s %12s %8s %8s\n' "$t" "-" "-" "-" >"$B/$t.row"
  if [ -d "fuzz/regressions/$t" ] && [ -n "$(ls -A "fuzz/regressions/$t")" ]; then
    if ! "$X/$t" fuzz/regressions/"$t"/* >>"$log" 2>&1; then
      echo "fuzz: $t fails on a regression input (fuzz/regressions/$t); log: $log" >&2
      tail -40 "$log" >&2
      return 1
    fi
  fi
  t0=$(date +%s.%N)
  set +e
  "$X/$t" "$corpus" "$B/seeds/$t" \
    -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" >>"$log" 2>&1
  rc=$?
  set -e
  t1=$(date +%s.%N)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo 0)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  size=$(find "$corpus" -type f | wc -l)
  printf '%-24s %12s %8s %8s\n' "$t" "$execs" "$secs" "$size" >"$B/$t.row"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $rc); log: $log" >&2
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written|deadly signal|out-of-memory|leak' "$log" | head -20 >&2
    return 1
  fi
}

# $FUZZ_JOBS targets at a time (default: $JOBS, 2): each fuzzer is one
# single-threaded process, so on 2 cores two of them make as many
# executions each as one alone, in half the wall time.
FUZZ_JOBS=${FUZZ_JOBS:-$JOBS}
declare -A pid_of
running=()
for t in $TARGETS; do
  if [ ${#running[@]} -ge "$FUZZ_JOBS" ]; then
    wait -n "${running[@]}" || true
    still=()
    for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && still+=("$p"); done
    running=("${still[@]}")
  fi
  fuzz_one "$t" &
  pid_of[$t]=$!
  running+=("$!")
done

failed=()
total_execs=0
total_secs=0
printf '%-24s %12s %8s %8s\n' target executions seconds corpus | tee "$B/fuzz-summary.txt"
for t in $TARGETS; do
  wait "${pid_of[$t]}" || failed+=("$t")
  tee -a "$B/fuzz-summary.txt" <"$B/$t.row"
  read -r _ execs secs _ <"$B/$t.row"
  [ "$execs" = - ] && continue
  total_execs=$((total_execs + execs))
  total_secs=$(awk -v a="$total_secs" -v b="$secs" 'BEGIN { printf "%.1f", a + b }')
done
n=$(echo $TARGETS | wc -w)
echo "fuzz: $n targets, $total_execs executions, $total_secs s fuzzing ($SECS s each, $FUZZ_JOBS at a time)," \
  "${#failed[@]} failed" | tee -a "$B/fuzz-summary.txt"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (inputs in $B/artifacts/)" >&2
  exit 1
fi
