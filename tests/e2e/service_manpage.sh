#!/bin/sh
# twinfs(1) documents every option: each long (--name) and short (-x)
# option that any subcommand's --help shows (subcommands from
# `twinfs --help`, their verbs from "Usage: twinfs CMD a|b|c") appears in
# the rendered man page, which groff renders without warnings.
. "$(dirname "$0")/lib.sh"
MAN=$TWINFS_SRC/packaging/man/twinfs.1
command -v groff >/dev/null || skip "groff missing (apt install groff-base)"

groff -man -Tutf8 -ww -z "$MAN" 2>"$T/groff.err"
check "the man page renders without groff warnings" [ ! -s "$T/groff.err" ]
sed 's/^/# /' "$T/groff.err"
groff -man -Tascii "$MAN" 2>/dev/null | col -b >"$T/man.txt"

"$TWINFS_BIN" --help >"$T/help.all"
cmds=$(sed -n '/^Subcommands:/,/^$/s/^  \([a-z]*\) .*/\1/p' "$T/help.all" | tr '\n' ' ')
check "twinfs --help lists subcommands" [ -n "$cmds" ]
: >"$T/helps"
for c in $cmds; do
	"$TWINFS_BIN" "$c" --help >"$T/h" 2>&1
	cat "$T/h" >>"$T/helps"
	verbs=$(sed -n "s/^Usage: twinfs $c \([a-z]*\(|[a-z]*\)\+\) .*/\1/p" "$T/h" | head -n1 | tr '|' ' ')
	for v in $verbs; do
		"$TWINFS_BIN" "$c" "$v" --help >>"$T/helps" 2>&1
	done
done
cat "$T/help.all" >>"$T/helps"
# option tokens: --long-name, and -x standing alone (not inside a word)
grep -oE -- '--[a-z][a-z0-9-]*' "$T/helps" | sort -u >"$T/long"
grep -oE -- '(^|[][ |,])-[a-zA-Z]([][ |,]|$)' "$T/helps" | tr -d '[]|, ' | sort -u >"$T/short"
n=$(cat "$T/long" "$T/short" | wc -l)
note "$n distinct options in the --help texts of: $cmds"
check "found the options (at least 40)" [ "$n" -ge 40 ]
missing=""
for o in $(cat "$T/long" "$T/short"); do
	grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" "$T/man.txt" || missing="$missing $o"
done
check "every --help option is in twinfs(1)${missing:+ (missing:$missing)}" [ -z "$missing" ]
finish
