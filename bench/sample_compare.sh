#!/usr/bin/env bash
# Generation speed side by side in one run, same machine, same threads:
#   gpt2lab through the CLI, as users run it (`gpt2lab sample`, its own
#     "prompt"/"generation" lines), and through the library (sample_bench),
#     with f32, bf16 and int8 weights;
#   PyTorch's KV-cache generator (bench/sample_torch.py), f32 and bf16, the
#     better of passive and active OpenMP waiting;
#   llama.cpp (ggml's engine) on the same model exported with `gpt2lab
#     convert --to gguf` in f32, f16 and q8_0, through its llama-bench
#     (tg128 from an empty context, pp512), when scripts/fetch_llama_cpp.sh
#     has built it (or LLAMA_BENCH names a llama-bench); else it says it
#     skips it. The script fetches nothing.
# A GPT-2 124M-shaped model with random weights; decode = 128 new tokens
# after a 16-token prompt (greedy), prefill = a 512-token prompt; best of 5
# runs of the CLI, best of 3 in the library. The bound is the bytes a decode
# step reads over the best read bandwidth sample_bench measured in this run.
# With llama.cpp it then runs ROUNDS (default 7) paired rounds: per weight
# type one CLI decode and one llama-bench tg128 back to back, and prints the
# median of the per-round ratios, so a load that comes and goes between the
# sections above does not decide the comparison.
# DEPTH=D decodes after a D-token prompt instead, and llama-bench at depth D
# (its -d): the attention then reads D positions of keys and values per
# layer and token, which a 16-token prompt leaves out.
# Prints Markdown tables.
#   [ROUNDS=7] [DEPTH=D] bench/sample_compare.sh [THREADS]      (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/machine.sh
source bench/machine.sh
T=${1:-2}
B=${BUILD_DIR:-build}
export OMP_NUM_THREADS=$T
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/rows.jsonl
machine_line "$T threads"

"$B/gpt2lab" init --n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --out "$work/model" >/dev/null
DEPTH=${DEPTH:-}
short=$(seq -s ' ' 100 $((100 + ${DEPTH:-16} - 1)))
depth_args=()
[ -n "$DEPTH" ] && depth_args=(-d "$DEPTH") && echo "decode after a $DEPTH-token prompt (llama-bench -d $DEPTH)"
long=$(seq -s ' ' 1000 1511)

# Best of 3 of a `gpt2lab sample` speed line: "prompt" tok/s or "generation" ms/token.
cli() {  # WEIGHTS PROMPT NEW FIELD
  local vals=() line
  for _ in 1 2 3 4 5; do
    line=$("$B/gpt2lab" sample --model "$work/model" --prompt-ids "$2" --max-new-tokens "$3" --temperature 0 \
      --format ids --weights "$1" --threads "$T" 2>&1 >/dev/null | grep "sample: $4")
    if [ "$4" = prompt ]; then vals+=("$(sed 's/.*(\s*\([0-9.]*\) tok\/s).*/\1/' <<<"$line")")
    else vals+=("$(sed 's/.*tok\/s, \([0-9.]*\) ms\/token.*/\1/' <<<"$line")"); fi
  done
  if [ "$4" = prompt ]; then printf '%s\n' "${vals[@]}" | sort -g | tail -1
  else printf '%s\n' "${vals[@]}" | sort -g | head -1; fi
}

for w in f32 bf16 int8; do
  lib=$("$B/bench/sample_bench" --threads "$T" --weights "$w" --depth "${DEPTH:-16}" --json)
  echo "$lib" | tee -a "$out"
  pre=$(cli "$w" "$long" 1 prompt)
  dec=$(cli "$w" "$short" 128 generation)
  echo "{\"impl\": \"gpt2lab-cli\", \"dtype\": \"$w\", \"prefill_tok_s\": $pre, \"decode_ms\": $dec}" | tee -a "$out"
done
for policy in PASSIVE ACTIVE; do
  OMP_WAIT_POLICY=$policy /usr/bin/python3 bench/sample_torch.py "$T" "${DEPTH:-16}" | sed "s/\"pytorch\"/\"pytorch-$policy\"/" |
    tee -a "$out"
done
LLAMA_BENCH=${LLAMA_BENCH:-data/llama.cpp/build/bin/llama-bench}
llama=$work/llama.jsonl
touch "$llama"
paired=$work/paired.jsonl
touch "$paired"
ROUNDS=${ROUNDS:-7}
if [ -x "$LLAMA_BENCH" ]; then
  models=()
  for t in f32 f16 q8_0; do
    "$B/gpt2lab" convert --input "$work/model" --out "$work/gpt2-$t.gguf" --to gguf --dtype "$t" >/dev/null
    models+=(-m "$work/gpt2-$t.gguf")
  done
  # pp512 from an empty context (as our prefill), tg128 at the decode's depth.
  "$LLAMA_BENCH" "${models[@]}" -p 512 -n 0 -t "$T" -r 5 -o jsonl >"$llama" 2>/dev/null
  "$LLAMA_BENCH" "${models[@]}" -p 0 -n 128 "${depth_args[@]}" -t "$T" -r 5 -o jsonl >>"$llama" 2>/dev/null
  echo "llama.cpp: $(wc -l <"$llama") llama-bench rows"
  # Paired rounds: one CLI decode, then one llama-bench tg128 of the same
  # weights, back to back, ROUNDS times. On a shared machine the load moves
  # within minutes; a ratio taken within seconds cancels most of it.
  for ((r = 1; r <= ROUNDS; r++)); do
    for pair in f32:f32 bf16:f16 int8:q8_0; do
      ours=${pair%%:*} theirs=${pair##*:}
      line=$("$B/gpt2lab" sample --model "$work/model" --prompt-ids "$short" --max-new-tokens 128 --temperature 0 \
        --format ids --weights "$ours" --threads "$T" 2>&1 >/dev/null | grep "sample: generation")
      mine=$(sed 's/.*tok\/s, \([0-9.]*\) ms\/token.*/\1/' <<<"$line")
      tg=$("$LLAMA_BENCH" -m "$work/gpt2-$theirs.gguf" -p 0 -n 128 "${depth_args[@]}" -t "$T" -r 1 -o jsonl 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["avg_ts"])')
      echo "{\"round\": $r, \"ours\": \"$ours\", \"theirs\": \"$theirs\", \"ours_ms\": $mine, \"theirs_tok_s\": $tg}" >>"$paired"
    done
  done
  echo "paired rounds: $ROUNDS"
else
  echo "llama.cpp: skipped ($LLAMA_BENCH is not built: scripts/fetch_llama_cpp.sh builds it, ~10 min;"
  echo "           this script fetches nothing)"
fi

/usr/bin/python3 - "$out" "$llama" "$paired" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
llama = {}  # ggml type -> {"decode_ms", "prefill_tok_s"}
for r in (json.loads(l) for l in open(sys.argv[2]) if l.strip()):
    t = r["model_filename"].rsplit("-", 1)[1].removesuffix(".gguf")
    d = llama.setdefault(t, {})
    if r["n_gen"] > 0:
        d["decode_ms"] = 1000.0 / r["avg_ts"]
    else:
        d["prefill_tok_s"] = r["avg_ts"]
lib = {r["dtype"]: r for r in rows if r["impl"] == "gpt2lab"}
cli = {r["dtype"]: r for r in rows if r["impl"] == "gpt2lab-cli"}
torch = {}
for r in rows:
    if r["impl"].startswith("pytorch-"):
        best = torch.get(r["dtype"])
        if best is None or r["decode_ms"] < best["decode_ms"]:
            torch[r["dtype"]] = r
bw = max(r["bandwidth_gb_s"] for r in lib.values())
print(f"\nread bandwidth (same run): {bw:.1f} GB/s\n")
print("| weights | gpt2lab CLI decode ms/token | % of bound | library decode ms/token | bound ms/token "
      "| PyTorch decode ms/token | gpt2lab CLI / PyTorch speed | gpt2lab CLI prefill tok/s | PyTorch prefill tok/s |")
print("|---|---|---|---|---|---|---|---|---|")
for dt in ("f32", "bf16", "int8"):
    g, c, p = lib[dt], cli[dt], torch.get(dt)
    bound = g["bandwidth_bound_ms"] * g["bandwidth_gb_s"] / bw  # at the run's best bandwidth
    pt = f"{p['decode_ms']:.2f}" if p else "–"
    ratio = f"{p['decode_ms'] / c['decode_ms']:.2f}x" if p else "–"
    ppre = f"{p['prefill_tok_s']:.0f}" if p else "–"
    print(f"| {dt} | {c['decode_ms']:.2f} | {100 * bound / c['decode_ms']:.0f}% | {g['decode_ms']:.2f} "
          f"| {bound:.2f} | {pt} | {ratio} | {c['prefill_tok_s']:.0f} | {ppre} |")
if llama:
    print("\n| weights: gpt2lab / llama.cpp | gpt2lab CLI decode ms/token | llama.cpp decode ms/token "
          "| gpt2lab speed ÷ llama.cpp's | gpt2lab CLI prefill tok/s | llama.cpp prefill tok/s |")
    print("|---|---|---|---|---|---|")
    for ours, theirs in (("f32", "f32"), ("bf16", "f16"), ("int8", "q8_0")):
        c, g = cli[ours], llama.get(theirs, {})
        if "decode_ms" in g:
            print(f"| {ours} / {theirs} | {c['decode_ms']:.2f} | {g['decode_ms']:.2f} "
                  f"| {g['decode_ms'] / c['decode_ms']:.2f}x | {c['prefill_tok_s']:.0f} "
                  f"| {g.get('prefill_tok_s', float('nan')):.0f} |")
paired = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
if paired:
    print(f"\nPaired rounds (one CLI decode, then one llama-bench tg128, back to back; {len(paired) // 3} rounds):\n")
    # q8_0 stores 34 bytes per 32 weights and f16 two per weight, as our
    # int8 and bf16 do: the same bound applies to both.
    print("| weights: gpt2lab / llama.cpp | gpt2lab median ms/token | llama.cpp median ms/token "
          "| speed ratio: median (min – max) | rounds gpt2lab faster | bound ms/token "
          "| % of bound: gpt2lab / llama.cpp |")
    print("|---|---|---|---|---|---|---|")
    for ours in ("f32", "bf16", "int8"):
        rs = [r for r in paired if r["ours"] == ours]
        mine = [r["ours_ms"] for r in rs]
        theirs = [1000.0 / r["theirs_tok_s"] for r in rs]
        ratio = [t / m for t, m in zip(theirs, mine)]
        g = lib[ours]
        bound = g["bandwidth_bound_ms"] * g["bandwidth_gb_s"] / bw
        print(f"| {ours} / {rs[0]['theirs']} | {statistics.median(mine):.2f} | {statistics.median(theirs):.2f} "
              f"| {statistics.median(ratio):.2f}x ({min(ratio):.2f} – {max(ratio):.2f}) "
              f"| {sum(x > 1 for x in ratio)} of {len(ratio)} | {bound:.2f} "
              f"| {100 * bound / statistics.median(mine):.0f}% / {100 * bound / statistics.median(theirs):.0f}% |")
    by = {(r["round"], r["ours"]): r["ours_ms"] for r in paired}
    gain = [by[(k, "bf16")] / by[(k, "int8")] for k in sorted({r["round"] for r in paired})]
    print(f"\nint8 vs bf16 decode (CLI, paired rounds): {statistics.median(gain):.2f}x faster "
          f"(median; {min(gain):.2f} – {max(gain):.2f})")
print(f"\nint8 vs bf16 decode (CLI): {cli['bf16']['decode_ms'] / cli['int8']['decode_ms']:.2f}x faster")
PY
load_after
