#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# engine/'s folders call one another in one direction only (engine/README.md):
# a folder includes the headers of, and calls the functions of, only the
# folders before it in ORDER, so no circle runs between folders.  Includes
# are read from the sources; calls from libtern.a (what each object leaves
# undefined and which object defines it), so a call through a declaration
# that sits in a lower folder's header is caught too.  Every engine source
# is in a folder of ORDER.
# Usage: layout.sh SOURCE_DIR LIBTERN_A
set -euo pipefail
export LC_ALL=C
src=$1 archive=$2
ORDER="util format buffer state read maint offline write index"
rank() { # the folder's place in ORDER, -1 for none
  local i=0 f
  for f in $ORDER; do
    [ "$f" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo -1
}
declare -A RANK
for f in $ORDER; do RANK[$f]=$(rank "$f"); done
status=0
fail() { echo "FAIL: $*"; status=1; }

cd "$src"
files=$(find engine -name '*.[ch]' | sort)
declare -A FOLDER # object name (X.c.o) -> folder
for f in $files; do
  IFS=/ read -r _ folder rest <<< "$f"
  if [ -z "${rest:-}" ]; then
    fail "$f is in no folder: move it into the folder of its concern (engine/README.md)"
    continue
  fi
  [ -n "${RANK[$folder]:-}" ] || { fail "$f: folder $folder is not in ORDER ($ORDER)"; continue; }
  case "$f" in
    *.c)
      o=$(basename "$f").o
      [ -z "${FOLDER[$o]:-}" ] || fail "$f: a second engine file named $(basename "$f")"
      FOLDER[$o]=$folder
      ;;
  esac
  while read -r to; do
    [ "$to" = "$folder" ] && continue
    if [ -z "${RANK[$to]:-}" ] || [ "${RANK[$to]}" -ge "${RANK[$folder]}" ]; then
      fail "$f includes engine/$to/: $folder may include only folders before it in ($ORDER)"
    fi
  done < <(sed -n 's|^#include "engine/\([a-z_]*\)/.*|\1|p' "$f" | sort -u)
done

# Calls: symbol -> defining object, then each object's undefined symbols.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tern-layout.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
nm -A --defined-only "$archive" | awk 'NF == 3 && $2 ~ /^[TDBR]$/ { split($1, p, ":"); print $3, p[2] }' \
  | sort -u > "$tmp/defined"
nm -A -u "$archive" | awk '{ split($1, p, ":"); print $NF, p[2] }' | sort -u > "$tmp/used"
calls=0
while read -r sym user def; do
  from=${FOLDER[$user]:-} to=${FOLDER[$def]:-}
  [ -n "$from" ] && [ -n "$to" ] && [ "$from" != "$to" ] || continue
  calls=$((calls + 1))
  if [ "${RANK[$to]}" -ge "${RANK[$from]}" ]; then
    fail "engine/$from/${user%.o} calls $sym of engine/$to/${def%.o}: $from may call only folders before it in ($ORDER)"
  fi
done < <(join "$tmp/used" "$tmp/defined" | awk '{ print $1, $2, $3 }')
[ "${#FOLDER[@]}" -gt 0 ] || fail "no engine source found under $src/engine"
[ "$calls" -gt 0 ] || fail "no call between engine folders found in $archive"
echo "layout: $(echo "$files" | wc -l) engine files in ${#RANK[@]} folders, $calls calls between folders"
exit $status
