#!/bin/sh
# Fidelity: a file created and truncated with no write (`: > f`, i.e.
# O_CREAT|O_TRUNC) while the peer is stopped (SIGSTOP) keeps its mtime on
# the peer: the mtime is the primary's, not the time the peer applied it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
echo old >"$MNT/existing"
check "first sync exits 0" synced 30

kill -STOP "$SERVE_PID"
on_exit "kill -CONT $SERVE_PID 2>/dev/null"
: >"$MNT/f"
: >"$MNT/existing"
sleep 2   # the rule under test is about time passing before the peer applies
kill -CONT "$SERVE_PID"
check "sync after SIGCONT exits 0" synced 60
check "f and existing keep the primary's mtimes on the peer (treecmp)" stores_replicated

stop_mount
finish
