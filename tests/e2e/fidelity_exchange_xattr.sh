#!/bin/sh
# Fidelity: xattrs follow the inode through RENAME_EXCHANGE. x has user.a,
# y has user.b; exchange them twice, then remove one xattr: the peer must
# have exactly the primary's xattrs (none stale, none missing). Looped, as
# the order in which the peer applies the changes depends on timing. The
# directories' mtimes are set explicitly, so that this tests xattrs alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

for i in 1 2 3 4 5; do
	mkdir -p "$MNT/r$i"
	echo x >"$MNT/r$i/x"; echo y >"$MNT/r$i/y"
	setfattr -n user.a -v A$i "$MNT/r$i/x"
	setfattr -n user.b -v B$i "$MNT/r$i/y"
	rename2 "$MNT/r$i/x" "$MNT/r$i/y" 2 || fail "exchange 1"
	rename2 "$MNT/r$i/x" "$MNT/r$i/y" 2 || fail "exchange 2"
	case $i in
	1|3|5) setfattr -x user.a "$MNT/r$i/x" ;;
	*) setfattr -x user.b "$MNT/r$i/y" ;;
	esac
	touch -d @1000000000 "$MNT/r$i"
	check "round $i: sync exits 0" synced 30
done
check "the peer has the same xattrs (treecmp)" stores_replicated

stop_mount
finish
