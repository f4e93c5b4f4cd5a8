#!/bin/sh
# `twinfs demo` end to end with a small data set: exit 0, equal digests,
# and nothing left behind (no mount, no process, no temp folder).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
mkdir "$T/demo"
"$TWINFS_BIN" demo --dir "$T/demo" --large 20M --small-count 300 >"$T/out" 2>&1; rc=$?
cat "$T/out"
check "demo exits 0" [ $rc -eq 0 ]
check "demo prints two equal digests" sh -c "
	m=\$(sed -n 's/.*mount tree digest: \([0-9a-f]*\).*/\1/p' '$T/out')
	p=\$(sed -n 's/.*peer  tree digest: \([0-9a-f]*\).*/\1/p' '$T/out')
	[ -n \"\$m\" ] && [ \"\$m\" = \"\$p\" ]"
check "demo printed lag lines" grep -q "lag" "$T/out"
check "demo removed its folder" [ -z "$(ls -A "$T/demo")" ]
check "demo left no mount" sh -c "! grep -q '$T/demo' /proc/mounts"
finish
