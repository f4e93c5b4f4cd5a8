# Helpers for the fidelity tests (source after replication_lib.sh).
# stores_equal: the peer's store equals the primary's store field for
# field (tests/e2e/fidelity_cmp.py: every type's mtime, hard-link groups
# of every type, every xattr namespace); prints the differences if not.
stores_equal() {
	python3 "$TWINFS_SRC/tests/e2e/fidelity_cmp.py" "$A_STORE" "$P_STORE" >"$T/cmp.out" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || head -40 "$T/cmp.out" >&2
	return $_rc
}
# do_sync [SEC]: twinfs sync with a timeout (default 30 s); output in $T/sync.out.
do_sync() {
	"$TWINFS_BIN" sync --state "$A_STATE" --timeout "${1:-30}" >"$T/sync.out" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || cat "$T/sync.out" >&2
	return $_rc
}
# head_seq: the primary journal's head seq (status --json).
head_seq() {
	"$TWINFS_BIN" status --state "$A_STATE" --json |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("head_seq", d.get("journal", {}).get("head_seq", -1)))'
}
