#!/usr/bin/env bash
# Serving throughput with continuous batching, side by side with
# llama.cpp's server: 1, 4, 8 and 16 concurrent clients (OpenAI's own Node
# client, bench/serve_batch_client.js), each sending REQUESTS completions of
# MAX_TOKENS tokens one after another, against
#   `gpt2lab serve --weights bf16 --parallel 8` and
#   `llama-server --parallel 8 --cont-batching` on the same model exported
#     with `gpt2lab convert --to gguf --dtype f16` (our GGUF export has no
#     bf16; f16 reads the same 2 bytes per weight), when
#     scripts/fetch_llama_cpp.sh has built it (or LLAMA_SERVER names one);
#     else it says it skips it. The script fetches nothing.
# Both with THREADS threads (default 2) on a GPT-2 124M-shaped model with
# random weights. Prints the machine and its load, then a Markdown table:
# total completion tokens/s and the p50/p99 whole-request latency.
#   [REQUESTS=8] [MAX_TOKENS=64] [CLIENTS="1 4 8 16"] bench/serve_batch.sh [THREADS]
# SHAPE="--n-layer 1 --n-head 2 --n-embd 64 --block-size 128" (any `gpt2lab
# init` flags) smokes it on a tiny model.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
T=${1:-2}
B=${BUILD_DIR:-build}
REQUESTS=${REQUESTS:-8}
MAX_TOKENS=${MAX_TOKENS:-64}
CLIENTS=${CLIENTS:-1 4 8 16}
SHAPE=${SHAPE:---n-layer 12 --n-head 12 --n-embd 768 --block-size 1024}
OPENAI=$(realpath -m "${GPT2LAB_DATA:-data}/node_modules/openai")
LLAMA_SERVER=${LLAMA_SERVER:-data/llama.cpp/build/bin/llama-server}
if ! command -v node >/dev/null || [ ! -d "$OPENAI" ]; then
  echo "serve_batch: needs node and $OPENAI (scripts/setup.sh fetches it)" >&2
  exit 1
fi
export OMP_NUM_THREADS=$T
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2086  # SHAPE is a list of flags
"$B/gpt2lab" init $SHAPE --vocab-size 50257 --out "$work/model" >/dev/null
machine_line "$T threads, $REQUESTS requests of $MAX_TOKENS tokens per client"
machine_peaks "$T"

# Waits for "listening on http://HOST:PORT" (ours) or a 200 from /health
# (llama-server) and prints the base URL.
wait_ours() {
  local line
  read -r line <"$work/ours.fifo"
  sed 's|.*listening on \(http://[^ ]*\).*|\1|' <<<"$line"
}
wait_health() {  # URL PID
  until curl -sf "$1/health" >/dev/null; do
    kill -0 "$2" 2>/dev/null || { echo "serve_batch: llama-server exited (log: $work/llama.log)" >&2; return 1; }
    sleep 0.2
  done
}

run_clients() {  # NAME URL
  for c in $CLIENTS; do
    node bench/serve_batch_client.js "$OPENAI" "$2/v1" "$c" "$REQUESTS" "$MAX_TOKENS" |
      sed "s/^{/{\"server\": \"$1\", /" | tee -a "$work/rows.jsonl"
  done
}

mkfifo "$work/ours.fifo"
"$B/gpt2lab" serve --model "$work/model" --port 0 --threads "$T" --weights bf16 --parallel 8 \
  --max-requests 64 --quiet >"$work/ours.fifo" 2>"$work/ours.log" &
pids+=($!)
url=$(wait_ours)
run_clients gpt2lab "$url"
kill "${pids[0]}"

if [ -x "$LLAMA_SERVER" ]; then
  "$B/gpt2lab" convert --input "$work/model" --out "$work/model.gguf" --to gguf --dtype f16 >/dev/null
  port=$((20000 + RANDOM % 20000))
  "$LLAMA_SERVER" -m "$work/model.gguf" --port "$port" -t "$T" --parallel 8 --cont-batching \
    -c $((8 * 1024)) >"$work/llama.log" 2>&1 &
  pids+=($!)
  wait_health "http://127.0.0.1:$port" "${pids[1]}"
  run_clients llama.cpp "http://127.0.0.1:$port"
else
  echo "llama.cpp: skipped ($LLAMA_SERVER is not built: scripts/fetch_llama_cpp.sh builds it)"
fi
load_after

/usr/bin/python3 - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("\n| server | clients | completion tokens/s | p50 latency s | p99 latency s |")
print("| --- | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['server']} | {r['clients']} | {r['tokens_per_s']} | {r['p50_s']} | {r['p99_s']} |")
PY
