#!/bin/sh
# Replication over TLS 1.3 between a mount and a `serve` on 127.0.0.1:
# with a pre-shared key and with pinned keys the stores end equal; a wrong
# key, a mount without keys, and keys against a plaintext peer are each
# refused with the reason, the peer keeps serving and its store is
# untouched; key files open to others are refused before anything starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

status_has() { "$TWINFS_BIN" status --state "$1" --json 2>/dev/null | grep -q "$2"; }
sync_ok() { "$TWINFS_BIN" sync --state "$A_STATE" --timeout "${1:-60}" >/dev/null 2>&1; }

# 1. A pre-shared key on both sides.
"$TWINFS_BIN" keygen --psk "$T/psk" >/dev/null
check "keygen --psk writes a 0600 file" [ "$(stat -c %a "$T/psk")" = 600 ]
start_serve --psk-file "$T/psk"
start_mount --psk-file "$T/psk"
mkdir -p "$MNT/d/e"
for i in $(seq 1 50); do head -c $((i * 3000)) /dev/urandom >"$MNT/d/f$i"; done
head -c 20000000 /dev/urandom >"$MNT/d/e/big"
ln -s f1 "$MNT/d/link"
check "sync over TLS (psk) exits 0" sync_ok
check "stores equal over TLS (psk)" replicated
check "the mount says it uses psk" status_has "$A_STATE" '"tls":"psk"'
check "the peer says who it authenticated" status_has "$P_STATE" '"peer_auth":"psk id twinfs-'
grep -q "primary authenticated" "$T/serve.log"
check "serve logs the authenticated primary" [ $? -eq 0 ]

# 2. A mount with another key: refused by the handshake, nothing applied.
stop_mount
applied=$("$TWINFS_BIN" status --state "$P_STATE" --json | sed -n 's/.*"applied_seq":\([0-9]*\).*/\1/p')
"$TWINFS_BIN" keygen --psk "$T/other" >/dev/null
start_mount --psk-file "$T/other"
echo change >"$MNT/d/changed"
check "sync with a wrong key fails" sh -c "! '$TWINFS_BIN' sync --state '$A_STATE' --timeout 4 >/dev/null 2>&1"
check "serve logs the failed handshake" grep -q "TLS handshake failed" "$T/serve.log"
check "the mount says why" status_has "$A_STATE" 'TLS'
check "the peer applied nothing from it" status_has "$P_STATE" "\"applied_seq\":$applied,"
check "the peer's store lacks the change" [ ! -e "$P_STORE/d/changed" ]
stop_mount

# 3. A mount without keys against the TLS peer: no handshake, refused.
start_mount
check "sync without keys against a TLS peer fails" \
	sh -c "! '$TWINFS_BIN' sync --state '$A_STATE' --timeout 8 >/dev/null 2>&1"
check "the peer is still serving" daemon_up "$P_STATE"
check "the peer's store still lacks the change" [ ! -e "$P_STORE/d/changed" ]
stop_mount

# 4. The right key again: everything arrives.
start_mount --psk-file "$T/psk"
check "sync with the right key again exits 0" sync_ok
check "stores equal after the refusals" replicated
stop_mount
kill_serve

# 5. Keys against a plaintext peer: the mount says the handshake failed.
start_serve
start_mount --psk-file "$T/psk"
echo more >"$MNT/d/more"
check "sync with keys against a plaintext peer fails" \
	sh -c "! '$TWINFS_BIN' sync --state '$A_STATE' --timeout 4 >/dev/null 2>&1"
check "the mount names TLS as the reason" status_has "$A_STATE" 'TLS handshake'
check "the plaintext peer says the primary speaks TLS" grep -q "speaks TLS" "$T/serve.log"
stop_mount
kill_serve

# 6. Pinned keys: each node pins the other's id.
check "keygen --state (primary)" "$TWINFS_BIN" keygen --state "$A_STATE"
check "keygen --state (peer)" "$TWINFS_BIN" keygen --state "$P_STATE"
check "keys are 0600" [ "$(stat -c %a "$P_STATE/tls/key.pem")" = 600 ]
aid=$("$TWINFS_BIN" id --state "$A_STATE")
pid=$("$TWINFS_BIN" id --state "$P_STATE")
cat >"$T/serve.yaml" <<YAML
store: $P_STORE
state: $P_STATE
listen: 127.0.0.1:$PORT
tls:
  peer_id: "$aid"
YAML
cat >"$T/mount.yaml" <<YAML
store: $A_STORE
state: $A_STATE
mountpoint: $MNT
peer: 127.0.0.1:$PORT
tls:
  peer_id: "$pid"
YAML
"$TWINFS_BIN" serve --config "$T/serve.yaml" -f >>"$T/serve.log" 2>&1 &
SERVE_PID=$!
track_pid "$SERVE_PID"
wait_until 15 daemon_up "$P_STATE" || fail "serve with pinned keys did not start"
"$TWINFS_BIN" mount --config "$T/mount.yaml" -f >>"$T/mount.log" 2>&1 &
MOUNT_PID=$!
track_pid "$MOUNT_PID"
track_mount "$MNT"
wait_until 15 is_mounted "$MNT" || fail "mount with pinned keys did not start"
wait_until 15 daemon_up "$A_STATE" || fail "mount has no control socket"
echo pinned >"$MNT/d/pinned"
check "sync over TLS (pinned) exits 0" sync_ok
check "stores equal over TLS (pinned)" replicated
check "the peer names the primary's id" status_has "$P_STATE" "\"peer_auth\":\"id $aid\""
stop_mount

# 7. A peer that pins another id refuses this primary.
"$TWINFS_BIN" keygen --state "$T/stranger" >/dev/null 2>&1 || { mkdir -p "$T/stranger"; "$TWINFS_BIN" keygen --state "$T/stranger" >/dev/null; }
sid=$("$TWINFS_BIN" id --state "$T/stranger")
sed "s/$pid/$sid/" "$T/mount.yaml" >"$T/mount2.yaml"
"$TWINFS_BIN" mount --config "$T/mount2.yaml" -f >>"$T/mount.log" 2>&1 &
MOUNT_PID=$!
track_pid "$MOUNT_PID"
wait_until 15 is_mounted "$MNT" || fail "mount 2 did not start"
wait_until 15 daemon_up "$A_STATE" || fail "mount 2 has no control socket"
echo more >"$MNT/d/stranger"
check "a primary that pins a stranger's id cannot sync" \
	sh -c "! '$TWINFS_BIN' sync --state '$A_STATE' --timeout 4 >/dev/null 2>&1"
stop_mount

# No file or folder in either state dir is open to other users' writes.
ww=$(find "$A_STATE" "$P_STATE" -perm /022 ! -type l 2>/dev/null)
[ -z "$ww" ] || note "group/world-writable in STATE: $ww"
check "nothing in STATE is group- or world-writable" [ -z "$ww" ]

# 8. A key file open to other users is refused at start, with the fix.
chmod 644 "$T/psk"
"$TWINFS_BIN" serve --store "$P_STORE" --state "$T/s2" --listen "127.0.0.1:$(free_port)" \
	--psk-file "$T/psk" -f >"$T/o" 2>"$T/e"; rc=$?
check "serve refuses a key file open to others (exit 78)" [ $rc -eq 78 ]
check "it says how to fix it" grep -q "chmod 600" "$T/e"
check "the refused serve created nothing" [ ! -e "$T/s2" ]
finish
