#!/bin/sh
# The HTML report as a person sees it: `bench io` and `bench copy` reports
# for two targets, rendered by headless Chromium in a 1280-px window. The
# DOM must hold the grid's bars as SVG rects of non-zero size (one per
# measured read or write share, one per copy phase, target and metric),
# the page must need no script and no network, and the screenshot must
# show the bar colours in the amount the bars cover and nothing past the
# window's right edge. TWINFS_REPORT_PNG=FILE keeps the io screenshot.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 missing"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || skip "chromium missing (packaging/install-deps.sh installs it)"

# shot NAME HTML: NAME.png (screenshot) and NAME.dom (the DOM after load).
shot() {
	for mode in "--screenshot=$T/$1.png" --dump-dom; do
		rm -rf "$T/profile"
		timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
			--disable-background-networking --disable-component-update --disable-sync \
			--no-first-run --user-data-dir="$T/profile" --window-size=1280,2000 \
			--hide-scrollbars "$mode" "file://$2" >"$T/$1.out" 2>"$T/$1.err"
		[ "$mode" = --dump-dom ] && mv "$T/$1.out" "$T/$1.dom"
	done
	rm -rf "$T/profile"
	[ -s "$T/$1.png" ] && [ -s "$T/$1.dom" ]
}

mkdir -p "$T/a" "$T/b" "$T/ds"
"$TWINFS_BIN" bench io --target "$T/a" --target "$T/b" --size 8M --runtime 0.5 --iodepth 2 \
	--pattern 4k-randread --pattern 4k-randwrite --pattern 4k-randrw70 \
	--pattern 1m-seqread --pattern 1m-seqwrite --report "$T/io" >"$T/io.log" 2>&1
check "bench io --report exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" bench copy --target "$T/a" --target "$T/b" --large 4M --small-count 60 \
	--small-total 1M --dataset-dir "$T/ds" --report "$T/copy" >"$T/copy.log" 2>&1
check "bench copy --report exits 0" [ $? -eq 0 ]

for r in io copy; do
	html=$T/$r/report.html
	check "$r report: no script, no external reference" \
		sh -c '! grep -Eqi "<script|<link|<img|url\(|https?://[^\"]*\.(js|css|png)" "$1"' _ "$html"
	check "$r report: Chromium renders it" shot "$r" "$html"
	check "$r report: the DOM has every bar as an SVG rect of non-zero size" \
		python3 - "$T/$r.dom" "$T/$r/results.json" "$r" <<'PY'
import json, re, sys
dom, res, kind = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), sys.argv[3]
bars = re.findall(r'<rect class="bar[^"]*"[^>]*>', dom)
sizes = [(float(re.search(r' width="([0-9.]+)"', b).group(1)),
          float(re.search(r' height="([0-9.]+)"', b).group(1))) for b in bars]
rows = res["results"]
if kind == "io":
    want = sum((r["read_iops"] > 0) + (r["write_iops"] > 0) for r in rows)
    assert len(re.findall(r'<rect class="bar read"', dom)) == sum(r["read_iops"] > 0 for r in rows)
else:
    want = 2 * len(rows)    # MB/s and files/s per phase and target
assert len(bars) == want, (len(bars), want)
assert all(w > 0 and h > 0 for w, h in sizes), sizes
assert "<svg" in dom and "Latency percentiles" in dom and "command" in dom
assert res["run"]["command_line"] in dom.replace("&amp;", "&")
print("# %s: %d bars, widths %.0f-%.0f px" % (kind, len(bars), min(w for w, _ in sizes),
                                              max(w for w, _ in sizes)))
PY
	python3 "$TWINFS_SRC/tests/e2e/png_colors.py" "$T/$r.png" 2f6fbd e07b24 >"$T/$r.px"
	note "$r screenshot: $(cat "$T/$r.px")"
	check "$r screenshot: both bar colours cover at least the bars' minimum area, content inside 1280 px" \
		python3 - "$T/$r.px" "$r" <<'PY'
import json, sys
p, kind = json.load(open(sys.argv[1])), sys.argv[2]
assert p["width"] == 1280, p
# io: 2+ bars of each colour, 18 px high; copy: 4 bars per target, 22 px high
least = 2 * 18 * 2 if kind == "io" else 4 * 22 * 2
assert all(n >= least for n in p["counts"].values()), p
assert 600 < p["rightmost"] < 1270, p
PY
done
if [ -n "${TWINFS_REPORT_PNG:-}" ]; then
	cp "$T/io.png" "$TWINFS_REPORT_PNG"
fi
finish
