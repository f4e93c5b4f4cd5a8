#!/bin/sh
# Crash safety of the mount's journal: SIGKILL the mount daemon in the
# middle of a copy of many small files; afterwards (offline) the journal
# must list every path in the store changed since the last acknowledgement
# (there is no peer, so: every path), and a remount must work and show
# the files.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
PENDING=${TWINFS_BUILD:?}/tests/e2e/fs_pending
[ -x "$PENDING" ] || fail "missing $PENDING (build first)"

mkdir -p "$T/src" "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
# 40 folders x 100 files of 0-8 KiB.
python3 - "$T/src" <<'PY'
import os, random, sys
random.seed(7)
for d in range(40):
    p = os.path.join(sys.argv[1], "dir%02d" % d)
    os.makedirs(p)
    for f in range(100):
        with open(os.path.join(p, "f%03d" % f), "wb") as fh:
            fh.write(os.urandom(random.randint(0, 8192)))
PY

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" ||
	fail "mount failed"
pid=$(pgrep -f -- "--mountpoint $T/mnt( |\$)" | head -n1)
[ -n "$pid" ] || fail "no mount daemon"
track_pid "$pid"
echo before > "$T/mnt/before.txt"
sync -f "$T/mnt/before.txt"

cp -r "$T/src/." "$T/mnt/" 2>/dev/null &
cp_pid=$!
track_pid "$cp_pid"
# Kill once part of the copy reached the store.
check "copy reaches the store" wait_until 30 sh -c \
	'[ "$(find "$1" -type f | wc -l)" -ge 800 ]' _ "$T/store"
kill -KILL "$pid"
wait "$cp_pid" 2>/dev/null
umount -l "$T/mnt" 2>/dev/null || fusermount3 -uz "$T/mnt" 2>/dev/null
check "mount gone after SIGKILL + lazy unmount" \
	sh -c '! grep -qs " $1 fuse" /proc/mounts' _ "$T/mnt"
n_store=$(find "$T/store" -mindepth 1 | wc -l)
note "store has $n_store paths after the kill"
check "copy was interrupted (not all 4041 paths)" [ "$n_store" -lt 4041 ]

"$PENDING" "$T/state" "$T/store" >"$T/pending" 2>"$T/pending.err"
check "pending list readable offline" [ $? -eq 0 ]
(cd "$T/store" && find . -mindepth 1 | sed 's|^\./||' | sort) >"$T/present"
# A path is listed itself, or under a directory listed as needs-walk
# (changed just before the kill: everything under it is sent).
python3 - "$T/pending" "$T/present" >"$T/missing" <<'PY'
import sys
listed, walks = set(), []
for line in open(sys.argv[1]):
    why, path = line.rstrip("\n").split("\t", 1)
    listed.add(path)
    if why == "needs-walk":
        walks.append(path)
for p in open(sys.argv[2]):
    p = p.rstrip("\n")
    if p in listed or any(w == "" or p.startswith(w + "/") for w in walks):
        continue
    print(p)
PY
if [ -s "$T/missing" ]; then
	note "changed but not listed ($(wc -l <"$T/missing")):"
	head -n 20 "$T/missing" >&2
fi
check "every changed path is listed as pending" [ ! -s "$T/missing" ]

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" ||
	fail "remount after crash failed"
pid=$(pgrep -f -- "--mountpoint $T/mnt( |\$)" | head -n1)
[ -n "$pid" ] && track_pid "$pid"
check "remount shows the old file" grep -q before "$T/mnt/before.txt"
check "remount shows the copied files" \
	[ "$(find "$T/mnt" -type f | wc -l)" -eq "$(find "$T/store" -type f | wc -l)" ]
echo after > "$T/mnt/after.txt"
check "remount is writable" grep -q after "$T/store/after.txt"
fusermount3 -u "$T/mnt"
check "daemon exits after unmount" wait_until 10 sh -c '! kill -0 "$1"' _ "$pid"
finish
