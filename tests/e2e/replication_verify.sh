#!/bin/sh
# `twinfs verify`: after `twinfs sync` a mount and its peer verify
# identical (--state, and SRC_DIR HOST:PORT against the serve); a byte
# flipped in the peer's store with size and mtime kept is found and the
# file named (exit 65); two local trees compare the same way, their roots'
# own mode, mtime and xattrs included; over TLS
# --state uses the mount's keys, and a verifier without the key is
# refused (exit 69) with the reason.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

"$TWINFS_BIN" keygen --psk "$T/psk" >/dev/null
start_serve --psk-file "$T/psk"
start_mount --psk-file "$T/psk"
mkdir -p "$MNT/d/e"
for i in $(seq 1 30); do head -c $((i * 5000)) /dev/urandom >"$MNT/d/f$i"; done
ln "$MNT/d/f1" "$MNT/d/e/hard"
ln -s ../f2 "$MNT/d/e/sym"
setfattr -n user.colour -v blue "$MNT/d/f3"
chmod 600 "$MNT/d/f4"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync exits 0" [ $? -eq 0 ]

"$TWINFS_BIN" verify --state "$A_STATE" >"$T/v1" 2>&1; rc=$?
cat "$T/v1" | head -20
check "verify --state after sync: identical (exit 0)" [ $rc -eq 0 ]
check "it says identical" grep -q '^identical:' "$T/v1"
"$TWINFS_BIN" verify "$A_STORE" "127.0.0.1:$PORT" --psk-file "$T/psk" >"$T/v2" 2>&1; rc=$?
check "verify STORE HOST:PORT: identical" [ $rc -eq 0 ]

"$TWINFS_BIN" sync --state "$A_STATE" --verify >"$T/v0" 2>&1; rc=$?
check "sync --verify after sync: exit 0, identical" sh -c "[ $rc -eq 0 ] && grep -q '^identical:' '$T/v0'"
chmod 0755 "$MNT"; touch -m -d @1500000000 "$MNT"; setfattr -n user.top -v 1 "$MNT"
"$TWINFS_BIN" sync --state "$A_STATE" --verify >"$T/v4s" 2>&1; rc=$?
cat "$T/v4s"
check "the mount's root, changed, is replicated: sync --verify identical" \
	sh -c "[ $rc -eq 0 ] && grep -q '^identical:' '$T/v4s'"

# bit rot on the peer: one byte, size and mtime as they were
python3 - "$P_STORE/d/f7" <<'PY'
import os, sys
p = sys.argv[1]
st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(1000)
    b = f.read(1)
    f.seek(1000)
    f.write(bytes([b[0] ^ 0x40]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
"$TWINFS_BIN" verify --state "$A_STATE" >"$T/v3" 2>&1; rc=$?
cat "$T/v3"
check "a flipped byte: verify exits 65" [ $rc -eq 65 ]
check "it names the file and what differs" grep -q '^d/f7: content differs' "$T/v3"
check "and nothing else" [ "$(grep -c ': ' "$T/v3")" -eq 2 ]
"$TWINFS_BIN" sync --state "$A_STATE" --verify -q >"$T/v3b" 2>&1; rc=$?
check "sync --verify says synced but proves the stores differ (exit 65)" [ $rc -eq 65 ]

# two local trees
cp -a "$A_STORE" "$T/copy"
check "a local copy verifies identical" "$TWINFS_BIN" verify -q "$A_STORE" "$T/copy"
chmod 640 "$T/copy/d/f5"
"$TWINFS_BIN" verify "$A_STORE" "$T/copy" >"$T/v4" 2>&1; rc=$?
check "a mode change is found (exit 65)" [ $rc -eq 65 ]
check "it says mode" grep -q '^d/f5: mode: 0644 here, 0640 on the other side' "$T/v4"
# the roots themselves: their own mode, mtime and xattrs are compared too
chmod 0705 "$T/copy"; touch -m -d @1400000000 "$T/copy"
setfattr -n user.top -v 2 "$T/copy"
"$TWINFS_BIN" verify "$A_STORE" "$T/copy" >"$T/v4r" 2>&1; rc=$?
cat "$T/v4r"
check "the root's own mode, mtime and xattrs are found (exit 65)" sh -c \
	"[ $rc -eq 65 ] && grep -q '^\.: mode: ' '$T/v4r' && grep -q '^\.: mtime: ' '$T/v4r' &&
	 grep -q '^\.: xattrs: ' '$T/v4r'"

# no key: refused by the peer's handshake
"$TWINFS_BIN" keygen --psk "$T/wrong" >/dev/null
"$TWINFS_BIN" verify "$A_STORE" "127.0.0.1:$PORT" --psk-file "$T/wrong" >"$T/v5" 2>&1; rc=$?
cat "$T/v5"
check "a verifier with the wrong key is refused (exit 69)" [ $rc -eq 69 ]
check "with the reason" grep -q 'TLS' "$T/v5"
check "the peer still serves the mount" daemon_up "$P_STATE"
"$TWINFS_BIN" verify "$A_STORE" "127.0.0.1:$PORT" >"$T/v6" 2>&1; rc=$?
check "a verifier without keys gets no inventory" [ $rc -ne 0 ]
check "a missing tree is exit 66" sh -c "'$TWINFS_BIN' verify '$T/nope' '$T/copy' >/dev/null 2>&1; [ \$? -eq 66 ]"
finish
