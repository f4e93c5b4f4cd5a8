#!/bin/sh
# A local-only mount (no peer: the journal never hands anything to a
# sender) gets 6,000 new small files in 20 folders while its open-file
# limit is 8,192. The fs itself holds one fd per inode the kernel caches
# (~6,000 here), so this only passes if the journal does not also hold
# one per dirty file (it used to: writes failed with EMFILE at ~4,000).
# Every write must succeed, and after the unmount the journal must list
# every one of the 6,000 paths as pending (offline, tests/e2e/fs/pending.c).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
command -v prlimit >/dev/null || skip "prlimit missing (util-linux)"
PENDING=${TWINFS_BUILD:?}/tests/e2e/fs_pending
[ -x "$PENDING" ] || fail "missing $PENDING (build first)"
NOFILE=8192

mkdir -p "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
# The daemon inherits the limit; without CAP_SYS_RESOURCE it cannot raise
# the hard one (with it, fs.c would raise it and the test proves less).
# In the foreground (-f) so that its log can be checked; prlimit execs it.
prlimit --nofile=$NOFILE:$NOFILE "$TWINFS_BIN" mount --store "$T/store" \
	--state "$T/state" --mountpoint "$T/mnt" -f 2>"$T/mount.log" &
pid=$!
track_pid "$pid"
wait_until 20 is_mounted "$T/mnt" || { cat "$T/mount.log" >&2; fail "mount failed"; }
limit=$(awk '/^Max open files/ {print $4}' "/proc/$pid/limits")
note "mount daemon open-file limit: $limit"
[ "$limit" = "$NOFILE" ] || skip "the daemon raised its fd limit to $limit (CAP_SYS_RESOURCE)"

# 20 folders x 300 files; each write is checked (open, write, close).
python3 - "$T/mnt" >"$T/write.out" 2>&1 <<'PY'
import os, sys
root, bad = sys.argv[1], 0
for d in range(20):
    p = os.path.join(root, "d%02d" % d)
    os.mkdir(p)
    for f in range(300):
        name = os.path.join(p, "f%03d" % f)
        try:
            with open(name, "wb") as fh:
                fh.write(b"%s\n" % name.encode())
        except OSError as e:
            bad += 1
            if bad <= 5:
                print("write failed: %s: %s" % (name, e))
print("failed writes: %d" % bad)
sys.exit(1 if bad else 0)
PY
wrc=$?
cat "$T/write.out"
check "all 6,000 writes succeed under a $NOFILE fd limit" [ "$wrc" -eq 0 ]
fds=$(ls "/proc/$pid/fd" | wc -l)
note "mount daemon holds $fds fds after the writes"
# The fs's ~6,020 inode fds plus a little; a dup per dirty file would
# add 6,000 more.
check "the journal holds no fd per dirty file" [ "$fds" -lt 7000 ]
check "the journal did not fall back to rescans" \
	sh -c '! grep -q "out of file descriptors" "$1"' _ "$T/mount.log"
check "store has the 6,000 files" \
	[ "$(find "$T/store" -type f | wc -l)" -eq 6000 ]

grep -q "journal tracks dirty files" "$T/mount.log" &&
	note "$(grep -o 'journal tracks dirty files[^"]*' "$T/mount.log")"
fusermount3 -u "$T/mnt"
check "daemon exits after unmount" wait_until 20 sh -c '! kill -0 "$1"' _ "$pid"

"$PENDING" "$T/state" "$T/store" >"$T/pending" 2>"$T/pending.err"
check "pending list readable offline" [ $? -eq 0 ]
cut -f2 "$T/pending" | grep '/f' | sort -u >"$T/listed"
(cd "$T/store" && find . -type f | sed 's|^\./||' | sort) >"$T/present"
comm -23 "$T/present" "$T/listed" >"$T/missing"
if [ -s "$T/missing" ]; then
	note "written but not listed ($(wc -l <"$T/missing")):"
	head -n 10 "$T/missing" >&2
fi
check "all 6,000 paths are listed as pending" \
	sh -c '[ "$(wc -l <"$1")" -eq 6000 ] && [ ! -s "$2" ]' _ "$T/listed" "$T/missing"
finish
