#!/bin/sh
# `twinfs bench io`: every named pattern for 1 second on a temporary folder
# reports non-zero IOPS and ordered latency percentiles; iodepth > 1 (io_uring),
# a custom iometer-style spec and --direct work; test files are removed.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 missing"

mkdir -p "$T/t"
"$TWINFS_BIN" bench io --target "$T/t" --size 16M --runtime 1 \
	--json "$T/all.json" --csv "$T/all.csv" --report "$T/rep" >"$T/out" 2>"$T/err"; rc=$?
cat "$T/out"
check "all patterns exit 0" [ $rc -eq 0 ]
check "all 7 patterns have IOPS > 0 and sane latencies" python3 - "$T/all.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
names = [r["pattern"] for r in res]
assert names == ["4k-randread", "4k-randwrite", "4k-randrw70", "64k-randread",
                 "64k-randwrite", "1m-seqread", "1m-seqwrite"], names
for r in res:
    assert r["iops"] > 0 and r["bytes"] > 0, r
    assert abs(r["mb_per_s"] - r["bytes"] / r["seconds"] / 1e6) <= 1e-9 * r["mb_per_s"]
    assert 0.9 < r["seconds"] < 3, r
    l = r["lat_us"]
    assert 0 < l["p50"] <= l["p99"] <= l["p999"] <= l["max"], l
    assert 0 <= r["cpu_pct"] <= 100, r
    if r["pattern"] == "4k-randrw70":
        assert 0.6 < r["read_iops"] / r["iops"] < 0.8, r
    assert "files" not in r and "files_per_s" not in r and "runs" not in r, r
    assert r["page_cache"].startswith("dropped before each job"), r
PY
check "JSON opens with the run: every io parameter, host and target" python3 - "$T/all.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d)[0] == "run", list(d)
p = d["run"]["parameters"]
assert p["patterns"].split(",")[0] == "4k-randread" and len(p["patterns"].split(",")) == 7, p
assert (p["jobs"], p["iodepth"], p["size_bytes"], p["runtime_s"], p["direct"], p["cached"]) == \
    (1, 1, 16 << 20, 1, False, False), p
assert "invalidate=1" in p["page_cache"] and p["seed"], p
t = d["run"]["targets"][0]
assert t["fstype"] and t["free_bytes"] > 0, t
assert d["run"]["host"]["cpu_model"] is not None and d["run"]["host"]["cpus"] >= 1
PY
check "a buffered run whose files fit in memory warns" grep -q "fit in the .* of available memory" "$T/err"
check "human table with IOPS and percentiles" grep -Eq '^pattern +target +IOPS +throughput +lat p50 +p99 +p99.9 +CPU%' "$T/out"
check "CSV has 7 rows" [ "$(wc -l <"$T/all.csv")" -eq 8 ]
if command -v xmllint >/dev/null; then
	check "report.html is well-formed" xmllint --noout "$T/rep/report.html"
	check "report.html has a bar per read and write share (8 for the 7 patterns)" \
		[ "$(grep -c '<rect class="bar' "$T/rep/report.html")" -eq 8 ]
fi
check "test files removed" [ -z "$(ls -A "$T/t")" ]

"$TWINFS_BIN" bench io --target "$T/t" --size 16M --runtime 1 --iodepth 8 --jobs 2 \
	--pattern 4k-randread --pattern 1m-seqwrite --json "$T/qd.json" >"$T/out2" 2>&1; rc=$?
check "iodepth 8 x 2 jobs exits 0" [ $rc -eq 0 ]
check "iodepth 8: IOPS > 0, jobs and depth recorded" python3 - "$T/qd.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert r["iops"] > 0 and r["iodepth"] == 8 and r["jobs"] == 2, r
PY

# iodepth > 1 submits the way fio does (one IO per io_uring_enter), so the
# device sees the same requests: at least as many enters as IOs. Buffered
# reads of a 16 MiB file soon hit the page cache and complete inside the
# submit, where a batching loop would need one enter for many IOs.
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace (a sanitizer build, tests/sanitize.sh)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -qq -c -e trace=io_uring_enter -o "$T/st" "$TWINFS_BIN" bench io \
		--target "$T/t" --size 16M --runtime 1 --iodepth 8 \
		--pattern 4k-randread --json "$T/st.json" >/dev/null 2>&1; rc=$?
	check "iodepth 8 under strace exits 0" [ $rc -eq 0 ]
	check "iodepth 8: one io_uring_enter per IO" python3 - "$T/st" "$T/st.json" <<'PY'
import json, sys
calls = [int(l.split()[3]) for l in open(sys.argv[1]) if l.rstrip().endswith("io_uring_enter")]
(r,) = json.load(open(sys.argv[2]))["results"]
assert calls and r["ops"] > 100 and calls[0] >= r["ops"], (calls, r["ops"])
PY
else
	note "strace missing: submit policy not checked"
fi

"$TWINFS_BIN" bench io --target "$T/t" --size 16M --runtime 1 --bs 4K --read-pct 70 \
	--random-pct 80 --direct --json "$T/c.json" >"$T/out3" 2>"$T/err3"; rc=$?
check "custom spec with --direct exits 0" [ $rc -eq 0 ]
check "custom spec: 4K, 70% read, 80% random" python3 - "$T/c.json" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert (r["bs"], r["read_pct"], r["random_pct"]) == (4096, 70, 80), r
assert r["iops"] > 0, r
PY
check "test files removed after all runs" [ -z "$(ls -A "$T/t")" ]

# Direct IOs larger than a page are sent from buffers in transparent huge
# pages (one memory segment per IO, bench/iobuf.c); io.c warns when a job's
# buffer is not. Checked where the kernel can give huge pages.
"$TWINFS_BIN" bench io --target "$T/t" --size 16M --runtime 1 --iodepth 4 --jobs 2 \
	--direct --pattern 64k-randwrite --pattern 1m-seqread --json "$T/h.json" \
	>/dev/null 2>"$T/err4"; rc=$?
cat "$T/err4"
check "64k/1m direct QD4 x 2 jobs exits 0" [ $rc -eq 0 ]
check "64k/1m direct QD4: ran with O_DIRECT" python3 - "$T/h.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
assert len(res) == 2 and all(r["direct"] and r["iops"] > 0 for r in res), res
PY
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
case $thp in
always|madvise)
	check "THP $thp: every IO buffer in huge pages (no warning)" \
		sh -c '! grep -q "not in huge pages" "$1"' _ "$T/err4" ;;
*)	note "THP '${thp:-absent}': huge-page IO buffers not checked" ;;
esac
check "test files removed after the direct runs" [ -z "$(ls -A "$T/t")" ]

# The page cache (fio's invalidate=1): by default each job starts on a file
# dropped from the cache, so the same random-read pattern run twice reads
# the file from storage twice; --cached reads it once before the run and
# then only from memory. Counted with the bytes our child read from storage
# (getrusage ru_inblock), which no other process can inflate.
ru() {
	python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock * 512)
sys.exit(rc)' "$@"
}
mb8=$((8 << 20))
dflt=$(ru "$TWINFS_BIN" bench io --target "$T/t" --size 8M --runtime 2 \
	--pattern 64k-randread --pattern 64k-randread)
cached=$(ru "$TWINFS_BIN" bench io --target "$T/t" --size 8M --runtime 2 --cached \
	--pattern 64k-randread --pattern 64k-randread --json "$T/cached.json")
note "storage reads of two 64k-randread runs on an 8 MiB file: default $dflt bytes, --cached $cached"
check "default buffered runs start cold: the file is read from storage again per pattern" \
	[ "$dflt" -gt $((mb8 * 3 / 2)) ]
check "--cached reads the file from storage once, then from memory" \
	[ "$cached" -ge $((mb8 * 9 / 10)) -a "$cached" -lt $((mb8 * 6 / 5)) ]
check "--cached is recorded per result" python3 -c 'import json, sys
assert all(r["page_cache"].startswith("kept") for r in json.load(open(sys.argv[1]))["results"])' "$T/cached.json"
"$TWINFS_BIN" bench io --target "$T/t" --cached --direct >/dev/null 2>"$T/e"; rc=$?
check "--cached with --direct is a usage error" [ $rc -eq 64 ]

"$TWINFS_BIN" bench io --target "$T/t" --pattern 4k-nope >/dev/null 2>"$T/e"; rc=$?
check "unknown pattern exits 64" [ $rc -eq 64 ]
check "unknown pattern is named" grep -q "pattern '4k-nope': unknown" "$T/e"
"$TWINFS_BIN" bench io --target "$T/t" --size 2K --pattern 64k-randread --runtime 1 >/dev/null 2>"$T/e"; rc=$?
check "file smaller than a block fails clearly" grep -q "smaller than one block" "$T/e"

finish
