#!/bin/sh
# `twinfs bench sweep --threads 1..4`: one line per thread count (1, 2, 4),
# a knee line, JSON with one result per count; the test file is removed.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 missing"

mkdir -p "$T/t"
"$TWINFS_BIN" bench sweep --target "$T/t" --pattern 4k-randread --threads 1..4 \
	--runtime 1 --size 16M --json "$T/s.json" --report "$T/rep" >"$T/out" 2>"$T/err"; rc=$?
cat "$T/out"
check "sweep exits 0" [ $rc -eq 0 ]
check "3 lines, for 1, 2 and 4 threads" [ "$(grep -Ec '^(1|2|4) +[0-9]+ ' "$T/out")" -eq 3 ]
check "names a knee (or says there is none)" grep -Eq '^knee: ([0-9]+ threads|none in range)' "$T/out"
check "JSON: 3 results with jobs 1,2,4 and IOPS > 0" python3 - "$T/s.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["jobs"] for r in d["results"]] == [1, 2, 4], d
assert all(r["iops"] > 0 for r in d["results"]), d
PY
check "test file removed" [ -z "$(ls -A "$T/t")" ]
check "report has a bar per thread count" [ "$(grep -c '<text [^>]*>4k-randread, [124] threads\?</text>' "$T/rep/report.html")" -eq 3 ]
if command -v xmllint >/dev/null; then
	check "sweep report.html is well-formed" xmllint --noout "$T/rep/report.html"
fi

"$TWINFS_BIN" bench sweep --target "$T/t" --threads 4..1 >/dev/null 2>"$T/e"; rc=$?
check "bad --threads exits 64" [ $rc -eq 64 ]

finish
