#!/bin/sh
# The CLI contract: --help, --version, exit codes for unknown subcommands
# and options (64, with a usage hint), `config check` on the example config.
. "$(dirname "$0")/lib.sh"

out=$("$TWINFS_BIN" --help); rc=$?
check "--help exits 0" [ $rc -eq 0 ]
check "--help lists config" sh -c 'printf "%s" "$1" | grep -q "^  config "' _ "$out"
check "--version" sh -c '"$1" --version | grep -Eq "^twinfs [0-9]+\.[0-9]+\.[0-9]+$"' _ "$TWINFS_BIN"

"$TWINFS_BIN" frobnicate >"$T/out" 2>"$T/err"; rc=$?
check "unknown subcommand exits 64" [ $rc -eq 64 ]
check "unknown subcommand names it" grep -q "unknown subcommand 'frobnicate'" "$T/err"
check "unknown subcommand hints at --help" grep -q "twinfs --help" "$T/err"

"$TWINFS_BIN" >/dev/null 2>&1; rc=$?
check "no subcommand exits 64" [ $rc -eq 64 ]

for cmd in $("$TWINFS_BIN" --help | awk '/^Subcommands:/{f=1;next} f&&/^  [a-z]/{print $1} /^$/{if(f)exit}'); do
	"$TWINFS_BIN" "$cmd" --help >"$T/h" 2>&1; rc=$?
	check "$cmd --help exits 0" [ $rc -eq 0 ]
	check "$cmd --help prints usage" grep -qi "usage" "$T/h"
	"$TWINFS_BIN" "$cmd" --no-such-option >/dev/null 2>"$T/e"; rc=$?
	check "$cmd --no-such-option exits 64" [ $rc -eq 64 ]
done

finish
