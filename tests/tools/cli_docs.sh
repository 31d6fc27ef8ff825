#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/cli.md, the man page and `tern help` stay in step: every subcommand
# docs/cli.md documents has a section in the man page and a line in
# `tern help`, and back; every option docs/cli.md gives a subcommand is in
# that subcommand's man page section and its `tern help CMD`, and every
# option `tern help CMD` lists is in docs/cli.md.
# Usage: cli_docs.sh TERN_BIN CLI_MD TERN_1
set -euo pipefail
tern=$1 md=$2 man=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tern-clidocs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
bad() { echo "FAIL: $*"; status=1; }

# Subcommands: the `tern WORD` lines of docs/cli.md's code blocks, the lines
# of the overview's "commands:" list, the man page's .SS headings.
awk '/^```/ { code = !code; next } code && /^tern [a-z]/ { print $2 }' "$md" | sort -u > "$tmp/md.cmds"
"$tern" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { exit }' |
  sort -u > "$tmp/help.cmds"
sed -n 's/^\.SS "\{0,1\}\([a-z][a-z-]*\).*/\1/p' "$man" | sort -u > "$tmp/man.cmds"
diff -u "$tmp/md.cmds" "$tmp/help.cmds" > /dev/null ||
  bad "subcommands of docs/cli.md (-) and tern help (+) differ: $(diff "$tmp/md.cmds" "$tmp/help.cmds" | grep '^[<>]' | tr '\n' ' ')"
diff -u "$tmp/md.cmds" "$tmp/man.cmds" > /dev/null ||
  bad "subcommands of docs/cli.md (-) and the man page's .SS sections (+) differ: $(diff "$tmp/md.cmds" "$tmp/man.cmds" | grep '^[<>]' | tr '\n' ' ')"

# The options in a text: --long ones anywhere, short ones as `-x` or [-x].
# (-h and --help, which every subcommand takes, are documented once at the top.)
options() {
  tee "$tmp/text" | grep -o -- '--[a-z][a-z0-9-]*' | grep -vx -- --help || true
  grep -o -e '`-[a-zA-Z]`' -e '\[-[a-zA-Z]\]' -e '^ *-[a-zA-Z][ ,]' -e '^\.B[RI]* -[a-zA-Z]\b' "$tmp/text" |
    grep -o -- '-[a-zA-Z]' | grep -vx -- -h || true
}
# Plain text of the man page: no font escapes, \- as -.
sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\(em/--/g' "$man" > "$tmp/man.txt"
# md_section CMD: the text of the docs/cli.md section whose "## " heading names CMD.
md_section() {
  awk -v c="$1" '/^## / { on = 0; n = split(substr($0, 4), w, /[ ,]+/); for (i = 1; i <= n; i++) if (w[i] == c) on = 1; next } on' "$md"
}
man_section() {
  awk -v c="$1" '/^\.S[SH] / { h = $2; gsub(/"/, "", h); on = ($1 == ".SS" && h == c); next } on' "$tmp/man.txt"
}
checked=0
while read -r cmd; do
  md_section "$cmd" > "$tmp/md.text"
  [ -s "$tmp/md.text" ] || [ "$cmd" = help ] || bad "docs/cli.md has no section '## $cmd'"
  options < "$tmp/md.text" | sort -u > "$tmp/md.opts"
  man_section "$cmd" | options | sort -u > "$tmp/man.opts"
  "$tern" help "$cmd" | options | sort -u > "$tmp/help.opts"
  while read -r opt; do
    checked=$((checked + 1))
    grep -qx -- "$opt" "$tmp/man.opts" || bad "$cmd $opt: in docs/cli.md, not in the man page's $cmd section"
    grep -qx -- "$opt" "$tmp/help.opts" || bad "$cmd $opt: in docs/cli.md, not in 'tern help $cmd'"
  done < "$tmp/md.opts"
  while read -r opt; do
    grep -qx -- "$opt" "$tmp/md.opts" || bad "$cmd $opt: in 'tern help $cmd', not in docs/cli.md"
  done < "$tmp/help.opts"
done < "$tmp/md.cmds"
# The options of tern itself, in the man page and the overview.
for opt in --version --help; do
  grep -q -- "$opt" "$tmp/man.txt" || bad "$opt: not in the man page"
  "$tern" help | grep -q -- "$opt" || bad "$opt: not in 'tern help'"
done
echo "cli_docs: $(wc -l < "$tmp/md.cmds") subcommands, $checked options checked"
# The man page renders without warnings.
if command -v groff > /dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1 || true)
  [ -z "$warnings" ] || bad "groff warnings in the man page: $warnings"
fi
[ $status -eq 0 ] && echo "cli_docs: ok"
exit $status
