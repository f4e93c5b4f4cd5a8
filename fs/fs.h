/*
 * fs — the twinfs FUSE filesystem: a passthrough of the store directory
 * through the libfuse3 low-level API, recording every change in the
 * journal. One call, fs_run(), mounts, serves until unmount or SIGTERM,
 * and unmounts. Called from the main thread of the mount process.
 */
#ifndef TWINFS_FS_H
#define TWINFS_FS_H

#include <stdbool.h>
#include <stdint.h>

struct journal;

struct fs_opts {
	const char *store;	/* the store directory (must exist) */
	const char *mountpoint;	/* where to mount (must exist) */
	const char *fuse_options;	/* extra "-o" options, comma list, or NULL */
	struct journal *journal;	/* records changes; NULL: none */
	int threads;		/* max FUSE worker threads; 0: default */
	bool debug;		/* libfuse debug output (foreground only) */
	/* Let the kernel serve reads and new-file writes from the store
	 * files itself (FUSE passthrough; kernel 6.9+, root). */
	bool passthrough;
	/* Take requests over io_uring, on the caller's CPU (kernel 6.14+;
	 * turns fuse.enable_uring on if root; never in sync mode). */
	bool uring;
	/* Sync mode (both NULL in async or local-only mounts). From fsync,
	 * fdatasync and flush/release of a file that was written: peer_begin
	 * once the file's changes are appended to the journal (the batch that
	 * carries them commits them), before the local sync;
	 * if it returned true, peer_end(ticket) after the local sync, which
	 * returns once the peer has everything. The two syncs so overlap.
	 * peer_end's result is logged, never returned to the application. */
	bool (*peer_begin)(void *arg, uint64_t *ticket);
	int (*peer_end)(void *arg, uint64_t ticket);
	void *peer_arg;
	/* Called once in a helper thread after the mount answered its first
	 * getattr (the mount is usable). A non-zero return (-errno) unmounts
	 * and makes fs_run fail with it. May be NULL. */
	int (*on_ready)(void *arg);
	void *on_ready_arg;
	/* After on_ready, fs_run writes one int (0, or -errno if mounting or
	 * the first getattr or on_ready failed) to ready_fd and closes it, so
	 * a parent process can exit once the mount is usable; -1: none. */
	int ready_fd;
};

/* Mounts o->store at o->mountpoint and serves requests until unmounted
 * (fusermount3 -u) or a SIGTERM/SIGINT/SIGHUP. Returns 0 after a clean
 * unmount or -errno: -ENOENT/-ENOTDIR (store or mountpoint), -EBUSY
 * (mountpoint already mounted), -ENODEV (no /dev/fuse), other -errno.
 * Logs what failed. */
int fs_run(const struct fs_opts *o);

/* Checks FUSE_OPTIONS (the user's -o list) as fs_run would pass them to
 * libfuse, without mounting anything: 0, or -EINVAL after libfuse printed
 * which option it does not know. Main thread, before fs_run. */
int fs_check_options(const char *fuse_options);

#endif
