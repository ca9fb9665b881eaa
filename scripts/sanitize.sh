#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (with LeakSanitizer), built by scripts/san_build.sh in build-san/ (clang;
# the same instrumented library the fuzz targets of scripts/fuzz.sh link).
#   scripts/sanitize.sh              # build what is missing, run ctest
#   SAN_BUILD_DIR=... JOBS=... scripts/sanitize.sh
#
# Every report is fatal (-fno-sanitize-recover=all, halt_on_error), so one
# report fails its test and this script. clang's "undefined" group includes
# float-cast-overflow: a NaN or huge double converted to an integer is caught.
#
# The Python oracle tests run too: they start the sanitized gpt2lab binary as
# a subprocess, and a report makes it exit non-zero, which the test sees.
#
# Every test that runs C++ code runs, the tiktoken comparison over the whole
# corpus and all code points included, in three groups:
#   the gtests: leak stacks unwound in full (fast_unwind_on_malloc=0), so
#       that the one libomp suppression can name libomp's own allocator
#       (scripts/lsan-suppressions.txt);
#   the Python e2e and oracle tests: the default, fast unwinder. They drive
#       the sanitized CLI, which never leaves libomp's descriptors behind;
#       if it ever did, the leak would fail the test, not pass unseen. The
#       full unwinder made these tests much slower (docs/performance.md).
#   e2e.test_mpi* (test_mpi, test_mpi_overlap, test_mpi_netns): leak
#       checking off (ASan, UBSan on). Open MPI leaves allocations behind by
#       design inside components it has unloaded by exit, which no
#       suppression can name.
# Not run here, because they run no C++ code (tools/report, in Python):
# e2e.test_study_report, e2e.test_study_verdicts, e2e.test_study_fluency
# and e2e.test_study_gai_slope. Nor e2e.test_study_quick, a whole study at
# the quick budget: sanitized it would take most of an hour, and the C++ it
# runs is what the tiny-budget study tests run here. The summary names them.
# Prints one summary line: tests passed, skipped and failed (each failed
# test by name), build and test seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${SAN_BUILD_DIR:-build-san}
JOBS=${JOBS:-2}
start=$(date +%s)
SAN_BUILD_DIR=$BUILD_DIR JOBS=$JOBS scripts/san_build.sh
built=$(date +%s)

# The binaries the tests run must really carry the sanitizers: a build that
# silently lost its flags would pass everything and prove nothing. The
# runtimes (the __*san symbols) come with the link flags; asan.module_ctor is
# emitted only into code compiled with the instrumentation (one per file).
for b in "$BUILD_DIR/gpt2lab" "$BUILD_DIR/tests/gpt2lab_tests" "$BUILD_DIR/tests/gpt2lab_testtool"; do
  syms=$(nm "$b" 2>/dev/null || true)
  for s in __asan_init __ubsan_handle_float_cast_overflow __lsan_do_leak_check asan.module_ctor; do
    grep -q "$s" <<<"$syms" || { echo "sanitize: $b lacks $s: not a sanitized build" >&2; exit 1; }
  done
done

# abort_on_error=0 keeps the exit code (1) that ctest reads as a failure
# instead of a core dump. A caller's ASAN_OPTIONS are added after these (the
# later setting wins), except that the test_mpi* always run without leak checks.
# quarantine_size_mb=16 (ASan's default is 256): freed memory stays poisoned
# until 16 MB more has been freed, still far beyond any one test's working
# set, instead of every process touching up to 256 MB of fresh pages first.
# Page faults are what this suite spends its time on here (a fault costs the
# kernel much more on this VM than on bare metal, and two tests at once
# fault in each other's way), and a smaller quarantine leaves fewer fresh
# pages to fault in (docs/reliability.md, section 6, has the numbers).
ASAN_BASE=halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:quarantine_size_mb=16
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0}
PYTHON_ONLY='^e2e\.test_study_(report|verdicts|fluency|gai_slope)$'
TOO_LONG='^e2e\.test_study_quick$'

scripts=$PWD/scripts
cd "$BUILD_DIR"
log=ctest-asan.log
: >"$log"
# group OPTIONS CTEST-SELECTION...: one ctest run; its status goes to $rc.
rc=0
group() {
  local options=$1
  shift
  ASAN_OPTIONS="$ASAN_BASE:$options${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    ctest --output-on-failure -j "$JOBS" --timeout 1800 "$@" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
}
set +e
group detect_leaks=1:fast_unwind_on_malloc=0 -E '^(e2e|oracle)\.'
group detect_leaks=1 -R '^(e2e|oracle)\.' -E "^e2e\.test_mpi|$PYTHON_ONLY|$TOO_LONG"
# One at a time: each starts two ranks.
ASAN_OPTIONS="$ASAN_BASE${ASAN_OPTIONS:+:$ASAN_OPTIONS}:detect_leaks=0" \
  ctest --output-on-failure --timeout 1800 -R '^e2e\.test_mpi' 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
set -e
end=$(date +%s)

# ctest prints "N% tests passed, F tests failed out of T" per invocation.
read -r failed total < <(grep -oE 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" |
  awk '{ f += $3; t += $NF } END { print f + 0, t + 0 }')
# A skipped test (ctest's "(Skipped)" list: a test that exits 77 because what
# it needs is absent here) is counted as skipped, not passed.
mapfile -t skipped < <(grep -oE '[0-9]+ - [^ ]+ \(Skipped\)' "$log" | awk '{ print $3 }' | sort -u)
# The failed tests by name, whichever group they ran in.
mapfile -t failed_names < <("$scripts/ctest_failed.sh" "$log")
mapfile -t python_only < <(ctest -N -R "$PYTHON_ONLY" | awk '/Test +#/ { print $3 }')
mapfile -t too_long < <(ctest -N -R "$TOO_LONG" | awk '/Test +#/ { print $3 }')
echo "sanitize: ASan+UBSan+LSan (clang), $((total - failed - ${#skipped[@]})) of $total tests passed," \
  "${#skipped[@]} skipped${skipped[*]:+ (${skipped[*]})}," \
  "$failed failed${failed_names[*]:+ (${failed_names[*]})};" \
  "e2e.test_mpi* ran without leak checks; not run: ${#python_only[@]} Python-only${python_only[*]:+ (${python_only[*]})}" \
  "and ${#too_long[@]} too long sanitized${too_long[*]:+ (${too_long[*]})};" \
  "build $((built - start)) s, tests $((end - built)) s"
if [ "$rc" -ne 0 ] && [ ${#failed_names[@]} -eq 0 ]; then
  echo "sanitize: a ctest run failed without naming a test; see $BUILD_DIR/$log" >&2
fi
[ "$rc" -eq 0 ]
