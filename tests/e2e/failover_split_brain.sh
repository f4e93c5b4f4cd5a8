#!/bin/sh
# Split brain both ways (issue 23), three times from scratch in network
# namespaces: A primary, B secondary; B's serve stops (A is cut off and
# goes on writing, which begins a generation of its own); B is promoted,
# mounted and written. A is unmounted, demoted and served, B's mount meets
# it: `status` on both says split_brain and lists exactly the paths A
# changed (the ones B cannot replicate), with each side's version; B's
# store is untouched, and A takes B's changes of every path A did not
# change (replication stops only for the conflicting paths), also those B
# makes during the split; a change of B's over a path A changed, or a
# folder removed around one, is held back and listed on both nodes. B's
# `sync` fails. Then `resolve --dry-run` changes nothing, and each of
# --keep local (on the secondary), --keep local (on the primary) and
# --keep both converges both stores (treecmp) with the expected versions
# and conflict copies. About 30 s.
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
	mkdir "$A_MNT/d1"; echo "base d1/f" >"$A_MNT/d1/f"
	"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null || fail "round $r: no base sync"
	# A's list of what it changed apart also names what changed within
	# the journal's mark slack (1 s) before a folder's first change: the
	# base is made older than that, so that the list is exactly A's own
	sleep 1.2
	stop_node B
	wait_until 10 not_connected A || fail "round $r: A still connected"
	echo "A's x1" >"$A_MNT/x1"; echo "A's s1" >"$A_MNT/s1"; rm "$A_MNT/s3"
	echo "A's d1/af" >"$A_MNT/d1/af"
	"$TWINFS_BIN" promote --state "$B_STATE" >/dev/null || fail "round $r: promote"
	mount_node B
	echo "B's y1" >"$B_MNT/y1"; echo "B's s1" >"$B_MNT/s1"; echo "B's s2" >"$B_MNT/s2"
	stop_node A
	"$TWINFS_BIN" demote --state "$A_STATE" >/dev/null || fail "round $r: demote"
	rm -rf "$T/snap"; mkdir "$T/snap"
	cp -a "$A_STORE" "$T/snap/A"; cp -a "$B_STORE" "$T/snap/B"
	serve_node A
	wait_until 20 split_seen A && wait_until 20 split_seen B &&
		wait_until 20 streamed
}

# streamed: A holds B's changes of the paths A did not change
streamed() { [ "$(cat "$A_STORE/y1" 2>/dev/null)" = "B's y1" ] &&
	[ "$(cat "$A_STORE/s2" 2>/dev/null)" = "B's s2" ]; }
# untouched: B's store as it was; A's as it was but for y1 and s2, B's
# (the roots left out of the second: copying into expect/ moved its mtime)
untouched() {
	rm -rf "$T/expect"; cp -a "$T/snap/A" "$T/expect"
	cp -a "$B_STORE/y1" "$B_STORE/s2" "$T/expect/"
	same_stores "$B_STORE" "$T/snap/B" && same_stores "$A_STORE" "$T/expect" --no-root
}
same_lists() { [ "$(diverged A)" = "$(diverged B)" ]; }
listed() { case " $(diverged "$1") " in *" $2 "*) return 0;; esac; return 1; }

# ---- round 1: detection, listing, the stream of what does not conflict,
# dry-run, --keep local on the secondary
make_split 1
check "split brain on the secondary (A)" split_seen A
check "split brain on the primary (B)" split_seen B
check "A lists exactly the paths it changed" [ "$(diverged A)" = "d1 d1/af s1 s3 x1" ]
check "B lists exactly the same paths" [ "$(diverged B)" = "d1 d1/af s1 s3 x1" ]
check "status text shows both versions of /s1" sh -c "'$TWINFS_BIN' status --state '$B_STATE' |
	grep -A2 '^  /s1 (changed on both nodes)' | grep -q 'peer: file 7 B'"
check "A took B's other changes; nothing else changed on either node" untouched
# B writes during the split: a new file and a removal reach A; a write
# over a path A changed, and a folder removed around A's file, do not
echo "B's z1" >"$B_MNT/z1"; rm "$B_MNT/s4"; echo "B's x1" >"$B_MNT/x1"
echo "B's s1 again" >"$B_MNT/s1"; rm -r "$B_MNT/d1"
z1_there() { [ "$(cat "$A_STORE/z1" 2>/dev/null)" = "B's z1" ] && [ ! -e "$A_STORE/s4" ]; }
check "B's new file and removal reach A during the split" wait_until 20 z1_there
d1_held() { listed A d1 && listed B d1 && same_lists; }
check "the removal of A's folder is held back and listed on both" wait_until 20 d1_held
check "... A's file in it is still there" [ "$(cat "$A_STORE/d1/af")" = "A's d1/af" ]
check "... B's file in it was removed (B removed it, A had not changed it)" 	[ ! -e "$A_STORE/d1/f" ]
# a held folder keeps its attributes, its mtime too, though entries in it
# change (the primary's ATTR of it is held back)
mtime_ns() { python3 -c 'import os, sys; print(os.lstat(sys.argv[1]).st_mtime_ns)' "$1"; }
check "... and A's folder keeps its own mtime" [ "$(mtime_ns "$A_STORE/d1")" = "$(mtime_ns "$T/snap/A/d1")" ]
check "A's own versions stay" sh -c "[ \"\$(cat '$A_STORE/x1')\" = \"A's x1\" ] &&
	[ \"\$(cat '$A_STORE/s1')\" = \"A's s1\" ] && [ ! -e '$A_STORE/s3' ]"
check "nothing else is listed" [ "$(diverged A)" = "d1 d1/af s1 s3 x1" ]
# A's serve dies during the split brain: the stream starts again from the
# common point over a store that holds its effects, and holds the same
kill -9 "$A_PID"; wait "$A_PID" 2>/dev/null; A_PID=
echo "B's z2" >"$B_MNT/z2"
serve_node A
z2_there() { [ "$(cat "$A_STORE/z2" 2>/dev/null)" = "B's z2" ] && split_seen A && split_seen B; }
check "after A's serve restarts, the stream resumes (B's new file reaches A)" wait_until 20 z2_there
lists_are() { [ "$(diverged A)" = "$1" ] && [ "$(diverged B)" = "$1" ]; }
check "... the same paths are listed on both" wait_until 10 lists_are "d1 d1/af s1 s3 x1"
check "... A's own versions stay" sh -c "[ \"\$(cat '$A_STORE/x1')\" = \"A's x1\" ] &&
	[ \"\$(cat '$A_STORE/s1')\" = \"A's s1\" ] && [ ! -e '$A_STORE/s3' ] &&
	[ \"\$(cat '$A_STORE/d1/af')\" = \"A's d1/af\" ]"
rm -rf "$T/snap"; mkdir "$T/snap"
cp -a "$A_STORE" "$T/snap/A"; cp -a "$B_STORE" "$T/snap/B"
untouched() { same_stores "$A_STORE" "$T/snap/A" && same_stores "$B_STORE" "$T/snap/B"; }
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
	[ \"\$(cat '$B_STORE/x1')\" = \"A's x1\" ] && [ ! -e '$B_STORE/s3' ] &&
	[ \"\$(cat '$B_STORE/d1/af')\" = \"A's d1/af\" ]"
check "B's changes that did not conflict stay" sh -c "[ \"\$(cat '$B_STORE/y1')\" = \"B's y1\" ] &&
	[ \"\$(cat '$B_STORE/z1')\" = \"B's z1\" ] && [ ! -e '$B_STORE/s4' ] && [ ! -e '$B_STORE/d1/f' ]"
check "B's versions are kept in B's conflicts" sh -c "
	grep -qx \"B's s1 again\" '$B_STATE'/conflicts/*-resolve/s1 &&
	grep -qx \"B's x1\" '$B_STATE'/conflicts/*-resolve/x1"
check "B's status lists its conflict copies" [ "$(status_of B conflict_copies)" -ge 2 ]
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
	[ \"\$(cat '$A_STORE/s3')\" = 'base 3' ] && [ ! -e '$A_STORE/d1/af' ]"
check "A's versions are kept in A's conflicts" sh -c "
	grep -qx \"A's x1\" '$A_STATE'/conflicts/*-resolve/x1 &&
	grep -qx \"A's s1\" '$A_STATE'/conflicts/*-resolve/s1 &&
	grep -qx \"A's d1/af\" '$A_STATE'/conflicts/*-resolve/d1/af"
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
