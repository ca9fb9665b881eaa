# shellcheck shell=bash
# Sourced by the bench scripts. Every result they print is headed by the
# machine it ran on and its load (CPU kinds differ, and the host may be
# shared), and ends with the load after it, so a table in docs/ can say
# both.
#   machine_line [WHAT]   "# <UTC time>, <CPU model>, <cores> cores, load average a b c, WHAT"
#   load_after            "# load average after: a b c"
#   machine_peaks [N]     the FMA, sgemm and read-bandwidth peaks at N threads, measured now
# shellcheck disable=SC2120  # WHAT is optional
machine_line() {
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)${1:+, $1}"
}
load_after() {
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
# machine_peaks [THREADS]  "# peaks at N threads, measured now: FMA ..., sgemm ..., read bandwidth ..."
# (bench/peak_bench.cpp, a few seconds), or why it could not be measured.
machine_peaks() {
  local bin=${BUILD_DIR:-build}/bench/peak_bench
  if [ -x "$bin" ]; then
    "$bin" --threads "${1:-2}"
  else
    echo "# peaks: not measured ($bin is not built: cmake --build ${BUILD_DIR:-build} --target peak_bench)"
  fi
}
