#!/bin/sh
# /metrics from both daemons in the Prometheus text format: promtool
# accepts it; the lag (bytes, operations, seconds) rises while the peer is
# stopped (SIGSTOP) and falls to 0 once it resumes and catches up; FUSE
# requests by operation with their latency histograms, errors by kind, the
# sync-mode histogram and the last catch-up and sync times are there; the
# Grafana dashboard in packaging/ queries only metrics a real scrape has;
# the numbers are status's; a
# non-loopback metrics address is refused without --insecure.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v promtool >/dev/null || skip "promtool missing (apt install prometheus)"

MP=$(free_port); MA=$(free_port)
start_serve --metrics "127.0.0.1:$MP"
start_mount --metrics "127.0.0.1:$MA"
get() { python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "http://127.0.0.1:$1/metrics"; }
val() { get "$1" | awk -v n="$2" '$1 == n {print $2}'; }

get "$MA" >"$T/a.prom" && get "$MP" >"$T/p.prom"
check "both daemons serve /metrics" [ -s "$T/a.prom" ] && [ -s "$T/p.prom" ]
check "promtool accepts the mount's metrics" sh -c "promtool check metrics <'$T/a.prom'"
check "promtool accepts the peer's metrics" sh -c "promtool check metrics <'$T/p.prom'"
promtool check metrics <"$T/a.prom" 2>&1 | sed 's/^/# /' | head -5
check "the mount says primary" grep -q 'twinfs_info{role="primary"' "$T/a.prom"
check "the peer says secondary" grep -q 'twinfs_info{role="secondary"' "$T/p.prom"
check "connected is 1" [ "$(val "$MA" twinfs_connected)" = 1 ]

kill -STOP "$SERVE_PID"
on_exit 'kill -CONT $SERVE_PID 2>/dev/null'
head -c 3000000 /dev/urandom >"$MNT/big"
mkdir "$MNT/d"; for i in 1 2 3 4 5; do echo "$i" >"$MNT/d/f$i"; done
lagging() { l=$(val "$MA" twinfs_lag_bytes); [ "${l%.*}" -gt 0 ] 2>/dev/null; }
check "the lag rises while the peer is stopped" wait_until 10 lagging
ops=$(val "$MA" twinfs_lag_operations)
check "so does the lag in operations ($ops)" [ "${ops%.*}" -gt 0 ]
# the recovery point: the oldest change the peer lacks ages while it is stopped
aged() { awk -v s="$(val "$MA" twinfs_lag_seconds)" 'BEGIN { exit !(s >= 1.5) }'; }
check "and the lag in seconds: the oldest change ages past 1.5 s" wait_until 15 aged
secs=$("$TWINFS_BIN" status --state "$A_STATE" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["lag_seconds"])')
check "status --json has the same age ($secs s)" awk -v s="$secs" 'BEGIN { exit !(s >= 1.5) }'
"$TWINFS_BIN" status --state "$A_STATE" >"$T/status.txt"
check "text status says how old the oldest change is" grep -q "^lag: .*oldest change .* old" "$T/status.txt"
kill -CONT "$SERVE_PID"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync after resuming" [ $? -eq 0 ]
caught_up() { [ "$(val "$MA" twinfs_lag_bytes)" = 0 ] && [ "$(val "$MA" twinfs_lag_operations)" = 0 ]; }
check "the lag falls to 0" wait_until 10 caught_up
check "the lag in seconds falls to 0" [ "$(val "$MA" twinfs_lag_seconds)" = 0 ]
acked=$("$TWINFS_BIN" status --state "$A_STATE" --json | sed -n 's/.*"acked_seq":\([0-9]*\).*/\1/p')
check "the numbers are status's (acked seq $acked)" [ "$(val "$MA" twinfs_acked_sequence)" = "$acked" ]
check "the peer counts what it received" sh -c "[ \"\$(printf '%.0f' $(val "$MP" twinfs_received_bytes_total))\" -gt 3000000 ]"

# FUSE requests by operation, each answered one timed; the replication
# errors by kind; the sync-mode histogram; the times of the last catch-up
# and the last successful sync.
get "$MA" >"$T/a2.prom" && get "$MP" >"$T/p2.prom"
check "promtool accepts the mount's metrics after the copy" sh -c "promtool check metrics <'$T/a2.prom'"
reqs=$(awk '$1 == "twinfs_fuse_requests_total{op=\"create\"}" {print $2}' "$T/a2.prom")
timed=$(awk '$1 == "twinfs_fuse_request_duration_seconds_count{op=\"create\"}" {print $2}' "$T/a2.prom")
check "creates are counted (${reqs:-none}) and each one timed (${timed:-none})" \
	sh -c '[ "${1:-0}" -ge 6 ] && [ "$1" = "$2" ]' _ "$reqs" "$timed"
check "a create's latency histogram has a +Inf bucket" \
	grep -q '^twinfs_fuse_request_duration_seconds_bucket{op="create",le="+Inf"} [1-9]' "$T/a2.prom"
check "replication errors by kind" grep -q '^twinfs_errors_total{kind="link_lost"} ' "$T/a2.prom"
check "the sync-mode fsync histogram" grep -q '^twinfs_sync_fsync_duration_seconds_count ' "$T/a2.prom"
check "open fds against the limit" awk '$1 == "process_open_fds" { o = $2 } $1 == "process_max_fds" { m = $2 }
	END { exit !(o > 0 && m > 0 && o <= m) }' "$T/a2.prom"
check "the journal on disk" grep -q '^twinfs_journal_segments [1-9]' "$T/a2.prom"
recent() {	# METRIC: a Unix time within the last minute
	awk -v n="$(date +%s)" -v t="$(val "$MA" "$1")" 'BEGIN { exit !(t > n - 60 && t <= n + 2) }'
}
check "the last catch-up is recent ($(val "$MA" twinfs_last_caught_up_timestamp_seconds))" \
	wait_until 5 recent twinfs_last_caught_up_timestamp_seconds
check "the last successful sync is recent ($(val "$MA" twinfs_last_sync_success_timestamp_seconds))" \
	recent twinfs_last_sync_success_timestamp_seconds
# The sample Grafana dashboard: valid JSON, and every metric it queries is
# one a real scrape of the pair has.
DASH=$TWINFS_SRC/packaging/grafana/twinfs-dashboard.json
python3 - "$DASH" "$T/a2.prom" "$T/p2.prom" >"$T/dash.out" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
have = set()
for f in sys.argv[2:]:
    for line in open(f):
        if line and not line.startswith("#"):
            have.add(re.split(r"[{ ]", line, 1)[0])
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
used = {m for e in exprs for m in re.findall(r"\btwinfs_[a-z0-9_]+", e)}
missing = sorted(used - have)
print("%d panels, %d queries, %d metrics" % (len(d["panels"]), len(exprs), len(used)))
if missing:
    print("not in the scrape: " + " ".join(missing))
# every query parses as PromQL: promtool checks them as recording rules
# ($instance, Grafana's variable, stands for any instance)
rules = sys.argv[2] + ".rules.yml"
with open(rules, "w") as f:
    f.write("groups:\n- name: dashboard\n  rules:\n")
    for i, e in enumerate(exprs):
        f.write("  - record: twinfs:dashboard:q%d\n    expr: %s\n" %
                (i, json.dumps(e.replace("$instance", ".*"))))
import subprocess
r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
if r.returncode:
    print("PromQL: " + (r.stdout + r.stderr).strip().replace("\n", " | "))
sys.exit(1 if missing or len(used) < 15 or r.returncode else 0)
PY
rc=$?
check "the Grafana dashboard is JSON, its queries parse (promtool) and use only metrics the daemons export" [ $rc -eq 0 ]
sed 's/^/# dashboard: /' "$T/dash.out"
python3 -c 'import sys,urllib.request
try:
    urllib.request.urlopen("http://127.0.0.1:%s/other" % sys.argv[1], timeout=5)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 404 else 1)
sys.exit(1)' "$MA"
check "another path is 404" [ $? -eq 0 ]
stop_mount
kill_serve
"$TWINFS_BIN" serve --store "$P_STORE" --state "$T/s2" --listen "127.0.0.1:$(free_port)" \
	--metrics "192.0.2.1:9100" -f >"$T/o" 2>"$T/e" &
s2=$!
wait_until 10 sh -c "! kill -0 $s2 2>/dev/null"
wait "$s2"; rc=$?
check "a non-loopback metrics address is refused without --insecure" [ $rc -ne 0 ]
check "with the reason" grep -q 'not a loopback address' "$T/e"
finish
