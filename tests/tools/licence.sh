#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every source file git tracks names its licence (MIT, LICENSE) in an SPDX
# line among its first three lines; LICENSE itself is MIT.  Data, documents
# and frozen test inputs are not source.
# Usage: licence.sh SOURCE_DIR
set -euo pipefail
cd "$1"
grep -q '^MIT License' LICENSE || { echo "FAIL: LICENSE is not the MIT licence"; exit 1; }
missing=0 checked=0
while IFS= read -r f; do
  case "$f" in
    *.c|*.h|*.py|*.sh|*.cmake|*.toml|CMakeLists.txt|*/CMakeLists.txt|scripts/*|.ci/*|docs/tern.1) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  if ! head -3 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
    echo "FAIL: $f: no 'SPDX-License-Identifier: MIT' line in its first three lines"
    missing=$((missing + 1))
  fi
done < <(git ls-files 2>/dev/null || find . -type f | sed 's|^\./||')
echo "licence: $checked source files, $missing without an SPDX line"
[ "$missing" -eq 0 ]
