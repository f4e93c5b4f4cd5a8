#!/bin/sh
# Split brain both ways (issue 23), three times from scratch in network
# namespaces: A primary, B secondary; B's serve stops (A is cut off and
# goes on writing, which begins a generation of its own); B is promoted,
# mounted and written. A is unmounted, demoted and served, B's mount meets
# it: both stores stay untouched, `status` on both says split_brain and
# lists exactly the diverged paths with each side's version, and B's
# `sync` fails. Then `resolve --dry-run` changes nothing, and each of
# --keep local (on the secondary), --keep local (on the primary) and
# --keep both converges both stores (treecmp) with the expected versions
# and conflict copies. About 20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover_lib.sh"

# diverged NODE: the diverged paths its status lists, sorted, on one line
diverged() {
	"$TWINFS_BIN" status --state "$(node_var "$1" STATE)" --json | python3 -c '
import json, sys
print(" ".join(sorted(e["path"] for e in json.load(sys.stdin).get("diverged", []))))'
}
split_seen() { [ "$(status_of "$1" split_brain)" = True ] && [ "$(status_of "$1" diverged_paths)" -gt 0 ]; }
over() { [ "$(status_of A split_brain)" = False ] && [ "$(status_of B split_brain)" = False ]; }

# make_split ROUND: fresh stores, then the split brain described above.
make_split() {
	r=$1
	for n in A B; do
		rm -rf "$T/$n"
		mkdir -p "$T/$n/store" "$T/$n/state" "$T/$n/mnt"
	done
	serve_node B
	mount_node A
	for i in 1 2 3 4; do echo "base $i" >"$A_MNT/s$i"; done
	"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null || fail "round $r: no base sync"
	stop_node B
	wait_until 10 not_connected A || fail "round $r: A still connected"
	echo "A's x1" >"$A_MNT/x1"; echo "A's s1" >"$A_MNT/s1"; rm "$A_MNT/s3"
	"$TWINFS_BIN" promote --state "$B_STATE" >/dev/null || fail "round $r: promote"
	mount_node B
	echo "B's y1" >"$B_MNT/y1"; echo "B's s1" >"$B_MNT/s1"; echo "B's s2" >"$B_MNT/s2"
	stop_node A
	"$TWINFS_BIN" demote --state "$A_STATE" >/dev/null || fail "round $r: demote"
	rm -rf "$T/snap"; mkdir "$T/snap"
	cp -a "$A_STORE" "$T/snap/A"; cp -a "$B_STORE" "$T/snap/B"
	serve_node A
	wait_until 20 split_seen A && wait_until 20 split_seen B
}

untouched() { same_stores "$A_STORE" "$T/snap/A" && same_stores "$B_STORE" "$T/snap/B"; }

# ---- round 1: detection, listing, dry-run, --keep local on the secondary
make_split 1
check "split brain on the secondary (A)" split_seen A
check "split brain on the primary (B)" split_seen B
check "A lists exactly the diverged paths" [ "$(diverged A)" = "s1 s2 s3 x1 y1" ]
check "B lists exactly the diverged paths" [ "$(diverged B)" = "s1 s2 s3 x1 y1" ]
check "status text shows both versions of /s1" sh -c "'$TWINFS_BIN' status --state '$B_STATE' |
	grep -A2 '^  /s1 (changed on both nodes)' | grep -q 'peer: file 7 B'"
check "nothing was overwritten on either node" untouched
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 5 >/dev/null 2>&1
check "sync on the primary fails (69) in a split brain" [ $? -eq 69 ]
"$TWINFS_BIN" resolve --state "$A_STATE" --keep local --dry-run >"$T/dry.out"
check "resolve --dry-run exits 0" [ $? -eq 0 ]
check "... prints what would happen to each path" [ "$(grep -c '^  /' "$T/dry.out")" -eq 5 ]
check "... and changes nothing" untouched
check "... no conflict folder made" [ ! -d "$B_STATE/conflicts" ]
"$TWINFS_BIN" resolve --state "$A_STATE" --keep local --timeout 60 >/dev/null
check "resolve --keep local on the secondary exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "then B syncs" [ $? -eq 0 ]
check "stores equal (treecmp)" same_stores "$A_STORE" "$B_STORE"
check "A's versions won" sh -c "[ \"\$(cat '$B_STORE/s1')\" = \"A's s1\" ] &&
	[ \"\$(cat '$B_STORE/x1')\" = \"A's x1\" ] && [ ! -e '$B_STORE/s3' ] && [ ! -e '$B_STORE/y1' ]"
check "B's versions are kept in B's conflicts" sh -c "
	grep -qx \"B's y1\" '$B_STATE'/conflicts/*-resolve/y1 &&
	grep -qx \"B's s1\" '$B_STATE'/conflicts/*-resolve/s1 &&
	grep -qx \"B's s2\" '$B_STATE'/conflicts/*-resolve/s2"
check "B's status lists its conflict copies" [ "$(status_of B conflict_copies)" -ge 3 ]
check "the split brain is over on both" over
"$TWINFS_BIN" resolve --state "$A_STATE" --keep local >/dev/null
check "resolve again: nothing to do, exit 0" [ $? -eq 0 ]
stop_node A; stop_node B

# ---- round 2: --keep local on the primary
make_split 2
"$TWINFS_BIN" resolve --state "$B_STATE" --keep local --timeout 60 >/dev/null
check "resolve --keep local on the primary exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "stores equal after --keep local on the primary" same_stores "$A_STORE" "$B_STORE"
check "B's versions won" sh -c "[ \"\$(cat '$A_STORE/s1')\" = \"B's s1\" ] &&
	[ \"\$(cat '$A_STORE/y1')\" = \"B's y1\" ] && [ ! -e '$A_STORE/x1' ] &&
	[ \"\$(cat '$A_STORE/s3')\" = 'base 3' ]"
check "A's versions are kept in A's conflicts" sh -c "
	grep -qx \"A's x1\" '$A_STATE'/conflicts/*-resolve/x1 &&
	grep -qx \"A's s1\" '$A_STATE'/conflicts/*-resolve/s1"
stop_node A; stop_node B

# ---- round 3: --keep both
make_split 3
"$TWINFS_BIN" resolve --state "$B_STATE" --keep both --timeout 60 >/dev/null
check "resolve --keep both exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "stores equal after --keep both" same_stores "$A_STORE" "$B_STORE"
check "each side's own changes are taken" sh -c "[ \"\$(cat '$A_STORE/x1')\" = \"A's x1\" ] &&
	[ \"\$(cat '$A_STORE/y1')\" = \"B's y1\" ] && [ \"\$(cat '$A_STORE/s2')\" = \"B's s2\" ] &&
	[ ! -e '$A_STORE/s3' ]"
check "/s1, changed on both: the primary's at the name, the secondary's beside it" sh -c "
	[ \"\$(cat '$A_STORE/s1')\" = \"B's s1\" ] &&
	grep -qx \"A's s1\" '$A_STORE'/s1.conflict-*-*Z && grep -qx \"A's s1\" '$B_STORE'/s1.conflict-*-*Z"
finish
