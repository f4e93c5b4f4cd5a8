#!/bin/sh
# fsx on a twinfs mount: 50,000 random writes, truncates, reads, mmap
# writes/reads, fallocates, fsyncs and reopens, each read checked against
# an in-memory model; then the store's copy must equal the mount's.
# TWINFS_MOUNT_ARGS adds mount flags (the suite also runs it with
# --no-passthrough). Longer runs: TWINFS_FSX_OPS=1000000 TWINFS_FSX_SEED=N (bench/ does so).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
FSX=${TWINFS_BUILD:?}/tests/e2e/fs_fsx
[ -x "$FSX" ] || fail "missing $FSX (build first)"
OPS=${TWINFS_FSX_OPS:-50000}
SEED=${TWINFS_FSX_SEED:-20261130}

mkdir -p "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	${TWINFS_MOUNT_ARGS:-} ||
	fail "mount failed"
pid=$(pgrep -f -- "--mountpoint $T/mnt( |\$)" | head -n1)
[ -n "$pid" ] && track_pid "$pid"

check "fsx $OPS ops, seed $SEED" "$FSX" --ops "$OPS" --seed "$SEED" \
	${TWINFS_FSX_MAXLEN:+--maxlen "$TWINFS_FSX_MAXLEN"} "$T/mnt/fsx.dat"
check "fsx with 4 MiB files" "$FSX" --ops 2000 --seed "$((SEED + 1))" \
	--maxlen 4194304 "$T/mnt/fsx-big.dat"
sync -f "$T/mnt/fsx.dat"
check "store copy equals the mount's" cmp "$T/mnt/fsx.dat" "$T/store/fsx.dat"
check "store copy equals the mount's (big)" cmp "$T/mnt/fsx-big.dat" "$T/store/fsx-big.dat"
finish
