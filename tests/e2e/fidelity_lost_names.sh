#!/bin/sh
# Fidelity: a change to a hard-linked file whose name the mount lost track
# of is still replicated. The mount names such a file by a kept table of
# its names (fs/record.c): its fd was opened through a name removed since.
#  1. The kept name lies in a folder renamed since: the name moves with
#     the folder (difftest_cases/hardlink_dir_rename_xattr.jsonl is the
#     shrunk sequence the tester found; here with chmod and chown too).
#  2. A file with one link left, renamed after its other name went: the
#     new name is kept too; then it is pushed out of the table (1,024
#     names) by other hard links, and the change is recorded as a rescan
#     of the store instead of not at all.
# Before, every one of these changes was lost and `twinfs sync` exited 0
# with the peer differing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
command -v setfattr >/dev/null || skip "setfattr missing (apt install attr)"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

# 1. the folder of the kept name is renamed
mkdir -p "$MNT/a/sub" "$MNT/b"
echo one >"$MNT/a/sub/first"
ln "$MNT/a/sub/first" "$MNT/b/second"
rm "$MNT/a/sub/first"
mv "$MNT/b" "$MNT/c"
setfattr -n user.k -v moved "$MNT/c/second"
chmod 0640 "$MNT/c/second"
chown 12:34 "$MNT/c/second"
do_sync 60
check "sync after the folder rename exits 0" [ $? -eq 0 ]
check "the stores are equal after the folder rename" stores_equal

# 2. one link left, renamed: the new name is kept
echo two >"$MNT/x"
ln "$MNT/x" "$MNT/y"
rm "$MNT/x"
mv "$MNT/y" "$MNT/z"
setfattr -n user.k -v renamed "$MNT/z"
do_sync 60
check "sync after the rename of the last link exits 0" [ $? -eq 0 ]
check "the stores are equal after the rename of the last link" stores_equal
check "no rescan was needed for it" \
	sh -c "! grep -q 'cannot name a hard-linked file that changed' '$T/mount.log'"
# ... and then pushed out of the table by 1,100 other links
mkdir "$MNT/many"
echo other >"$MNT/other"
python3 - "$MNT" <<'PY'
import os, sys
m = sys.argv[1]
for k in range(1100):
    os.link(os.path.join(m, "other"), os.path.join(m, "many", "l%d" % k))
PY
setfattr -n user.k -v lost "$MNT/z"
chmod 0604 "$MNT/z"
do_sync 60
check "sync after the name was pushed out exits 0" [ $? -eq 0 ]
check "the stores are equal after the name was pushed out" stores_equal
check "the mount rescanned the store for it" \
	grep -q 'cannot name a hard-linked file that changed' "$T/mount.log"
stop_mount
finish
