#!/usr/bin/env bash
# libtern.so exports the functions tern.h declares, and nothing else: no
# internal name can clash with an application's.  Usage: symbols.sh LIBTERN_SO TERN_H
set -euo pipefail
lib=$1 header=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tern-symbols.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u > "$tmp/exported"
# Declarations without comments: the preprocessor strips them.
cc -E -P -x c "$header" | grep -o '\btern_[a-z0-9_]*[[:space:]]*(' | tr -d ' (' | sort -u > "$tmp/declared"
echo "symbols: $(wc -l < "$tmp/exported") exported, $(wc -l < "$tmp/declared") declared in tern.h"
status=0
if ! diff -u "$tmp/declared" "$tmp/exported" > "$tmp/diff"; then
  echo "FAIL: exported symbols (+) differ from tern.h's functions (-):"
  grep '^[-+][^-+]' "$tmp/diff"
  status=1
fi
readelf -d "$lib" | grep -q "SONAME.*libtern\.so\.[0-9]" || { echo "FAIL: no SONAME libtern.so.N"; status=1; }
[ $status -eq 0 ] && echo "symbols: ok"
exit $status
