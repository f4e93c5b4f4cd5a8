#!/bin/sh
# Fidelity: xattrs follow the inode through RENAME_EXCHANGE. x has user.a,
# y has user.b; exchange them twice, then remove one xattr: the peer must
# have exactly the primary's xattrs (none stale, none missing). Looped, as
# the order in which the peer applies the changes depends on timing; the
# later rounds run with the peer stopped (SIGSTOP: the changes queue up)
# and with the peer dead (the primary re-sends whole states). The
# directories' mtimes are set explicitly, so that this tests xattrs alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

for i in 1 2 3 4 5 6 7 8 9 10; do
	case $i in
	6|7|8) kill -STOP "$SERVE_PID" ;;
	9|10) kill_serve ;;
	esac
	mkdir -p "$MNT/r$i"
	echo x >"$MNT/r$i/x"; echo y >"$MNT/r$i/y"
	setfattr -n user.a -v A$i "$MNT/r$i/x"
	setfattr -n user.b -v B$i "$MNT/r$i/y"
	rename2 "$MNT/r$i/x" "$MNT/r$i/y" 2 || fail "exchange 1"
	rename2 "$MNT/r$i/x" "$MNT/r$i/y" 2 || fail "exchange 2"
	case $i in
	1|3|5|7|9) setfattr -x user.a "$MNT/r$i/x" ;;
	*) setfattr -x user.b "$MNT/r$i/y" ;;
	esac
	touch -d @1000000000 "$MNT/r$i"
	case $i in
	6|7|8) kill -CONT "$SERVE_PID" ;;
	9|10) start_serve; wait_until 20 connected || fail "the mount did not reconnect" ;;
	esac
	check "round $i: sync exits 0" synced 30
done
check "the peer has the same xattrs (treecmp)" stores_replicated

stop_mount
finish
