#!/bin/sh
# How many FUSE requests the common copies cost, counted by the kernel's
# fuse:fuse_request_send tracepoint (a tracefs instance of our own,
# filtered on this mount's connection), so that a change that brings a
# round trip back fails here whatever the machine's load:
#   - a new small file copied in costs at most LOOKUP, CREATE, the
#     parent's GETATTR and one GETXATTR (security.capability, once per
#     inode: FUSE_HANDLE_KILLPRIV_V2), no WRITE (passthrough);
#   - a 16 MiB file written in 4 KiB writes asks for security.capability
#     once, not per write;
#   - cp over an existing file is one OPEN, no SETATTR (atomic_o_trunc)
#     and no WRITE (the emptied file gets passthrough).
# Skips without root, FUSE passthrough (kernel 6.9+) or tracefs.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
TR=/sys/kernel/tracing
[ -d "$TR/instances" ] || mount -t tracefs none "$TR" 2>/dev/null || true
[ -d "$TR/instances" ] && [ -d "$TR/events/fuse/fuse_request_send" ] ||
	skip "no tracefs or no fuse tracepoints"

mkdir -p "$T/store" "$T/mnt" "$T/state" "$T/src"
track_mount "$T/mnt"
"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	-f -v >"$T/mount.log" 2>&1 &
track_pid $!
wait_until 10 is_mounted "$T/mnt" || fail "mount did not come up"
wait_until 10 grep -q "passthrough=" "$T/mount.log" || fail "no negotiation logged"
grep -q "passthrough=1" "$T/mount.log" || skip "no FUSE passthrough here ($(uname -r))"

I=$TR/instances/twinfs-requests-$$
mkdir "$I" || skip "cannot make a tracefs instance"
on_exit "echo 0 > '$I/events/fuse/fuse_request_send/enable' 2>/dev/null; rmdir '$I' 2>/dev/null"
conn=$(mountpoint -d "$T/mnt" | awk -F: '{print $1 * 1048576 + $2}')
echo "connection == $conn" >"$I/events/fuse/fuse_request_send/filter" ||
	fail "cannot filter the tracepoint"
echo 1 >"$I/events/fuse/fuse_request_send/enable"

# count: clears the trace, runs "$@", prints "OPCODE COUNT" lines
count() {
	: >"$I/trace"
	"$@" || fail "$* failed"
	sync -f "$T/mnt"	# the last RELEASE is in by the next request
	sed -n 's/.*opcode [0-9]* (\(FUSE_[A-Z_0-9]*\)).*/\1/p' "$I/trace" | sort | uniq -c |
		awk '{print $2, $1}'
}
n() { awk -v k="$1" '$1 == k {print $2}' "$2" | grep . || echo 0; }

i=0
mkdir "$T/src/tree"
while [ $i -lt 200 ]; do
	head -c $((i * 97 + 1)) /dev/urandom >"$T/src/tree/f$i"
	i=$((i + 1))
done
count cp -r "$T/src/tree" "$T/mnt/tree" >"$T/small"
note "200 new files: $(tr '\n' ' ' <"$T/small")"
sync_reqs=$(awk '$1 != "FUSE_RELEASE" && $1 != "FUSE_FORGET" && $1 != "FUSE_BATCH_FORGET" && $1 != "FUSE_RELEASEDIR" {s += $2} END {print s + 0}' "$T/small")
check "at most 4 synchronous requests per new file, +10 for the folder ($sync_reqs for 200)" \
	[ "$sync_reqs" -le 810 ]
check "... one CREATE and one LOOKUP per file" \
	[ "$(n FUSE_CREATE "$T/small")" -eq 200 ] && [ "$(n FUSE_LOOKUP "$T/small")" -le 205 ]
check "... one security.capability lookup per file ($(n FUSE_GETXATTR "$T/small"))" \
	[ "$(n FUSE_GETXATTR "$T/small")" -le 200 ]
check "... and no WRITE: the kernel writes new files itself" [ "$(n FUSE_WRITE "$T/small")" -eq 0 ]

count dd if=/dev/zero of="$T/mnt/big" bs=4k count=4096 status=none >"$T/big"
note "16 MiB in 4 KiB writes: $(tr '\n' ' ' <"$T/big")"
check "4,096 writes ask for security.capability at most twice ($(n FUSE_GETXATTR "$T/big"))" \
	[ "$(n FUSE_GETXATTR "$T/big")" -le 2 ]

head -c 16777216 /dev/urandom >"$T/src/over"
count cp "$T/src/over" "$T/mnt/big" >"$T/over"
note "cp over an existing 16 MiB file: $(tr '\n' ' ' <"$T/over")"
check "cp over an existing file sends no SETATTR (O_TRUNC comes with the OPEN)" \
	[ "$(n FUSE_SETATTR "$T/over")" -eq 0 ]
check "... and no WRITE (the emptied file gets passthrough)" [ "$(n FUSE_WRITE "$T/over")" -eq 0 ]
check "... and the store has the new content" cmp -s "$T/src/over" "$T/store/big"
finish
