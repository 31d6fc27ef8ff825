#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every call tern.h declares states its errors ("Errors:" in its comment, or
# in the comment of the group of declarations it belongs to), and every one
# has its row in tests/engine/test_conventions.c, which checks the header's
# conventions on it mechanically.  Usage: header_errors.sh TERN_H TEST_CONVENTIONS_C
set -euo pipefail
header=$1 table=$2
# A declaration takes the comment block just above it; one without its own
# (tern_cursor_prev under tern_cursor_next) shares the one of the call above.
awk '
  function flush_decl(name) {
    if (cmt != "") { doc = cmt; cmt = "" }
    print name "\t" (doc ~ /Errors:/ ? "ok" : "missing")
  }
  incmt { cmt = cmt " " $0; if ($0 ~ /\*\//) incmt = 0; next }
  /^[[:space:]]*\/\*/ { cmt = $0; incmt = ($0 !~ /\*\//); next }
  /^[a-z]/ && !/^typedef/ && match($0, /tern_[a-z0-9_]+\(/) {
    flush_decl(substr($0, RSTART, RLENGTH - 1)); next
  }
' "$header" > "${TMPDIR:-/tmp}/tern-header-errors.$$"
trap 'rm -f "${TMPDIR:-/tmp}/tern-header-errors.$$"' EXIT
status=0 n=0
while IFS=$'\t' read -r name state; do
  n=$((n + 1))
  if [ "$state" != ok ]; then echo "FAIL: $name: tern.h lists no errors (\"Errors:\")"; status=1; fi
  if ! grep -Eq "CALL[A-Z_]*\($name," "$table"; then
    echo "FAIL: $name: no row in $(basename "$table")"; status=1
  fi
done < "${TMPDIR:-/tmp}/tern-header-errors.$$"
echo "header_errors: $n calls"
[ $status -eq 0 ] && echo "header_errors: ok"
exit $status
