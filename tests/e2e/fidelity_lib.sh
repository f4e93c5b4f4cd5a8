# Helpers for the fidelity tests (source after lib.sh and replication_lib.sh):
# the complete store comparison, sync with a timeout, and journal helpers.

# stores_equal: the peer's store equals the primary's field for field
# (tests/e2e/treecmp.py: type, mode, owner, size, mtime in ns of every
# type, link target, rdev, hard-link groups of every type, every xattr,
# content). Prints the differences if not.
stores_equal() {
	python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$A_STORE" "$P_STORE" >"$T/cmp.out" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || head -40 "$T/cmp.out" >&2
	return $_rc
}

# check_dirsym_mtimes: directory and symlink mtimes equal too (they are part
# of stores_equal; this names the check on its own in the output).
check_dirsym_mtimes() {
	check "directory and symlink mtimes equal" stores_equal
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

# json_field FILE KEY: prints KEY of the JSON object in FILE.
json_field() {
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if not isinstance(v,(str,int)) or isinstance(v,bool) else v)' "$1" "$2"
}

# fill_journal: with journal.size_limit at its 16 MiB minimum, ~20 MiB of
# chmods on a long path fill the journal (the peer must be down).
fill_journal() {
	python3 - "$MNT" <<'PY'
import os, sys
mnt = sys.argv[1]
deep = os.path.join(mnt, *(["d" * 200] * 18))
os.makedirs(deep, exist_ok=True)
a = os.path.join(deep, "a" * 200)
open(a, "w").close()
for i in range(5000):
    os.chmod(a, 0o600 if i % 2 else 0o644)
PY
}
