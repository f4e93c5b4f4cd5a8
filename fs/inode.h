/*
 * inode — the table of store inodes the kernel knows about. Each entry
 * holds the kernel's lookup count and, while it is among the most recently
 * used, an O_PATH fd on the store inode (so it survives renames and
 * unlinks); the FUSE node id is the entry's address (the root is
 * FUSE_ROOT_ID). The fds are a cache under a hard cap: handlers borrow an
 * entry's fd with inode_fd_get/inode_fd_put, which reopen an entry whose fd
 * was closed. Thread-safe: one mutex guards the hash table, every lookup
 * count and the fds.
 */
#ifndef TWINFS_FS_INODE_H
#define TWINFS_FS_INODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

struct file_handle;

struct inode {
	/* O_PATH|O_NOFOLLOW on the store inode, or -1 while detached (the
	 * table was at its fd cap); table lock. Handlers never read it:
	 * they borrow it (inode_fd_get). */
	int fd;
	int users;		/* borrowers of fd; table lock (never detached) */
	int n_open;		/* open files of the inode (inode_open_pin): an
				 * unlinked file must stay reachable; table lock */
	bool stale;		/* detached and its store inode is gone (the
				 * number was reused): out of the hash; lock */
	struct file_handle *fh;	/* to reopen when detached; table lock */
	struct inode *fd_prev, *fd_next;	/* attached entries, most
						 * recently borrowed first */
	dev_t dev;		/* immutable */
	ino_t ino;		/* immutable */
	mode_t type;		/* S_IFMT bits; immutable */
	uint64_t nlookup;	/* kernel references; table lock */
	bool no_caps;		/* known to have no security.capability xattr
				 * (created by this mount, none set since);
				 * __atomic relaxed, see fs_getxattr */
	/* Open files of this inode, for FUSE passthrough (fs/backing.c;
	 * its lock): the kernel refuses to mix passthrough and cached opens
	 * of one inode, so the first open decides for the others. */
	int n_pt, n_cached;
	int backing;		/* kernel backing id while n_pt > 0 */
	bool backing_rw;	/* ... registered from a read-write fd */
	struct inode *next;	/* hash chain; table lock */
	/* Least-recently-looked-up order and the name the kernel last
	 * looked this inode up by, so that fs/evict.c can ask the kernel to
	 * drop it (table lock; NULL name: never looked up by name). */
	struct inode *lru_prev, *lru_next;
	char *name;
	dev_t pdev;
	ino_t pino;
	/* Store-relative path for journal records (fs/record.c), valid while
	 * rpath_gen equals the fs's ns_gen; only touched under the journal's
	 * namespace lock. */
	char *rpath;
	uint64_t rpath_gen;
};

struct inode_table;

/* Creates the table with the root inode on ROOT_FD (takes ownership).
 * Returns 0 or -errno. */
int inode_table_new(int root_fd, struct inode_table **out);
/* Closes every fd and frees the table. Not concurrently with other calls. */
void inode_table_free(struct inode_table *t);

/* The inode for a kernel node id. Never NULL for ids the kernel got from us. */
struct inode *inode_get(struct inode_table *t, fuse_ino_t id);
fuse_ino_t inode_id(struct inode_table *t, struct inode *i);
struct inode *inode_root(struct inode_table *t);

/* Finds or inserts the inode for FD (an O_PATH fd whose fstat is ST), found
 * as NAME in PARENT, and adds one lookup reference; it becomes the most
 * recently used. Takes ownership of FD: it is closed if the inode was
 * already known. Returns the inode or NULL (-ENOMEM in *err). */
struct inode *inode_ref(struct inode_table *t, int fd, const struct stat *st,
			const struct inode *parent, const char *name, int *err);

/* The same for a new name whose O_PATH open failed for want of fds:
 * the entry is made detached (from DIRFD/NAME's file handle), so that a
 * name just created is never reported as failed. */
struct inode *inode_ref_at(struct inode_table *t, int dirfd,
			   const struct stat *st, const struct inode *parent,
			   const char *name, int *err);

/*
 * Borrowing fds. inode_fd_get returns an O_PATH fd on I's store inode for
 * the caller to use until inode_fd_put(t, i, fd), or -errno (-ESTALE: its
 * file handle says the store inode is gone; -ENOENT: unreachable by name
 * and no handle may be used, non-root). A detached entry is reopened by its last name
 * (from the nearest attached ancestor) or its file handle, and attached
 * again if the cap allows (closing the least recently borrowed idle fd),
 * else the fd is the caller's alone and put closes it. Any thread; never
 * waits for anything but the table lock.
 */
int inode_fd_get(struct inode_table *t, struct inode *i);
void inode_fd_put(struct inode_table *t, struct inode *i, int fd);

/* At most CAP attached fds besides the root's (0: no cap). Entries past
 * it are detached, least recently borrowed first; on a store without file
 * handles the cap cannot hold and is only a target. */
void inode_set_fd_cap(struct inode_table *t, size_t cap);
/* Entries with an fd (the root excluded): tests, stats. */
size_t inode_attached(struct inode_table *t);

/* An open file of I (on FILE_FD) exists (pin) or went (unpin): I keeps
 * its fd, and gets one from FILE_FD if it had lost it meanwhile. */
void inode_open_pin(struct inode_table *t, struct inode *i, int file_fd);
void inode_open_unpin(struct inode_table *t, struct inode *i);

/* Records that the inode ST (dev, ino) is now NAME in PARENT (a rename),
 * if the table holds it. */
void inode_renamed(struct inode_table *t, const struct stat *st,
		   const struct inode *parent, const char *name);

/* A name the kernel may be asked to forget (fs/evict.c). */
struct inode_victim {
	fuse_ino_t parent;
	char name[256];
};

/* Picks up to MAX of the least recently used non-directory inodes whose
 * parent is still in the table, and makes them most recently used (so a
 * name the kernel keeps, an open file's, is not picked again at once).
 * Returns how many were written to OUT. */
size_t inode_pick_victims(struct inode_table *t, struct inode_victim *out,
			  size_t max);
/* Drops N lookup references; at zero the inode is removed, its fd closed,
 * after gone_fn(arg, i) has seen it (the journal forgets deleted files).
 * The root is never removed. */
void inode_unref(struct inode_table *t, struct inode *i, uint64_t n);
void inode_set_gone_fn(struct inode_table *t,
		       void (*fn)(void *arg, struct inode *i), void *arg);

/* Calls FN(ARG) (outside the table lock, from the thread that added the
 * entry) each time an insertion leaves more than LIMIT entries; FN must
 * not block (fs/evict.c wakes its thread). */
void inode_set_pressure_fn(struct inode_table *t, void (*fn)(void *arg),
			   void *arg, size_t limit);

/* Number of inodes in the table (tests, stats). */
size_t inode_count(struct inode_table *t);

#endif
