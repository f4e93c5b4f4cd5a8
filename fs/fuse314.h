/*
 * fuse314 — what libfuse 3.14 (Debian 12) lacks and the kernel has: the
 * negotiation of FUSE passthrough and of FUSE over io_uring, registering
 * backing files, and open replies that carry a backing id. With 3.14 it
 * works by hooking the session's /dev/fuse io; from libfuse 3.17 on the
 * passthrough half uses the library's own API. Delete this file (and
 * fs/ring.c) once the distribution ships libfuse >= 3.18, which has both.
 * Any worker thread; the hooks run in whichever thread reads or writes
 * /dev/fuse.
 */
#ifndef TWINFS_FS_FUSE314_H
#define TWINFS_FS_FUSE314_H

#include <stdbool.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

struct fs;

/* Installs the /dev/fuse hooks on the mounted session (after
 * fuse_session_mount); they see the kernel's INIT request (fs->pt_offered,
 * fs->ring_offered), add what fs_init negotiated to the INIT reply, add
 * backing ids to open replies and hand ring replies to fs/ring.c. Returns
 * 0 or -errno. */
int fuse314_setup(struct fs *fs);

/* For the handler of the request the calling thread is serving: did the
 * kernel ask for set-id bits to be cleared (FUSE_WRITE_KILL_SUIDGID on a
 * write, FATTR_KILL_SUIDGID on a setattr)? Only with fs->kp2_on. */
bool fuse314_kill_suidgid(void);
/* fs/ring.c: the request in BUF (as /dev/fuse delivers it) is about to be
 * served by this thread. */
void fuse314_note_request(const void *buf, size_t len);

/* From fs_init, once fs->pt_negotiated is decided: asks for passthrough
 * where the library can (3.17+; with 3.14 the INIT hook does it). */
void fuse314_init(struct fs *fs, struct fuse_conn_info *conn);

/* Registers the store file open on FD as a backing file for REQ's
 * connection. Returns its id (> 0) or -errno. */
int fuse314_backing_open(struct fs *fs, fuse_req_t req, int fd);
/* Drops backing id ID; logs a failure. */
void fuse314_backing_close(struct fs *fs, fuse_req_t req, int id);

/* fuse_reply_create (E non-NULL) or fuse_reply_open with FI, marked
 * passthrough on BACKING_ID when it is > 0. Returns the reply's result. */
int fuse314_reply_open(fuse_req_t req, const struct fuse_entry_param *e,
		       struct fuse_file_info *fi, int backing_id);

#endif
