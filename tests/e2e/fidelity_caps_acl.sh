#!/bin/sh
# File capabilities (security.capability) and POSIX ACLs on every path a
# file reaches the peer by: the live stream, a new peer's baseline and a
# mirror. Before: a capability set after a file's last write in the same
# batch was dropped on the peer by that write's DATA (sent after the
# batch's ops), a baseline and a mirror carried neither capabilities nor
# ACLs, and a file created on the peer in a folder with a default ACL kept
# the ACL it inherited there though the source's file had none; `twinfs
# sync` said synced each time. After each step the stores compare equal
# by treecmp (every xattr namespace) and `twinfs verify` says identical.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v setfacl >/dev/null || skip "setfacl missing (apt install acl)"

CAP=0100000200200000000000000000000000000000	# cap_net_raw+ep, v2
setcap_() {
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "security.capability", bytes.fromhex(sys.argv[2]))' "$1" "$CAP"
}
hascap() { getfattr -n security.capability "$1" >/dev/null 2>&1; }
verified() { "$TWINFS_BIN" sync --state "$A_STATE" --verify -q >&2; }

start_serve
start_mount
mkdir "$MNT/d"
echo old >"$MNT/d/before"	# made before the folder's default ACL
setfacl -d -m u:1234:rwx "$MNT/d"
setfacl -m u:4321:r "$MNT/d/before"; setfacl -b "$MNT/d/before"
cp /bin/true "$MNT/d/t1"; setcap_ "$MNT/d/t1"	# one batch: the write, then the capability
cp /bin/true "$MNT/d/t2"; setcap_ "$MNT/d/t2"
echo inherits >"$MNT/d/new"
check "live: synced" synced
check "live: the capability set after the write is on the peer" hascap "$P_STORE/d/t1"
check "live: stores equal" stores_replicated
check "live: verify identical" verified
printf X | dd of="$MNT/d/t2" bs=1 seek=10 conv=notrunc status=none	# drops it on both
chown 5:5 "$MNT/d/t1"	# so does a chown
check "live: a write and a chown drop the capability on both" synced
check "live: ... stores equal" stores_replicated
check "live: ... dropped here" sh -c "! getfattr -n security.capability '$A_STORE/d/t2' >/dev/null 2>&1"

note "a new peer: the baseline"
setcap_ "$MNT/d/t1"
check "synced" synced
stop_mount
kill_serve
rm -rf "$P_STORE" "$P_STATE"; mkdir -p "$P_STORE" "$P_STATE"
start_serve
start_mount
check "baseline: synced" synced 60
check "baseline: capabilities and ACLs on the peer" sh -c \
	"getfattr -n security.capability '$P_STORE/d/t1' >/dev/null 2>&1 &&
	 getfacl -p '$P_STORE/d' | grep -q '^default:user:1234:rwx'"
check "baseline: stores equal" stores_replicated
check "baseline: verify identical" verified
stop_mount

note "a mirror into a local folder"
mkdir "$T/copy"
check "mirror: exit 0" "$TWINFS_BIN" mirror -q "$A_STORE" "$T/copy"
check "mirror: equal" same_stores "$A_STORE" "$T/copy"
check "mirror: verify identical" "$TWINFS_BIN" verify -q "$A_STORE" "$T/copy"
dump_logs_on_failure
finish
