#!/bin/sh
# The mount holds one fd per inode the kernel caches, and the kernel
# caches inodes for as long as it likes; fs/evict.c asks it to drop the
# least recently used names once the table passes its share of the
# open-file limit. With a limit of 600 fds, 4,000 files are created,
# renamed, listed (readdirplus) and read back while 40 of them stay open:
# nothing may fail with EMFILE, the open files keep working, and the
# daemon stays under its limit.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
command -v prlimit >/dev/null || skip "prlimit missing (util-linux)"
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
NOFILE=600

mkdir -p "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
# Without CAP_SYS_RESOURCE the daemon cannot raise its hard limit (as
# root it would, and the test would prove nothing).
setpriv --bounding-set -sys_resource prlimit --nofile=$NOFILE:$NOFILE \
	"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" \
	--mountpoint "$T/mnt" -f 2>"$T/mount.log" &
pid=$!
track_pid "$pid"
wait_until 20 is_mounted "$T/mnt" || { cat "$T/mount.log" >&2; fail "mount failed"; }
limit=$(awk '/^Max open files/ {print $4}' "/proc/$pid/limits")
[ "$limit" = "$NOFILE" ] || fail "the daemon runs with an fd limit of $limit, not $NOFILE"

python3 - "$T/mnt" "$pid" >"$T/run.out" 2>&1 <<'PY'
import os, sys
root, pid = sys.argv[1], sys.argv[2]
bad, peak = [], 0
def fds():
    return len(os.listdir("/proc/%s/fd" % pid))
def attempt(what, fn):
    try:
        return fn()
    except OSError as e:
        bad.append("%s: %s" % (what, e))
# 40 files held open through everything
held = []
for k in range(40):
    p = os.path.join(root, "held%02d" % k)
    f = open(p, "w+b")
    f.write(b"held %d\n" % k)
    held.append(f)
for d in range(4):
    os.mkdir(os.path.join(root, "d%d" % d))
    for n in range(1000):
        p = os.path.join(root, "d%d" % d, "f%04d" % n)
        def w(p=p):
            with open(p, "wb") as f:
                f.write(p.encode())
        attempt("create " + p, w)
        if n % 100 == 0:
            peak = max(peak, fds())
# renames of names the kernel may no longer cache
for n in range(0, 1000, 10):
    attempt("rename", lambda n=n: os.rename(os.path.join(root, "d0", "f%04d" % n),
                                           os.path.join(root, "d1", "r%04d" % n)))
# listing with attributes (readdirplus looks every entry up)
names = 0
def walk_error(e):
    bad.append("list: %s" % e)
for dirpath, dirs, files in os.walk(root, onerror=walk_error):
    for f in files:
        attempt("stat", lambda p=os.path.join(dirpath, f): os.lstat(p))
        names += 1
peak = max(peak, fds())
# everything reads back
for d in range(4):
    for n in range(1000):
        p = os.path.join(root, "d%d" % d, "f%04d" % n)
        if d == 0 and n % 10 == 0:
            p, want = os.path.join(root, "d1", "r%04d" % n), os.path.join(root, "d0", "f%04d" % n)
        else:
            want = p
        got = attempt("read " + p, lambda p=p: open(p, "rb").read())
        if got is not None and got != want.encode():
            bad.append("content of %s" % p)
for k, f in enumerate(held):
    f.write(b"more\n")
    f.seek(0)
    if f.read() != b"held %d\nmore\n" % k:
        bad.append("held file %d" % k)
    f.close()
print("names listed: %d" % names)
print("peak daemon fds: %d" % peak)
print("failures: %d" % len(bad))
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
rc=$?
cat "$T/run.out"
check "4,000 creates, renames, listings and reads under a $NOFILE fd limit" [ "$rc" -eq 0 ]
check "the listing saw every name" grep -q "names listed: 4040" "$T/run.out"
peak=$(sed -n 's/^peak daemon fds: //p' "$T/run.out")
check "the daemon stayed under its limit (peak ${peak:-?} fds)" [ "${peak:-999}" -lt $NOFILE ]
check "the log says why it evicts" grep -q "asking it to drop" "$T/mount.log"
check "store has every file" [ "$(find "$T/store" -type f | wc -l)" -eq 4040 ]
fusermount3 -u "$T/mnt"
check "daemon exits after unmount" wait_until 20 sh -c '! kill -0 "$1"' _ "$pid"
finish
