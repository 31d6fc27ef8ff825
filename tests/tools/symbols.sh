#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libtern.so exports the functions tern.h declares, and nothing else: no
# internal name can clash with an application's.  libtern.a (optional third
# argument) defines only tern_ names: its internal functions are hidden in
# the shared library but stay global in the archive, where an application's
# own `ld_alloc` would clash with ours at static link time.
# Usage: symbols.sh LIBTERN_SO TERN_H [LIBTERN_A]
set -euo pipefail
lib=$1 header=$2 archive=${3:-}
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
if [ -n "$archive" ]; then
  nm -g --defined-only "$archive" | awk 'NF == 3 { print $3 }' | sort -u > "$tmp/archive"
  # (ASan's __odr_asan.tern_* markers follow the names they guard.)
  if grep -v -e '^tern_' -e '^__odr_asan\.tern_' "$tmp/archive" > "$tmp/unprefixed"; then
    echo "FAIL: $archive defines $(wc -l < "$tmp/unprefixed") global symbols without the tern_ prefix:"
    cat "$tmp/unprefixed"
    status=1
  else
    echo "symbols: $(wc -l < "$tmp/archive") global symbols in $(basename "$archive"), all tern_"
  fi
fi
[ $status -eq 0 ] && echo "symbols: ok"
exit $status
