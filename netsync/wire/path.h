/*
 * path — validation and safe resolution of the relative paths that arrive
 * from the network (docs/protocol.md, "path"). A path may never name
 * anything outside the store: not by "..", not by an absolute path, not
 * through a symlink anywhere along it. Stateless; any thread.
 */
#ifndef TWINFS_PATH_H
#define TWINFS_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* 0 if PATH is a well-formed relative store path ("" = the root only when
 * allow_root), else -EINVAL: absolute, ".", "..", empty components, a
 * trailing '/', a component over 255 bytes, or over 4095 bytes in all. */
int path_check(const char *path, bool allow_root);

/* A resolved path: act on NAME relative to DIRFD with *at() calls that do
 * not follow NAME. For the root, dirfd is the root and name is ".". */
struct path_ref {
	int dirfd;		/* owned unless it is the root fd */
	bool owned;
	const char *name;	/* points into the caller's path, or "." */
};

/*
 * Checks PATH and opens its parent directory beneath ROOTFD with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), as an
 * O_RDONLY directory fd (O_PATH if the directory is not readable). Returns 0, -EINVAL (bad path), -ENOENT/-ENOTDIR
 * (parent missing), -ELOOP (a symlink on the way), -EXDEV (escape).
 * path_put releases the ref.
 */
int path_resolve(int rootfd, const char *path, bool allow_root, struct path_ref *ref);
void path_put(struct path_ref *ref);

/*
 * The highest folder on PATH's way (PATH itself excluded) that is missing
 * beneath ROOTFD, or is not a folder there (a file, a symlink: nothing is
 * followed). Written to OUT with 1 returned; 0 if every ancestor is a
 * folder; -EINVAL for a bad path, -ENAMETOOLONG, or another -errno of
 * openat2. Tells the primary which folder to repair after an apply error.
 */
int path_blocked_at(int rootfd, const char *path, char *out, size_t len);

#endif
