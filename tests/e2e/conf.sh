#!/bin/sh
# `twinfs config check|print|keys` as a user runs them: exit codes (0 valid,
# 78 invalid, 64 usage), every error printed with FILE:LINE:COLUMN, the
# shipped example valid, print output valid input again.
. "$(dirname "$0")/lib.sh"

EX="$TWINFS_SRC/conf/twinfs.example.yaml"
"$TWINFS_BIN" config check "$EX" >"$T/out" 2>"$T/err"; rc=$?
check "example config passes config check" [ $rc -eq 0 ]
check "check says ok" grep -q ": ok$" "$T/out"

mkdir -p "$T/store" "$T/mnt"
cat >"$T/bad.yaml" <<YAML
store: $T/store
state: $T/state
mountpont: $T/mnt
mode: fast
journal:
  size_limit: 2
  commit_ms: soon
store: $T/store
YAML
"$TWINFS_BIN" config check "$T/bad.yaml" >"$T/out" 2>"$T/err"; rc=$?
check "bad config exits 78" [ $rc -eq 78 ]
check "unknown key located, with suggestion" grep -q "^$T/bad.yaml:3:1: unknown key 'mountpont' (did you mean 'mountpoint'?)" "$T/err"
check "bad enum located" grep -q "^$T/bad.yaml:4:7: key 'mode'" "$T/err"
check "out of range located" grep -q "^$T/bad.yaml:6:15: key 'journal.size_limit': 2 is out of range" "$T/err"
check "wrong type located" grep -q "^$T/bad.yaml:7:14: key 'journal.commit_ms'" "$T/err"
check "duplicate located" grep -q "^$T/bad.yaml:8:1: duplicate key 'store'" "$T/err"
check "error count" grep -q "5 errors" "$T/err"

cat >"$T/good.yaml" <<YAML
store: $T/store
state: $T/state
mountpoint: $T/mnt
journal:
  size_limit: 64M
YAML
"$TWINFS_BIN" config check --for mount "$T/good.yaml" >/dev/null 2>&1; rc=$?
check "valid mount config passes --for mount" [ $rc -eq 0 ]
"$TWINFS_BIN" config check --for serve "$T/good.yaml" >/dev/null 2>"$T/err"; rc=$?
check "--for serve needs listen" [ $rc -eq 78 ]
check "missing listen named" grep -q "missing required key 'listen'" "$T/err"
"$TWINFS_BIN" config print "$T/good.yaml" >"$T/printed.yaml"; rc=$?
check "print exits 0" [ $rc -eq 0 ]
check "print fills defaults" grep -q "^  commit_ms: 5$" "$T/printed.yaml"
check "print keeps values" grep -q "^  size_limit: 64MiB$" "$T/printed.yaml"
"$TWINFS_BIN" config check "$T/printed.yaml" >/dev/null 2>&1; rc=$?
check "printed config is valid input" [ $rc -eq 0 ]

"$TWINFS_BIN" config check "$T" >/dev/null 2>"$T/err"; rc=$?
check "directory as config exits 78" [ $rc -eq 78 ]
"$TWINFS_BIN" config check "$T/nope.yaml" >/dev/null 2>"$T/err"; rc=$?
check "missing config exits 66, as for every command" [ $rc -eq 66 ]
check "and says why on the last line" sh -c 'tail -n1 "$1" | grep -q "nope.yaml: cannot open config file: No such file"' _ "$T/err"
printf 'store: %s\n' "$T" >"$T/nomnt.yaml"
"$TWINFS_BIN" mount --config "$T/nomnt.yaml" >/dev/null 2>"$T/err"; rc=$?
check "a key missing from the file: 78, reported against the file" \
	sh -c '[ $1 -eq 78 ] && tail -n1 "$2" | grep -q "^$3: missing required key"' _ $rc "$T/err" "$T/nomnt.yaml"
"$TWINFS_BIN" config frob x >/dev/null 2>&1; rc=$?
check "unknown verb exits 64" [ $rc -eq 64 ]
"$TWINFS_BIN" config keys | grep -q "journal.size_limit"; rc=$?
check "keys lists the table" [ $rc -eq 0 ]

finish
