# shellcheck shell=bash
# Sourced by the bench scripts. Every result they print is headed by the
# machine it ran on and its load (issue 18: CPU kinds differ, and this host
# is shared), and ends with the load after it, so a table in docs/ can say
# both.
#   machine_line [WHAT]   "# <UTC time>, <CPU model>, <cores> cores, load average a b c, WHAT"
#   load_after            "# load average after: a b c"
# shellcheck disable=SC2120  # WHAT is optional
machine_line() {
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)${1:+, $1}"
}
load_after() {
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
