#!/bin/sh
# `twinfs bench copy` on two temporary folders with a small dataset: the
# classic Start/End log, the side-by-side table, JSON whose bytes are what
# the dataset holds and whose mb_per_s is bytes/seconds/1e6, a report.html
# whose SVG charts parse, targets left empty; --runs median, --source, and
# clear failures for a missing target and a failing replication sync.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 missing"
command -v xmllint >/dev/null || skip "xmllint missing (apt install libxml2-utils)"

mkdir -p "$T/a" "$T/b" "$T/ds"
"$TWINFS_BIN" bench copy --target "$T/a" --target "$T/b" --large 32M \
	--small-count 300 --small-total 16M --dataset-dir "$T/ds" --keep-dataset \
	--json "$T/r.json" --csv "$T/r.csv" --report "$T/rep" >"$T/out" 2>"$T/err"; rc=$?
cat "$T/out"
check "copy exits 0" [ $rc -eq 0 ]
iso='20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{3}[+-][0-9][0-9]:[0-9][0-9]'
check "4 Start lines (2 targets x 2 phases), ISO 8601 with the zone" \
	[ "$(grep -Ec "^Start $iso  " "$T/out")" -eq 4 ]
check "4 End lines: seconds, IEC (SI) rate, files/s (the table's units and order)" \
	[ "$(grep -Ec "^End   $iso +[0-9.]+ s  [0-9.]+ [KMG]?i?B/s \([0-9.]+ [kMG]?B/s\) +[0-9.]+ files/s$" "$T/out")" -eq 4 ]
check "table header" grep -Eq '^phase +target +size +files +seconds +throughput +files/s +ratio' "$T/out"
check "table has a ratio to the first target" grep -q "1.00 (base)" "$T/out"
check "rates in IEC with SI in brackets" grep -Eq 'iB/s \([0-9.]+ [kMG]B/s\)' "$T/out"
check "target a left empty" [ -z "$(ls -A "$T/a")" ]
check "target b left empty" [ -z "$(ls -A "$T/b")" ]

ds=$(ls -d "$T"/ds/twinfs-bench-data.* 2>/dev/null | head -n 1)
check "--keep-dataset kept the dataset" [ -d "$ds" ]
check "JSON: bytes match the dataset on disk, mb_per_s = bytes/seconds/1e6" \
	python3 - "$T/r.json" "$ds" <<'PY'
import json, os, sys
res = json.load(open(sys.argv[1]))["results"]
root = sys.argv[2]
large = os.path.getsize(os.path.join(root, "large.iso"))
small = sum(os.path.getsize(os.path.join(d, f))
            for d, _, fs in os.walk(os.path.join(root, "small")) for f in fs)
nsmall = sum(len(fs) for _, _, fs in os.walk(os.path.join(root, "small")))
assert large == 32 << 20 and small == 16 << 20 and nsmall == 300, (large, small, nsmall)
assert len(res) == 4, res
assert [r["phase"] for r in res] == ["large", "small", "large", "small"]
assert res[0]["target"].endswith("/a") and res[2]["target"].endswith("/b")
for r in res:
    want = large if r["phase"] == "large" else small
    assert r["bytes"] == want, (r["bytes"], want)
    assert r["files"] == (1 if r["phase"] == "large" else nsmall)
    assert r["seconds"] > 0
    assert abs(r["mb_per_s"] - r["bytes"] / r["seconds"] / 1e6) <= 1e-9 * r["mb_per_s"]
    assert r["lat_us"]["p50"] <= r["lat_us"]["p99"] <= r["lat_us"]["p999"]
    assert len(r["runs"]) == 1 and r["start"] and r["end"]
    assert "iops" not in r and "ops" not in r and "jobs" not in r, r
PY
check "JSON opens with the run: version, command line, parameters, host, targets" \
	python3 - "$T/r.json" "$T" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
assert list(d)[0] == "run", list(d)
run = d["run"]
iso = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$"
assert re.match(iso, run["started"]) and re.match(iso, run["finished"]), run
assert run["started"] <= run["finished"]
for r in d["results"]:
    assert re.match(iso, r["start"]) and re.match(iso, r["end"]), r
assert run["twinfs_version"] and run["command_line"].startswith("twinfs bench copy --target ")
assert "--small-count 300" in run["command_line"]
p = run["parameters"]
assert (p["large_bytes"], p["small_count"], p["small_total_bytes"]) == (32 << 20, 300, 16 << 20), p
assert p["durability"] == "fsync" and p["runs"] == 1 and p["seed"] > 0, p
h = run["host"]
assert h["name"] and h["kernel"].startswith("Linux ") and h["cpus"] >= 1 and h["mem_total_bytes"] > 0, h
assert len(run["targets"]) == 2
for t in run["targets"]:
    assert t["fstype"] and t["mountpoint"] and t["mount_options"], t
    assert 0 < t["free_bytes"] <= t["total_bytes"], t
PY
check "CSV has a header and 4 rows" [ "$(wc -l <"$T/r.csv")" -eq 5 ]
check "report folder has results.json, results.csv, report.html" \
	test -s "$T/rep/results.json" -a -s "$T/rep/results.csv" -a -s "$T/rep/report.html"
check "report.html has no script and no remote reference" \
	sh -c '! grep -Eqi "<script|https?://[^\"]*\.(js|css)|<link" "$1"' _ "$T/rep/report.html"
check "report.html is well-formed" xmllint --noout "$T/rep/report.html"
check "report.html has a latency-percentile table" grep -q "<h2>Latency percentiles</h2>" "$T/rep/report.html"
python3 - "$T/rep/report.html" "$T/svg" <<'PY'
import re, sys
svgs = re.findall(r"<svg.*?</svg>", open(sys.argv[1]).read(), re.S)
for i, s in enumerate(svgs):
    open("%s%d.svg" % (sys.argv[2], i), "w").write(s)
print("# %d charts" % len(svgs))
PY
check "report.html has one grid" [ "$(ls "$T"/svg*.svg | wc -l)" -eq 1 ]
check "the grid has a bar per phase, metric and target (8)" \
	[ "$(grep -c '<rect class="bar' "$T/rep/report.html")" -eq 8 ]
for s in "$T"/svg*.svg; do
	check "chart $(basename "$s") parses" xmllint --noout "$s"
done

# --runs 3: every run recorded, the median one reported.
rm -rf "$ds"
"$TWINFS_BIN" bench copy --target "$T/a" --large 4M --small-count 40 \
	--small-total 2M --runs 3 --dataset-dir "$T/ds" --json "$T/runs.json" >"$T/out3" 2>&1; rc=$?
check "--runs 3 exits 0" [ $rc -eq 0 ]
check "--runs 3: 3 runs per phase, median reported" python3 - "$T/runs.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    secs = sorted(u["seconds"] for u in r["runs"])
    assert len(secs) == 3 and r["seconds"] == secs[1], r
PY
check "generated dataset removed without --keep-dataset" [ -z "$(ls -A "$T/ds")" ]
check "target empty after --runs" [ -z "$(ls -A "$T/a")" ]

# --source: the largest file is the large phase, the rest the small phase.
mkdir -p "$T/src/sub"
head -c 300000 /dev/urandom >"$T/src/big.bin"
head -c 1000 /dev/urandom >"$T/src/one"
head -c 2000 /dev/urandom >"$T/src/sub/two"
"$TWINFS_BIN" bench copy --target "$T/a" --source "$T/src" --durability syncfs \
	--json "$T/src.json" >"$T/outs" 2>&1; rc=$?
check "--source exits 0" [ $rc -eq 0 ]
check "--source: big.bin is large, 2 files / 3000 bytes small" python3 - "$T/src.json" <<'PY'
import json, sys
large, small = json.load(open(sys.argv[1]))["results"]
assert (large["phase"], large["bytes"], large["files"]) == ("large", 300000, 1), large
assert (small["phase"], small["bytes"], small["files"]) == ("small", 3000, 2), small
PY
check "--source left untouched" [ "$(find "$T/src" -type f | wc -l)" -eq 3 ]

# Failures are clear and leave nothing behind.
"$TWINFS_BIN" bench copy --target "$T/nope" --large 1M --small-count 0 >/dev/null 2>"$T/e1"; rc=$?
check "missing target exits 66" [ $rc -eq 66 ]
check "missing target is named" grep -q "target '$T/nope' is not a folder" "$T/e1"
"$TWINFS_BIN" bench copy --target "$T/a" --large 1M --small-count 0 --dataset-dir "$T/ds" \
	--replicated-state "$T/no-state" >/dev/null 2>"$T/e2"; rc=$?
check "failing 'twinfs sync' fails the benchmark" [ $rc -ne 0 ]
check "failing 'twinfs sync' is explained" grep -q "twinfs sync' failed" "$T/e2"
check "target empty after a failed sync" [ -z "$(ls -A "$T/a")" ]
check "dataset removed after a failed sync" [ -z "$(ls -A "$T/ds")" ]
"$TWINFS_BIN" bench copy --target "$T/a" --large 12X >/dev/null 2>"$T/e3"; rc=$?
check "bad size exits 64" [ $rc -eq 64 ]
check "bad size is named" grep -q -- "--large '12X': not a size" "$T/e3"

# Free space is checked before anything is written: a 4 MiB tmpfs cannot
# take a 8 MiB copy, and both numbers are named (exit 73, EX_CANTCREAT).
mkdir -p "$T/tiny"
if mount -t tmpfs -o size=4m tmpfs "$T/tiny" 2>/dev/null; then
	"$TWINFS_BIN" bench copy --target "$T/a" --target "$T/tiny" --large 8M --small-count 10 \
		--small-total 1M --dataset-dir "$T/ds" >"$T/o4" 2>"$T/e4"; rc=$?
	check "too little free space exits 73" [ $rc -eq 73 ]
	check "too little free space names the target, its free space and the need" \
		grep -Eq "target '$T/tiny' has 4.00 MiB free, the copy needs [0-9.]+ MiB" "$T/e4"
	check "nothing generated or copied when space is short" \
		sh -c '[ -z "$(ls -A "$1/ds")" ] && [ -z "$(ls -A "$1/a")" ] && ! grep -q ^Start "$1/o4"' _ "$T"
	"$TWINFS_BIN" bench copy --target "$T/a" --large 8M --small-count 0 \
		--dataset-dir "$T/tiny" >/dev/null 2>"$T/e5"; rc=$?
	umount "$T/tiny"
	check "dataset folder too small: exit 73" [ $rc -eq 73 ]
	check "dataset folder too small is explained" grep -q "dataset folder '$T/tiny' has 4.00 MiB free" "$T/e5"
else
	note "cannot mount a tmpfs: the free-space refusal is not checked"
fi

# Ctrl-C in the middle of a phase: exit 130, copies and dataset removed.
"$TWINFS_BIN" bench copy --target "$T/a" --large 8M --small-count 2000 \
	--small-total 8M --dataset-dir "$T/ds" >"$T/outi" 2>&1 &
pid=$!
track_pid $pid
check "interrupt test reached a phase" wait_until 60 grep -q '^Start' "$T/outi"
kill -INT $pid
wait $pid; rc=$?
check "Ctrl-C exits 130" [ $rc -eq 130 ]
check "Ctrl-C says the files were removed" grep -q "interrupted; the files it wrote were removed" "$T/outi"
check "target empty after Ctrl-C" [ -z "$(ls -A "$T/a")" ]
check "dataset removed after Ctrl-C" [ -z "$(ls -A "$T/ds")" ]

finish
