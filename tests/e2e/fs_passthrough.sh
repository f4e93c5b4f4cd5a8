#!/bin/sh
# FUSE passthrough (fs/backing.c), checked against the kernel's own
# request log (-d): a new file is written and read back without a single
# WRITE or READ request reaching the daemon, writes into existing data
# still do (so the journal sees their ranges), and the cases where the
# two kinds of open meet keep the data right: an open forced into
# passthrough by an open reader, mmap writes through it, the page cache
# of a later ordinary open, appends. Skips on kernels without passthrough.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

mkdir -p "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	-d -v >"$T/debug.log" 2>&1 &
track_pid $!
wait_until 10 is_mounted "$T/mnt" || fail "mount did not come up"
wait_until 10 grep -q "passthrough=" "$T/debug.log" || fail "no negotiation logged"
grep -q "passthrough=1" "$T/debug.log" ||
	skip "the kernel did not offer FUSE passthrough ($(uname -r))"

# ops FROM: the FUSE opcodes logged since line FROM of the debug log.
mark() { wc -l <"$T/debug.log"; }
ops_since() { tail -n +"$(($1 + 1))" "$T/debug.log" | grep -a -o 'opcode: [A-Z_]*' | sed 's/opcode: //'; }
count_since() { ops_since "$1" | grep -c "^$2\$"; }

head -c 3000000 /dev/urandom >"$T/src"
m=$(mark)
cp "$T/src" "$T/mnt/new"
check "a new file is written without WRITE requests" [ "$(count_since "$m" WRITE)" -eq 0 ]
check "the store holds the new file" cmp "$T/src" "$T/store/new"
# An append right after passthrough writes: the kernel must know the new
# size (the append goes through the daemon at the kernel's EOF).
cp "$T/src" "$T/mnt/grown"
printf 'TAIL' >>"$T/mnt/grown"
check "an append after passthrough writes grows the file" \
	[ "$(stat -c %s "$T/store/grown")" -eq 3000004 ]
check "... and lands at the end" [ "$(tail -c 4 "$T/store/grown")" = TAIL ]
sync; echo 3 >/proc/sys/vm/drop_caches
m=$(mark)
check "a cold read returns the data" cmp "$T/src" "$T/mnt/new"
check "... without READ requests" [ "$(count_since "$m" READ)" -eq 0 ]

m=$(mark)
printf 'XXXX' | dd of="$T/mnt/new" bs=1 seek=100000 conv=notrunc status=none
printf 'XXXX' | dd of="$T/src" bs=1 seek=100000 conv=notrunc status=none
check "a write into existing data goes through the daemon" [ "$(count_since "$m" WRITE)" -ge 1 ]
check "... and lands" cmp "$T/src" "$T/mnt/new"
check "... in the store too" cmp "$T/src" "$T/store/new"

# The kernel allows no mix of passthrough and ordinary opens of one
# inode: a writer arriving while a passthrough reader is open is put in
# passthrough too; its writes (plain and mmap) go around the page cache
# that an earlier ordinary open filled, so the next ordinary open must
# not see those stale pages.
python3 - "$T/mnt/new" "$T/store/new" >"$T/mix.out" 2>&1 <<'PY'
import mmap, os, sys
path, store = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR)          # ordinary open: fills the page cache
first = os.pread(fd, 4096, 0)
os.close(fd)
reader = os.open(path, os.O_RDONLY)    # passthrough
writer = os.open(path, os.O_RDWR)      # forced into passthrough
os.pwrite(writer, b"A" * 4096, 0)
m = mmap.mmap(writer, 8192)
m[4096:4100] = b"MMAP"
m.flush()
m.close()
os.close(writer)
os.close(reader)
fd = os.open(path, os.O_RDWR)          # ordinary again
got = os.pread(fd, 8192, 0)
os.close(fd)
with open(store, "rb") as f:
    raw = f.read(8192)
ok = got[:4096] == b"A" * 4096 and got[4096:4100] == b"MMAP" and raw == got
print("first", first[:8], "got", got[:8], got[4096:4100], "store", raw[:8], raw[4096:4100])
sys.exit(0 if ok else 1)
PY
rc=$?
cat "$T/mix.out"
check "writes of an open forced into passthrough (pwrite, mmap) are seen by the next ordinary open and the store" [ $rc -eq 0 ]

python3 - "$T/mnt/app" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.write(fd, b"a")
os.pwrite(fd, b"b", 0)   # O_APPEND: pwrite appends on Linux
os.close(fd)
PY
echo c >>"$T/mnt/app"
check "O_APPEND appends (new and existing file)" [ "$(cat "$T/mnt/app")" = "abc" ]
check "... in the store too" [ "$(cat "$T/store/app")" = "abc" ]

# An empty existing file opened write-only is rewritten whole: passthrough.
: >"$T/mnt/empty"
m=$(mark)
cp "$T/src" "$T/mnt/empty"
check "rewriting an emptied file needs no WRITE requests" [ "$(count_since "$m" WRITE)" -eq 0 ]
check "... and its data is right" cmp "$T/src" "$T/store/empty"

# O_DIRECT keeps the path through the daemon.
m=$(mark)
dd if="$T/src" of="$T/mnt/direct" bs=4096 count=16 oflag=direct status=none
check "O_DIRECT writes reach the daemon" [ "$(count_since "$m" WRITE)" -ge 1 ]
check "... and are right" cmp -n 65536 "$T/src" "$T/store/direct"
finish
