/*
 * cred — per-request file-system identity for the FUSE worker threads:
 * new files, directories, nodes and symlinks are created with the calling
 * process's uid and gid (and the parent's group when it is setgid).
 */
#ifndef TWINFS_FS_CRED_H
#define TWINFS_FS_CRED_H

#include <stdbool.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

/* Main thread, before any worker starts: when running as root, keeps the
 * capabilities across fsuid changes (SECBIT_NO_SETUID_FIXUP). Returns 0
 * or -errno. */
int cred_init(void);

struct cred_saved {
	bool switched;
};

/* Switches this thread's fsuid/fsgid to the caller of REQ. */
void cred_enter(fuse_req_t req, struct cred_saved *s);
/* Switches back to root. */
void cred_leave(struct cred_saved *s);

#endif
