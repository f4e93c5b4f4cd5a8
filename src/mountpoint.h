/*
 * mountpoint — what `twinfs mount` checks about its mountpoint before it
 * touches anything: a dead twinfs mount of the same store left by a killed
 * daemon is detached (crash recovery without ExecStartPre), any other
 * mount there is refused, a non-empty directory is warned about. Reads
 * /proc/self/mountinfo. Main thread of the mount command, before forking.
 */
#ifndef TWINFS_MOUNTPOINT_H
#define TWINFS_MOUNTPOINT_H

#include <stdbool.h>

#include <stddef.h>

/* Absolute form of PATH without stat'ing its last component (a dead FUSE
 * mount answers ENOTCONN to that): realpath of the parent + the name.
 * 0 or -errno. */
int mountpoint_resolve(const char *path, char *out, size_t len);

/* The topmost mount at ABS (an absolute, resolved path) in
 * /proc/self/mountinfo: 1 and its type and source, 0 if nothing is
 * mounted there, -errno if mountinfo cannot be read. */
int mountpoint_lookup(const char *abs, char *fstype, size_t typelen,
		      char *source, size_t srclen);

/*
 * Makes MNT usable for mounting STORE (both as the user gave them; STORE
 * exists and the caller holds its writer lock, so no live twinfs daemon
 * serves it). A dead fuse.twinfs mount of the same store is lazily unmounted
 * (umount2 MNT_DETACH, or `fusermount3 -uz` when not root) with a warning.
 * Returns 0, -EBUSY if anything else is mounted there (live, or another
 * store's or type's), -ENOENT/-ENOTDIR/-EACCES for a bad path.
 * Prints the one-line reason to stderr ("twinfs mount: ...").
 * A directory with files in it gets a warning (they are hidden while
 * mounted) unless NONEMPTY_OK (-o nonempty).
 */
int mountpoint_prepare(const char *mnt, const char *store, bool nonempty_ok);

#endif
