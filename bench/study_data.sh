# shellcheck shell=bash
# Sourced by the bench scripts that run studies: the study's data (its BPE
# and token shards) built once in DIR/data, to be copied into every study
# folder so that wall times are the runs' own.
#   study_data BIN BUDGET CORPUS DIR
# The study command has no "data only" mode: grad-at-init (its first preset)
# starts, and is stopped (SIGTERM: finish the current run's step, save) as
# soon as the data is complete, since at the full budget its 720 runs would
# take half an hour.
study_data() {
  local bin=$1 budget=$2 corpus=$3 dir=$4 pid
  "$bin" study --preset grad-at-init --budget "$budget" --data "$corpus" --out "$dir" --quiet --no-report \
    > /dev/null 2>&1 &
  pid=$!
  while kill -0 "$pid" 2> /dev/null && [ ! -f "$dir/data/source.json" ]; do sleep 1; done
  kill -TERM "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  test -f "$dir/data/source.json" || { echo "study_data: no study data in $dir (see $bin study --help)"; return 1; }
}
