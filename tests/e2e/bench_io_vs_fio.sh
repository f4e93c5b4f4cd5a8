#!/bin/sh
# bench/io-vs-fio.sh: runs `twinfs bench io` and fio side by side on a
# temporary folder and prints one comparable row per pattern (medians, best
# runs, ratios, the share that reached the block device); leaves nothing in
# the target. Whether the ratios agree is a property of the machine, so
# only the exit status contract (0 agree / 1 differ) is checked, not 0.
. "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || skip "fio missing"
command -v python3 >/dev/null || skip "python3 missing"

script=$TWINFS_SRC/bench/io-vs-fio.sh
mkdir -p "$T/t"
sh "$script" --twinfs "$TWINFS_BIN" --target "$T/t" --size 16M --runtime 1 --repeat 2 \
	--iodepth 8 --direct --patterns "4k-randread 1m-seqread" >"$T/out" 2>"$T/err"; rc=$?
cat "$T/out" "$T/err"
check "QD8 direct: exit 0 (agree) or 1 (differ)" [ $rc -eq 0 -o $rc -eq 1 ]
check "header names io_uring, direct=1 and the THP mode" \
	grep -Eq 'iodepth 8 \(io_uring\), 1s, direct=1, THP (always|madvise|never|absent)$' "$T/out"
check "one row per pattern with IOPS, ratios and dev%" python3 - "$T/out" <<'PY'
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r"(4k-randread|1m-seqread) ", l)]
assert [r[0] for r in rows] == ["4k-randread", "1m-seqread"], rows
for r in rows:
    tm, fm, ratio, tb, fb, best, paired = map(float, r[1:8])
    assert tm > 0 and fm > 0 and tb >= tm and fb >= fm and paired > 0, r
    assert abs(ratio - tm / fm) < 0.01 and abs(best - tb / fb) < 0.01, r
    # every O_DIRECT read is fetched from storage
    assert r[8] == "-" or all(float(x) > 50 for x in r[8].split("/")), r
    assert r[9] == "twinfs" and len(r[10].split("/")) == 2 and r[11] == "fio", r
PY
check "target left empty" [ -z "$(ls -A "$T/t")" ]

sh "$script" --twinfs "$TWINFS_BIN" --target "$T/t" --nope >/dev/null 2>"$T/e"; rc=$?
check "unknown option exits 64" [ $rc -eq 64 ]
check "unknown option is named" grep -q "unknown option '--nope'" "$T/e"
finish
