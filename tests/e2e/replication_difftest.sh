#!/bin/sh
# Differential testing of replication (tests/e2e/difftest.py) over a few
# fixed seeds: control mode (two plain directories must agree, which checks
# the tester itself), then mount mode without faults and with every fault
# kind (peer SIGSTOP/SIGCONT, kill -9 and restart, journal overflow,
# unmount + edits in the store + remount), the extended op kinds on both
# transports and in sync mode. A failure prints the seed, its
# ops and, for the first failing seed, each kind of divergence shrunk to a
# short op list (DIFFTEST_SHRINK seconds in all).
# DIFFTEST_SEED shifts the seeds (the soak script runs new ones).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

DT="python3 $TWINFS_SRC/tests/e2e/difftest.py --twinfs $TWINFS_BIN"
S=${DIFFTEST_SEED:-1}
SHRINK=${DIFFTEST_SHRINK:-60}

check "control: plain dirs agree (4 seeds x 1000 ops)" \
	$DT --mode control --seed "$S" --seeds 4 --ops 1000
check "mount, no faults (2 seeds x 600 ops)" \
	$DT --mode mount --faults none --seed "$S" --seeds 2 --ops 600 \
		--sync-timeout 20 --shrink-seconds "$SHRINK"
# The extended op kinds (fallocate modes, copy_file_range, mmap writes,
# set-id drops, ...; difftest_ops.py EXTRA), on both transports and in
# sync mode.
check "mount, extended ops (4 seeds x 600)" \
	$DT --mode mount --op-set all --faults none --seed $((S + 300)) --seeds 4 --ops 600 \
		--sync-timeout 20 --shrink-seconds 0
check "mount over /dev/fuse (--no-uring), extended ops (1 seed x 600)" \
	$DT --mode mount --op-set all --faults none --seed $((S + 304)) --ops 600 \
		--mount-args=--no-uring --sync-timeout 20 --shrink-seconds 0
check "mount in sync mode, extended ops (1 seed x 600)" \
	$DT --mode mount --op-set all --faults none --seed $((S + 305)) --ops 600 \
		--mount-args="--mode sync" --sync-timeout 20 --shrink-seconds 0
# The overflow fault fills 16 MiB of journal: one seed has it, the others
# the quicker faults.
check "mount, journal overflow among the faults (1 seed x 400 ops)" \
	$DT --mode mount --faults kill,restart,overflow,stop,cont --seed $((S + 100)) --ops 400 \
		--sync-timeout 20 --shrink-seconds 0
# Seed S+202 is the umount/remount case of difftest_cases/umount_names_after.jsonl.
check "mount, all quick faults (3 seeds x 400 ops)" \
	$DT --mode mount --faults stop,cont,kill,restart,umount,remount --seed $((S + 200)) --seeds 3 \
		--ops 400 --sync-timeout 20 --shrink-seconds 0
finish
