/*
 * ring — FUSE over io_uring (kernel 6.14+, fuse.enable_uring): requests
 * reach per-CPU ring threads through io_uring instead of /dev/fuse reads.
 * Owns the kernel switch, the rings, their threads and buffers, and the
 * hand-back of a reply to the ring it came from. The handlers are the
 * same fuse_lowlevel_ops; libfuse 3.14 (Debian 12) predates the feature,
 * so each request is laid out as /dev/fuse would deliver it and fed to
 * fuse_session_process_buf, and the reply libfuse writes through the
 * session's custom io (fs/backing.c) is committed to the ring instead.
 */
#ifndef TWINFS_FS_RING_H
#define TWINFS_FS_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fs;

/* Before the mount: if the kernel has the feature but it is off, turns
 * it on (root only; it only changes servers that ask for it in their INIT
 * reply). Returns true if the kernel may offer it. */
bool ring_kernel_enable(void);

/* After the INIT reply asking for FUSE_OVER_IO_URING went out: starts one
 * ring thread per CPU and slot, which register with the kernel. The
 * kernel moves requests to the rings once every CPU has one; until then,
 * and for forgets and interrupts always, they come through /dev/fuse.
 * MAX_WRITE and MAX_PAGES are what the INIT reply said. Returns 0 or
 * -errno (then requests simply stay on /dev/fuse). */
int ring_start(struct fs *fs, uint32_t max_write, uint32_t max_pages);

/* From the session's writev hook: if IOV is the reply to the request the
 * calling ring thread is handling, queues it for the ring and returns its
 * length; otherwise returns -ENOENT and the caller writes it to FD. */
ssize_t ring_reply(const struct iovec *iov, int count);

/* For a handler on a ring thread: the buffer its reply's data is
 * committed from, and in *CAP its size. Data a handler puts there (a
 * read's pread) is not copied again by ring_reply. NULL off the rings. */
void *ring_reply_buf(size_t *cap);

/* After the session loop ended (unmounted): stops and joins the ring
 * threads and frees the rings. Safe without ring_start. */
void ring_stop(struct fs *fs);

#endif
