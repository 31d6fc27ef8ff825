#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No function longer than MAX lines (signature to closing brace) in the C
# files of the given folders.  Functions are found the way the project
# writes them (clang-format, .clang-format): a definition starts at column 0
# and ends with the "}" in column 0 that closes it.  Before checking, the
# script proves on a made-up file that it sees an over-long function, so
# the check cannot pass by finding nothing.
# Usage: function_length.sh MAX DIR...
set -euo pipefail
max=$1
shift

# file:line name length, one line per function definition.
lengths() {
  awk '
    FNR == 1 { infn = 0; sig = 0 }
    {
      if (!infn) {
        if ($0 ~ /^[A-Za-z_]/ && $0 !~ /^(typedef|struct|enum|union)/ && $0 !~ /;[ \t]*$/ &&
            $0 !~ /=/) { sig = FNR; name = $0 }
        else if ($0 ~ /^[ \t]*$/ || $0 ~ /^(\/\*| \*|#)/ || $0 ~ /;[ \t]*$/) sig = 0
        if (sig && $0 ~ /\)[ \t]*\{[ \t]*$/) { infn = 1; start = sig }
      } else if ($0 ~ /^\}/) {
        sub(/\(.*/, "", name)
        k = split(name, w, /[ \t*]+/)
        print FILENAME ":" start " " w[k] " " FNR - start + 1
        infn = 0; sig = 0
      }
    }' "$@"
}

probe=$(mktemp --suffix=.c)
trap 'rm -f "$probe"' EXIT
{
  echo "static int short_one(int x) { return x; }"
  echo "static int long_one(int x,"
  echo "                    int y) {"
  for i in $(seq 1 $((max - 1))); do echo "  x += y * $i;"; done
  echo "  return x;"
  echo "}"
} >"$probe"
if ! lengths "$probe" | awk -v max="$max" '$2 == "long_one" && $3 > max { found = 1 } END { exit !found }'; then
  echo "FAIL: the checker does not see a $((max + 2))-line function in a made-up file"
  exit 1
fi

files=()
for d in "$@"; do
  while IFS= read -r f; do files+=("$f"); done < <(find "$d" -name '*.c' | sort)
done
[ "${#files[@]}" -gt 0 ] || { echo "FAIL: no C files in $*"; exit 1; }
all=$(lengths "${files[@]}")
long=$(awk -v max="$max" '$3 > max' <<<"$all")
count=$(wc -l <<<"$all")
longest=$(awk '$3 > best { best = $3; line = $0 } END { print line }' <<<"$all")
echo "function_length: $count functions in ${#files[@]} files; longest: $longest"
if [ -n "$long" ]; then
  echo "FAIL: functions over $max lines:"
  echo "$long"
  exit 1
fi
