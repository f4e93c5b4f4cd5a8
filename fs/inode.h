/*
 * inode — the table of store inodes the kernel knows about. Each entry
 * holds an O_PATH fd on the store inode (so it survives renames and
 * unlinks) and the kernel's lookup count; the FUSE node id is the entry's
 * address (the root is FUSE_ROOT_ID). Thread-safe: one mutex guards the
 * hash table and every lookup count.
 */
#ifndef TWINFS_FS_INODE_H
#define TWINFS_FS_INODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

struct inode {
	int fd;			/* O_PATH|O_NOFOLLOW on the store inode; immutable */
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
