#!/bin/sh
# The split brain's stream and `twinfs resolve`, randomized
# (tests/e2e/splitfuzz.py): a few fixed seeds, each from scratch in two
# network namespaces: a random base tree synced, random ops on both nodes
# apart, the split brain with more ops on the new primary (and, on some
# seeds, the secondary's serve killed and served again), the checks
# before the resolve (B untouched, A's listed paths as A left them, the
# rest equal to B), then resolve and sync (stores equal, no version lost).
# A failure prints the seed, the check, the ops and both daemons' logs.
# SPLITFUZZ_SEED shifts the seeds (bench/splitfuzz-soak.sh runs new ones).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
command -v ip >/dev/null || skip "ip missing (apt install iproute2)"
command -v nsenter >/dev/null || skip "nsenter missing (apt install util-linux)"

S=${SPLITFUZZ_SEED:-1}
SF="python3 $TWINFS_SRC/tests/e2e/splitfuzz.py --twinfs $TWINFS_BIN --keep $T/seeds
	--seed-timeout 100 --resolve-timeout 20 --stream-timeout 15"
# the regressions the fuzzer found, each a fixed op list (each file says
# why; failures found and not fixed yet go to open/, which is not run)
for c in "$TWINFS_SRC"/tests/e2e/splitfuzz_cases/*.json; do
	check "case $(basename "$c" .json)" $SF --seeds 0 --case "$c"
done
check "split brain, random ops (4 seeds: restart, no restart, each --keep)" \
	$SF --seed "$S" --seeds 4
finish
