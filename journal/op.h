/*
 * op — the operation vocabulary that fs/, the journal, the wire protocol
 * and the receiver share: what a namespace change is (struct journal_op),
 * its types and the attribute bits of a setattr. Plain data, no code; any
 * thread. Each user encodes it its own way (jrec.c on disk, proto.c on the
 * wire); adding a type means teaching both and the receiver.
 */
#ifndef TWINFS_JOURNAL_OP_H
#define TWINFS_JOURNAL_OP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum journal_op_type {
	JOP_CREATE = 1,	/* path, mode, uid, gid (regular file) */
	JOP_MKDIR,	/* path, mode, uid, gid */
	JOP_MKNOD,	/* path, mode (S_IFIFO/S_IFSOCK/S_IFCHR/S_IFBLK), rdev, uid, gid */
	JOP_SYMLINK,	/* path, target (in path2), uid, gid */
	JOP_LINK,	/* path = existing, path2 = new name */
	JOP_RENAME,	/* path -> path2, flags = RENAME_NOREPLACE|EXCHANGE|WHITEOUT;
			 * mode S_IFDIR when a directory moves (either side);
			 * with WHITEOUT, uid/gid are the whiteout's owner */
	JOP_UNLINK,	/* path */
	JOP_RMDIR,	/* path */
	JOP_SETATTR,	/* path, attr_mask (JATTR_*), mode/uid/gid/size/atime/mtime */
	JOP_SETXATTR,	/* path, xname, xvalue/xsize, flags (XATTR_CREATE/REPLACE) */
	JOP_REMOVEXATTR,	/* path, xname */
	/* Written by the journal itself; seen by the sender, never by the fs. */
	JOP_MARK_DIR = 64,	/* path: durability mark of a directory */
	JOP_MARK_FILE,	/* path: durability mark of a pre-existing file */
	JOP_NEEDS_SCAN,	/* path: changed while the journal was full; resync it */
	JOP_BATCH,	/* end of a batch taken by the sender */
	JOP_EPOCH,	/* everything before is acked; marks reset */
};

#define JATTR_MODE  (1u << 0)
#define JATTR_UID   (1u << 1)
#define JATTR_GID   (1u << 2)
#define JATTR_SIZE  (1u << 3)
#define JATTR_ATIME (1u << 4)
#define JATTR_MTIME (1u << 5)

/*
 * Results: the mtimes the primary's store held right after the op (read
 * under the namespace lock, so no other change came in between), which the
 * peer sets once it has applied the op, in op order: a new entry, a
 * directory whose entries changed and a whiteout get the primary's mtime,
 * not the peer's clock. res_mask says which of res_mtime[] are known.
 */
enum journal_res {
	JRES_PATH,	/* the entry at path after the op (new, exchanged, whiteout) */
	JRES_PATH2,	/* the entry at path2 (link, rename target) */
	JRES_DIR,	/* the directory holding path */
	JRES_DIR2,	/* the directory holding path2 */
	JRES_N
};
#define JRES_BIT(k) (1u << (k))

/* JOP_CREATE's, JOP_MKNOD's and JOP_SYMLINK's flags, sent by a walk, a
 * scan or a mirror (never journalled: the fs records these only for a name
 * that did not exist): the node has other names on the primary, so a node
 * of its kind already at the path on the peer is kept (a file written in
 * place), its links kept; without it a node there with other names is
 * another inode's name and the node is made anew. */
#define JCREATE_F_LINKED (1u << 0)

/* A namespace operation. Paths are relative to the store root, no leading
 * '/', never "." or ".." components ("" is the root itself). */
struct journal_op {
	enum journal_op_type type;
	const char *path;
	const char *path2;
	uint32_t mode, uid, gid;
	uint64_t rdev;
	uint32_t attr_mask;
	uint64_t size;
	struct timespec atime, mtime;	/* tv_nsec may be UTIME_NOW/UTIME_OMIT */
	uint32_t flags;
	const char *xname;
	const void *xvalue;
	size_t xsize;
	/* For JOP_CREATE/MKDIR/MKNOD/SYMLINK: the new inode's st_ino, so that
	 * later writes to it know it was created in this epoch. For
	 * JOP_SETATTR/SETXATTR/REMOVEXATTR: the changed inode's (0: unknown). */
	uint64_t ino;
	uint32_t res_mask;	/* JRES_BIT(JRES_*) */
	struct timespec res_mtime[JRES_N];
};

/* "create", "rename", ... (for logs); NULL for a type that is not one. */
const char *journal_op_name(enum journal_op_type t);

#endif
