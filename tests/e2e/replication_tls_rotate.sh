#!/bin/sh
# Rotating the pre-shared key while replication runs, neither daemon
# restarted: the peer's key file gets the new key beside the old, the
# mount's gets the new key alone, then the peer's the new key alone. The
# mount makes one reconnect (with the new key), its writes meanwhile all
# arrive, the old key is refused afterwards, and both stores compare
# equal. A key file that does not parse is reported and the keys stay.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

st() {
	"$TWINFS_BIN" status --state "$1" --json | python3 -c 'import json,sys
v=json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v,str) else json.dumps(v))' "$2"
}
# put FILE KEYFILE...: FILE holds the keys of the KEYFILEs, replaced at once
put() {
	_dst=$1; shift
	cat "$@" >"$_dst.new" && chmod 600 "$_dst.new" && mv "$_dst.new" "$_dst"
}
writes() { for i in $(seq 1 20); do head -c 20000 /dev/urandom >"$MNT/$1/f$i"; done; }

"$TWINFS_BIN" keygen --psk "$T/old" >/dev/null
"$TWINFS_BIN" keygen --psk "$T/new" >/dev/null
put "$T/peer.psk" "$T/old"
put "$T/mount.psk" "$T/old"
start_serve --psk-file "$T/peer.psk"
start_mount --psk-file "$T/mount.psk"
mkdir -p "$MNT/a" "$MNT/b" "$MNT/c"
writes a
check "synced with the old key" synced 60
old_id=$(st "$P_STATE" peer_auth)

# 1. the peer accepts both keys: the link stays as it is
put "$T/peer.psk" "$T/new" "$T/old"
reread() { grep -q 'key file changed' "$T/serve.log"; }
check "the peer reads its changed key file" wait_until 10 reread
writes b
check "synced while the peer holds both keys" synced 60
check "no reconnect yet" [ "$(st "$A_STATE" reconnects)" = 0 ]

# 2. the mount's file has the new key alone: it reconnects with it, once
put "$T/mount.psk" "$T/new"
newkey() { a=$(st "$P_STATE" peer_auth); [ "$a" != null ] && [ "$a" != "$old_id" ]; }
check "the mount reconnects with the new key" wait_until 15 newkey
writes c
check "synced with the new key" synced 60
check "one reconnect for the rotation ($(st "$A_STATE" reconnects))" \
	[ "$(st "$A_STATE" reconnects)" = 1 ]

# 3. the peer's file has the new key alone: the link stays
# counted before the change: serve's tick may read the file at once
n=$(grep -c 'key file changed' "$T/serve.log")
put "$T/peer.psk" "$T/new"
reread2() { [ "$(grep -c 'key file changed' "$T/serve.log")" -gt "$n" ]; }
check "the peer reads its file again" wait_until 10 reread2
echo more >"$MNT/c/more"
check "synced after the old key left the peer" synced 60
check "still one reconnect" [ "$(st "$A_STATE" reconnects)" = 1 ]

# 4. a key file that does not parse: reported, the keys stay
printf 'not a key\n' >"$T/bad"; put "$T/mount.psk" "$T/bad"
said() { grep -q 'cannot read the key file again' "$T/mount.log"; }
check "a broken key file is reported" wait_until 10 said
echo again >"$MNT/c/again"
check "replication goes on with the keys it had" synced 60
check "stores equal" stores_replicated
stop_mount

# 5. the old key is refused now
put "$T/mount.psk" "$T/old"
start_mount --psk-file "$T/mount.psk"
echo refused >"$MNT/c/refused"
check "a mount with the old key is refused" \
	sh -c "! '$TWINFS_BIN' sync --state '$A_STATE' --timeout 4 >/dev/null 2>&1"
check "the peer never got its change" [ ! -e "$P_STORE/c/refused" ]
stop_mount
kill_serve
finish
