/*
 * cred — switches a FUSE worker thread's fsuid/fsgid to the requesting
 * user for the duration of a create-type operation. Runs in any worker
 * thread; touches only the calling thread's credentials.
 *
 * Why this works for a shared folder: the mount uses default_permissions,
 * so the kernel has already checked every permission (search, write,
 * sticky bit, ownership rules for chmod/chown) against the caller's
 * credentials and our attributes before a request reaches us. What the
 * kernel cannot do is make the new inode belong to the caller: the store
 * assigns the creating thread's fsuid/fsgid (or the parent's group when
 * the parent is setgid, exactly as a local filesystem does). So we create
 * as the caller. On Linux fsuid/fsgid are per thread at the syscall level
 * (glibc's set*id wrappers would broadcast to every thread; we use the raw
 * syscalls). The securebit SECBIT_NO_SETUID_FIXUP keeps our capabilities
 * while fsuid is not 0, so a caller that got access through supplementary
 * groups (which we do not copy) is not refused a second time by the store.
 */
#include "fs/cred.h"

#include <errno.h>
#include <string.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"

static bool cred_root;

int cred_init(void)
{
	if (geteuid() != 0)
		return 0;
	if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0) {
		int e = errno;

		log_warn("cannot keep capabilities across fsuid changes; "
			 "users may get EACCES through group permissions",
			 "err=\"%s\"", strerror(e));
	}
	cred_root = true;
	return 0;
}

void cred_enter(fuse_req_t req, struct cred_saved *s)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	s->switched = false;
	if (!cred_root || (ctx->uid == 0 && ctx->gid == 0))
		return;
	syscall(SYS_setfsgid, ctx->gid);
	syscall(SYS_setfsuid, ctx->uid);
	s->switched = true;
}

void cred_leave(struct cred_saved *s)
{
	if (!s->switched)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	s->switched = false;
}
