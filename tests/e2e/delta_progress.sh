#!/bin/sh
# twinfs mirror's progress line and rate limit, to a local folder:
#  - --progress always on a terminal (script(1) gives it one): the line
#    has bytes done and total, percent, rate, ETA, files done and left,
#    and is redrawn as the copy goes;
#  - --progress auto with stderr on a pipe: no progress line at all;
#  - --bwlimit 4M: the bytes on the link per second of the run stay at or
#    under 4 MiB/s, and the run is not faster than the limit allows.
. "$(dirname "$0")/lib.sh"
command -v script >/dev/null || skip "script missing (apt install bsdutils)"
S=$T/src; mkdir -p "$S/d" "$T/d1" "$T/d2" "$T/d3"
head -c $((6 << 20)) /dev/urandom >"$S/big"
for i in $(seq 1 20); do head -c 10000 /dev/urandom >"$S/d/f$i"; done

script -qec "'$TWINFS_BIN' mirror --progress always --bwlimit 4M '$S' '$T/d1'" /dev/null \
	>"$T/tty.out" 2>&1
check "mirror under a terminal exits 0" [ $? -eq 0 ]
python3 - "$T/tty.out" <<'PY' >"$T/lines"
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
pat = re.compile(r"mirror: [0-9.]+ [KMG]?i?B / [0-9.]+ [KMG]?i?B +\d+%  [0-9.]+ [KMG]?i?B/s  "
                 r"ETA [0-9:-]+  files \d+/\d+ \(\d+ left\)")
for part in re.split(r"[\r\n]", text):
    m = pat.search(part)
    if m:
        print(m.group(0))
PY
note "progress lines: $(wc -l <"$T/lines"); last: $(tail -n1 "$T/lines")"
check "the line has bytes, percent, rate, ETA, files done and left" [ -s "$T/lines" ]
check "it is redrawn as the copy goes (several distinct lines)" \
	[ "$(sort -u "$T/lines" | wc -l)" -ge 3 ]
check "the copy is complete" python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$S" "$T/d1"

"$TWINFS_BIN" mirror --progress auto "$S" "$T/d2" 2>"$T/pipe.err" | cat >/dev/null
check "auto on a pipe: no progress line" sh -c '! grep -q "ETA" "$1"' _ "$T/pipe.err"

"$TWINFS_BIN" mirror --json --bwlimit 4M "$S" "$T/d3" >"$T/bw.json"
python3 - "$T/bw.json" <<'PY' >"$T/bw"
import json, sys
j = json.load(open(sys.argv[1]))
print(j["wire_bytes_sent"], "%.3f" % j["seconds"], "%.0f" % (j["wire_bytes_sent"] / j["seconds"]))
PY
read -r wire secs rate <"$T/bw"
note "--bwlimit 4M: $wire bytes in $secs s = $rate B/s (limit 4194304)"
check "the rate stays within the limit" [ "$rate" -le 4194304 ]
check "the limit is what paced it (at least 80% of the time it implies)" \
	python3 -c "import sys; sys.exit(not float(sys.argv[2]) >= 0.8 * int(sys.argv[1]) / 4194304)" "$wire" "$secs"
finish
