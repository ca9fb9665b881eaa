#!/usr/bin/env bash
# Fetches the machine-translation case study's data: the gettext message
# catalogs (usr/share/locale/<lang>/LC_MESSAGES/*.mo) that Debian packages
# ship, pinned by version and by the SHA-256 of each .deb in
# scripts/translation_packages.tsv, into the git-ignored data/ folder:
#   data/.debs/<pkg>_<version>.deb                  download cache
#   data/catalogs/<pkg>/<lang>/LC_MESSAGES/*.mo     one locale tree per package
#   data/catalogs/packages.tsv                      package, version, sha256 used
# The .debs come through apt (`apt-get download pkg:amd64=version`, no root
# needed), so the machine's apt sources decide where from. Pins are for
# Debian 12 (bookworm), amd64.
#
# Usage:
#   scripts/fetch_translation.sh [--lang fr,de]   fetch (default: fr,de)
#   scripts/fetch_translation.sh --repin          print pins for the versions
#                                                 now in the apt index
#
# Idempotent: when data/catalogs already holds the pinned packages for the
# requested languages it does nothing. Cached .debs are checked against their
# pin; a mismatch removes the file and stops. data/catalogs is built in a temp
# folder and renamed into place, so an interrupted run never leaves a
# half-filled tree that a later run would take as done.
set -euo pipefail
cd "$(dirname "$0")/.."

PINS_FILE=scripts/translation_packages.tsv
ARCH=amd64
DATA=data
CACHE=$DATA/.debs
OUT=$DATA/catalogs
LANGS=fr,de
REPIN=0

die() {
  echo "fetch_translation: $*" >&2
  exit 1
}
say() { echo "fetch_translation: $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --lang) [ $# -ge 2 ] || die "--lang needs a value, e.g. --lang fr,de"; LANGS=$2; shift 2 ;;
    --lang=*) LANGS=${1#--lang=}; shift ;;
    --repin) REPIN=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done

for tool in apt-get apt-cache dpkg-deb tar sha256sum; do
  command -v $tool >/dev/null || die "$tool is required (this script expects a Debian/Ubuntu system with apt)"
done
[ -f "$PINS_FILE" ] || die "$PINS_FILE is missing"

# Pins: package<TAB>version<TAB>sha256, '#' lines are comments.
PKGS=() VERS=() SHAS=()
while IFS=$'\t' read -r pkg ver sha extra; do
  case $pkg in '' | '#'*) continue ;; esac
  [[ $pkg =~ ^[a-z0-9][a-z0-9+.-]+$ && -n $ver && $sha =~ ^[0-9a-f]{64}$ && -z $extra ]] ||
    die "$PINS_FILE: malformed line for '$pkg' (want package<TAB>version<TAB>sha256)"
  PKGS+=("$pkg") VERS+=("$ver") SHAS+=("$sha")
done <"$PINS_FILE"
[ ${#PKGS[@]} -gt 0 ] || die "$PINS_FILE lists no packages"

if [ $REPIN -eq 1 ]; then
  sed -n '/^#/p' "$PINS_FILE"
  for pkg in "${PKGS[@]}"; do
    line=$(apt-cache show --no-all-versions "$pkg:$ARCH" 2>/dev/null |
      awk '/^Version: /{v=$2} /^SHA256: /{s=$2} END{if (v != "" && s != "") print v "\t" s}')
    [ -n "$line" ] || die "$pkg is not in the apt index (apt-get update, or drop it from $PINS_FILE)"
    printf '%s\t%s\n' "$pkg" "$line"
  done
  say "review, then redirect into $PINS_FILE; the next fetch checks each .deb against these hashes"
  exit 0
fi

# Requested languages, deduplicated and sorted.
LANG_LIST=()
IFS=, read -r -a req <<<"$LANGS"
for l in "${req[@]}"; do
  [[ $l =~ ^[a-z]{2,3}(_[A-Z]{2})?(@[a-z]+)?$ ]] || die "bad language '$l' (want e.g. fr, de, pt_BR)"
  LANG_LIST+=("$l")
done
[ ${#LANG_LIST[@]} -gt 0 ] || die "--lang is empty"
mapfile -t LANG_LIST < <(printf '%s\n' "${LANG_LIST[@]}" | sort -u)

manifest_rows() {
  local i
  for i in "${!PKGS[@]}"; do printf '%s\t%s\t%s\n' "${PKGS[$i]}" "${VERS[$i]}" "${SHAS[$i]}"; done
}

# Nothing to do when the published manifest matches the pins and already
# covers the requested languages.
if [ -f "$OUT/packages.tsv" ] &&
  [ "$(grep -v '^#' "$OUT/packages.tsv")" = "$(manifest_rows)" ]; then
  have=$(sed -n 's/^# languages: //p' "$OUT/packages.tsv")
  missing=0
  for l in "${LANG_LIST[@]}"; do [[ " $have " == *" $l "* ]] || missing=1; done
  if [ $missing -eq 0 ]; then
    say "$OUT present (${#PKGS[@]} packages, languages: $have); nothing to do"
    exit 0
  fi
fi

TMPS=()
cleanup() { [ ${#TMPS[@]} -eq 0 ] || rm -rf "${TMPS[@]}"; }
trap cleanup EXIT

check_sha() { # file expected package version
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    rm -f "$1"
    die "SHA-256 mismatch for $3=$4: expected $2, got $got ($1 removed; rerun to download it again; if it persists, the archive serves a different file under this version: check, then update the pins with --repin)"
  fi
}

deb_path() { echo "$CACHE/${1}_${2//:/%3a}.deb"; }

# Cached .debs must match their pin; the others are downloaded together.
MISSING=()
for i in "${!PKGS[@]}"; do
  file=$(deb_path "${PKGS[$i]}" "${VERS[$i]}")
  if [ -f "$file" ]; then
    check_sha "$file" "${SHAS[$i]}" "${PKGS[$i]}" "${VERS[$i]}"
  else
    MISSING+=("$i")
  fi
done

if [ ${#MISSING[@]} -gt 0 ]; then
  specs=()
  for i in "${MISSING[@]}"; do specs+=("${PKGS[$i]}:$ARCH=${VERS[$i]}"); done
  # package<TAB>version<TAB>sha256 of every pinned version the index knows.
  index=$(apt-cache show --no-all-versions "${specs[@]}" 2>/dev/null |
    awk '/^Package: /{p=$2} /^Version: /{v=$2} /^SHA256: /{s=$2} /^$/{if (p != "") print p "\t" v "\t" s; p=v=s=""}
         END{if (p != "") print p "\t" v "\t" s}') || true
  for i in "${MISSING[@]}"; do
    pkg=${PKGS[$i]} ver=${VERS[$i]} sha=${SHAS[$i]}
    isha=$(awk -F'\t' -v p="$pkg" -v v="$ver" '$1 == p && $2 == v {print $3; exit}' <<<"$index")
    if [ -z "$isha" ]; then
      now=$(apt-cache show --no-all-versions "$pkg:$ARCH" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
      die "$pkg version $ver ($ARCH) is not in the apt index${now:+ (it offers $now)}. Run apt-get update; if it is still missing, the archive has moved on: update the pins (scripts/fetch_translation.sh --repin > new.tsv, review, replace $PINS_FILE)"
    fi
    [ "$isha" = "$sha" ] ||
      die "the apt index lists $pkg=$ver with SHA-256 $isha, but $PINS_FILE pins $sha; refusing to download (check your apt sources, or update the pins)"
  done
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
  TMPS+=("$tmp")
  # As root apt downloads as the unprivileged _apt user: let it write here.
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
  say "apt-get download: ${#specs[@]} packages"
  (cd "$tmp" && apt-get download -q=2 "${specs[@]}") ||
    die "apt-get download failed (see apt's message above)"
  for i in "${MISSING[@]}"; do
    pkg=${PKGS[$i]} ver=${VERS[$i]}
    got=("$tmp/${pkg}_${ver//:/%3a}"_*.deb)
    [ -f "${got[0]}" ] || die "apt-get download left no .deb for $pkg=$ver in $tmp"
    check_sha "${got[0]}" "${SHAS[$i]}" "$pkg" "$ver"
    mv "${got[0]}" "$(deb_path "$pkg" "$ver")"
  done
  rm -rf "$tmp"
fi

langs_re=$(
  IFS='|'
  echo "${LANG_LIST[*]}"
)
mkdir -p "$DATA"
build=$(mktemp -d "$DATA/.catalogs.XXXXXX")
TMPS+=("$build")
chmod "$(printf '%04o' $((0777 & ~0$(umask))))" "$build" # mktemp makes it 0700
total=0
for i in "${!PKGS[@]}"; do
  pkg=${PKGS[$i]} ver=${VERS[$i]}
  # Decompress once into a plain tar, list it, extract the catalogs only.
  fs=$build/.fs.tar list=$build/.members
  dpkg-deb --fsys-tarfile "$(deb_path "$pkg" "$ver")" >"$fs"
  tar -tf "$fs" | { grep -E "^\./usr/share/locale/($langs_re)/LC_MESSAGES/[^/]+\.mo$" || true; } >"$list"
  n=0
  if [ -s "$list" ]; then
    mkdir -p "$build/$pkg"
    tar -xf "$fs" -C "$build/$pkg" --strip-components=4 --no-same-owner --verbatim-files-from -T "$list"
    # Alias links (iso_639.mo -> iso_639-2.mo) would only duplicate catalogs.
    find "$build/$pkg" -type l -delete
    n=$(find "$build/$pkg" -type f -name '*.mo' | wc -l)
  fi
  rm -f "$fs" "$list"
  [ "$n" -gt 0 ] || say "note: $pkg=$ver ships no catalogs for ${LANG_LIST[*]}"
  total=$((total + n))
done

{
  echo "# languages: ${LANG_LIST[*]}"
  printf '# package\tversion\tsha256 (from %s)\n' "$PINS_FILE"
  manifest_rows
} >"$build/packages.tsv"

# Publish: rename the finished tree into place.
if [ -e "$OUT" ]; then
  old=$(mktemp -d "$DATA/.catalogs.old.XXXXXX")
  TMPS+=("$old")
  mv "$OUT" "$old/"
fi
mv "$build" "$OUT"
counts=""
for l in "${LANG_LIST[@]}"; do
  counts+=" $l=$(find "$OUT" -path "*/$l/LC_MESSAGES/*.mo" -type f | wc -l)"
done
say "$OUT from ${#PKGS[@]} packages: $total catalogs (${counts# })"
