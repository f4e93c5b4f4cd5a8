#!/bin/sh
# difftest-soak: the differential tester (tests/e2e/difftest.py) in mount
# mode with every fault kind, seed after seed, for a given time; prints the
# seeds and ops run and the failing seeds (their output, shrunk sequences
# included, in the log directory).
# Usage: bench/difftest-soak.sh [--duration SECONDS] [--seed FIRST]
#        [--ops PER_SEED] [--faults LIST] [--shrink-seconds S] [--logs DIR]
#        [--op-set classic|all|security] [--mount-args "ARGS"] [--strict-apply]
#        (needs root and a build in ./build; BUILD=dir to change)
# --mount-args "--no-uring --mode sync" runs the other transport and mode.
set -eu
BUILD=${BUILD:-$(dirname "$0")/../build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
DURATION=3600 SEED=1000 OPS=400 FAULTS=all SHRINK=120 LOGS= OPSET=all MARGS= STRICT=
while [ $# -gt 0 ]; do
	case $1 in
	--duration) DURATION=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--ops) OPS=$2; shift 2 ;;
	--faults) FAULTS=$2; shift 2 ;;
	--shrink-seconds) SHRINK=$2; shift 2 ;;
	--logs) LOGS=$2; shift 2 ;;
	--op-set) OPSET=$2; shift 2 ;;
	--mount-args) MARGS=$2; shift 2 ;;
	--strict-apply) STRICT=--strict-apply; shift ;;
	*) echo "difftest-soak: unknown option $1" >&2; exit 64 ;;
	esac
done
[ -n "$LOGS" ] || LOGS=$(mktemp -d "${TMPDIR:-/tmp}/difftest-soak.XXXXXX")
mkdir -p "$LOGS"
end=$(( $(date +%s) + DURATION ))
seeds=0 ops=0 failed=0 first=$SEED
# Only the first failing seed is shrunk: shrinking a sequence whose sync
# times out costs a sync timeout per try.
while [ "$(date +%s)" -lt "$end" ]; do
	shrink=0
	[ "$failed" -eq 0 ] && shrink=$SHRINK
	log=$LOGS/seed-$SEED.log
	rc=0
	python3 "$SRC/tests/e2e/difftest.py" --twinfs "$BUILD/src/twinfs" --mode mount \
		--faults "$FAULTS" --seed "$SEED" --ops "$OPS" --sync-timeout 20 \
		--op-set "$OPSET" --mount-args="$MARGS" $STRICT \
		--shrink-seconds "$shrink" >"$log" 2>&1 || rc=$?
	n=$(sed -n 's/^# difftest: [0-9]* seed(s), \([0-9]*\) ops.*/\1/p' "$log")
	ops=$((ops + ${n:-0}))
	if [ "$rc" -eq 0 ]; then
		rm -f "$log"
	else
		[ "$rc" -eq 1 ] || echo "difftest-soak: seed $SEED: harness error (exit $rc), see $log" >&2
		failed=$((failed + 1))
		echo "seed $SEED: $(sed -n 's/^# seed .*: \(FAIL.*\)/\1/p' "$log") ($log)"
		sed -n 's/^== divergence classes of seed [0-9]*: /    classes: /p' "$log" | cut -c1-300
	fi
	seeds=$((seeds + 1))
	SEED=$((SEED + 1))
done
echo "difftest-soak: seeds $first..$((SEED - 1)) ($seeds seeds), $ops ops, $failed failed" \
	"(faults $FAULTS, op set $OPSET, mount args '$MARGS'${STRICT:+, strict apply}); logs in $LOGS"
[ "$failed" -eq 0 ]
