/*
 * backing — FUSE passthrough policy: which opens the kernel serves from
 * the store file itself, the backing ids registered for them and the
 * per-inode open counts that keep that choice consistent. The transport
 * is fs/fuse314.c. Any worker thread; one mutex.
 */
#ifndef TWINFS_FS_BACKING_H
#define TWINFS_FS_BACKING_H

#include <stdbool.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

struct fs;
struct fs_file;

/* From the init callback: true if passthrough will be negotiated (the
 * kernel offered it, we want it and may use it). The caller must then not
 * ask for the writeback cache, which the kernel does not combine with it. */
bool backing_negotiate(struct fs *fs);

/* Decides whether the open F (for REQ) (fd open on the store file, FLAGS the
 * application's open flags, FRESH: the file was just created or is empty,
 * and has no set-id bits)
 * is served by passthrough, and if so registers the backing file. Sets
 * f->backing (>0) and f->pt_write. Returns 0, falling back to the path
 * through us when passthrough is not possible, or -ETXTBSY for a write
 * open while the file is open for passthrough from a read-only store fd
 * (the kernel allows neither kind of open then). */
int backing_choose(struct fs *fs, fuse_req_t req, struct fs_file *f, int flags,
		   bool fresh);

/* STORE_FLAGS (for an application open with APP_FLAGS) as passthrough
 * wants them: read-write, so that one backing file serves every later
 * open of the inode, and without O_APPEND, which the backing file would
 * apply to every write (the kernel positions appends itself). The caller
 * retries with STORE_FLAGS if the store refuses these. */
int backing_store_flags(struct fs *fs, int app_flags, int store_flags);

/* Replies to an open or create with FI, adding the passthrough flag and
 * backing id of F when it has one; E non-NULL for create. On a failed
 * reply (the open was interrupted) undoes backing_choose. Returns the
 * fuse_reply_* result. */
int backing_reply(fuse_req_t req, struct fs *fs, struct fs_file *f,
		  const struct fuse_entry_param *e, struct fuse_file_info *fi);

/* F is released (REQ: the release, or the open that failed): drops its count and, with the last passthrough open of
 * the inode, the backing id. */
void backing_release(struct fs *fs, fuse_req_t req, struct fs_file *f);

#endif
