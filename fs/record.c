/*
 * record — the filesystem's side of the journal contract
 * (netsync/journal.h): every journal call the FUSE handlers make goes
 * through here. Runs in any FUSE worker thread. Owns nothing but path
 * buffers; never changes the store, only reads paths, link counts and the
 * results of an op (fstatat, journal/op.h).
 *
 * Paths: records name files relative to the store root. We do not keep a
 * name tree; the kernel resolves "/proc/self/fd/N" of the parent's O_PATH
 * fd to its current absolute path, from which we strip the store prefix.
 * Under the journal's namespace lock no rename can run in between, so the
 * path is the one the record's position in the journal implies. Writes
 * never need a path (the journal resolves it when sending).
 *
 * That readlink is a large share of the daemon's CPU in a copy (three
 * records per file, each resolving the same directory), so the result is
 * kept on the inode (rpath) until the next rename, unlink or rmdir: only
 * those change what an existing inode's fd resolves to, and they all run
 * under the same lock and bump fs->ns_gen in record_end.
 */
#include "fs/record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/procfd.h"

/* Appends "/NAME" (no slash at the root) to REL into BUF. */
static int record_join(const char *rel, const char *name, char *buf, size_t len)
{
	size_t rel_len = strlen(rel), name_len = name ? strlen(name) : 0;

	if (rel_len + 1 + name_len + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, rel, rel_len);
	if (name) {
		if (rel_len)
			buf[rel_len++] = '/';
		memcpy(buf + rel_len, name, name_len);
	}
	buf[rel_len + name_len] = '\0';
	return 0;
}

/* Keeps REL as I's record path for this generation (no memory: not kept). */
static void record_cache(struct fs *fs, struct inode *i, const char *rel)
{
	char *copy = strdup(rel);

	if (!copy)
		return;
	free(i->rpath);
	i->rpath = copy;
	i->rpath_gen = fs->ns_gen;
}

/*
 * A cached path from an older generation still names I if it resolves to
 * I's inode now (under the ns lock nothing moves it meanwhile). That is
 * the only way to name a hard-linked inode whose fd was opened through a
 * name since removed: its /proc link reads "... (deleted)", yet the inode
 * lives on under another name (cached by fs_link, or seen by a lookup),
 * and a link, setattr or xattr change of it must still be recorded.
 */
static bool record_still_names(struct fs *fs, const struct inode *i)
{
	struct stat st;

	if (i == inode_root(fs->itab))
		return true;
	return fstatat(inode_root(fs->itab)->fd, i->rpath, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       st.st_ino == i->ino && st.st_dev == i->dev;
}

/*
 * Names of hard-linked non-directories. The /proc link of an inode's fd
 * names the dentry it was opened through; once that name is removed it
 * reads "... (deleted)" although the inode lives on under other names,
 * and its link, chown, setattr or xattr change must still be recorded.
 * So each name such an inode gets (link, rename) or is looked up by is
 * kept here as its store-relative path, keyed by (dev, ino); an entry
 * counts only while that path still resolves to the inode (checked under
 * the ns lock, so it cannot change meanwhile). Paths, not directory fds:
 * the daemon's fds are the inode table's budget (fs/inode.c), and a table
 * of held fds beside it ran the mount out of descriptors. A directory
 * that moves takes the kept paths below it along (record_alias_moved).
 * A small table, round-robin: a name pushed out of it, like any name not
 * known at all, costs a rescan of the store (record_begin), never a lost
 * record.
 */
#define RECORD_ALIAS_MAX 1024
#define RECORD_PATH_MAX (PATH_MAX + NAME_MAX + 2)
struct record_alias {
	dev_t dev;
	ino_t ino;
	char *path;	/* NULL: free slot */
};
static struct record_alias record_aliases[RECORD_ALIAS_MAX];
static unsigned record_alias_next;	/* round-robin victim */


/* Under the ns lock. */
void record_alias_note(struct fs *fs, struct inode *dir, const char *name,
		       dev_t dev, ino_t ino)
{
	struct record_alias *a = NULL;
	char *path;

	if (!fs->journal)
		return;
	path = malloc(RECORD_PATH_MAX);
	if (!path)
		return;
	if (record_path(fs, dir, name, path, RECORD_PATH_MAX) < 0) {
		free(path);
		return;
	}
	/* one slot per name: an inode may lose any of them */
	for (int k = 0; k < RECORD_ALIAS_MAX && !a; k++)
		if (record_aliases[k].path && record_aliases[k].dev == dev &&
		    record_aliases[k].ino == ino && strcmp(record_aliases[k].path, path) == 0)
			a = &record_aliases[k];
	if (!a)
		a = &record_aliases[record_alias_next++ % RECORD_ALIAS_MAX];
	free(a->path);
	*a = (struct record_alias){ dev, ino, path };
}

bool record_alias_known(dev_t dev, ino_t ino)
{
	for (int k = 0; k < RECORD_ALIAS_MAX; k++)
		if (record_aliases[k].path && record_aliases[k].dev == dev &&
		    record_aliases[k].ino == ino)
			return true;
	return false;
}

/* DIR/REST into a new string, or NULL. */
static char *record_alias_rebase(const char *dir, const char *rest)
{
	char *p;

	return asprintf(&p, "%s%s%s", dir, *dir && *rest ? "/" : "", rest) < 0 ? NULL : p;
}

/* The suffix of PATH below directory DIR ("" for the root), or NULL. */
static const char *record_alias_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 0)
		return path;
	return strncmp(path, dir, n) == 0 && path[n] == '/' ? path + n + 1 : NULL;
}

/*
 * Directory FROM moved to TO (EXCHANGE: and TO's to FROM), under the ns
 * lock: the kept names below it move with it. Without this a file whose
 * fd was opened through a name removed since, and whose other name lies
 * in a folder renamed since, had no name left that resolves, and its
 * setattr or xattr change was not recorded at all.
 */
static void record_alias_moved(const char *from, const char *to, bool exchange)
{
	for (int k = 0; k < RECORD_ALIAS_MAX; k++) {
		struct record_alias *a = &record_aliases[k];
		const char *rest;
		char *np = NULL;

		if (!a->path)
			continue;
		if ((rest = record_alias_below(a->path, from)) != NULL)
			np = record_alias_rebase(to, rest);
		else if (exchange && (rest = record_alias_below(a->path, to)) != NULL)
			np = record_alias_rebase(from, rest);
		else
			continue;
		free(a->path);
		a->path = np;	/* NULL (no memory): the slot is free */
	}
}

/* The store-relative path of the directory open on FD into REL (PATH_MAX
 * + 1 bytes). Returns a pointer into REL's buffer or NULL (-errno in *rc):
 * -ENOENT for a removed directory or one outside the store. */
static const char *record_fd_rel(struct fs *fs, int fd, char *abs, int *rc)
{
	char proc[PROCFD_NAME_MAX];
	const char *rel;
	ssize_t n;

	n = readlinkat(procfd_at(fd, proc), proc, abs, PATH_MAX);
	if (n < 0) {
		*rc = -errno;
		return NULL;
	}
	abs[n] = '\0';
	if ((size_t)n < fs->store_len ||
	    memcmp(abs, fs->store, fs->store_len) != 0 ||
	    (abs[fs->store_len] != '/' && abs[fs->store_len] != '\0') ||
	    (n >= 10 && strcmp(abs + n - 10, " (deleted)") == 0)) {
		*rc = -ENOENT;
		return NULL;
	}
	rel = abs + fs->store_len;
	return *rel == '/' ? rel + 1 : rel;
}

/* A kept name of non-directory I (see "Names of hard-linked
 * non-directories") into BUF. Returns 0 or -ENOENT. */
static int record_alias_path(struct fs *fs, const struct inode *i, char *buf, size_t len)
{
	int root = inode_root(fs->itab)->fd;	/* the root's fd is never closed */
	struct stat st;

	for (int k = 0; k < RECORD_ALIAS_MAX; k++) {
		struct record_alias *a = &record_aliases[k];

		if (!a->path || a->dev != i->dev || a->ino != i->ino)
			continue;
		if (fstatat(root, a->path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_dev != i->dev || st.st_ino != i->ino)
			continue;	/* that name is gone: another may not be */
		if (strlen(a->path) >= len)
			return -ENAMETOOLONG;
		strcpy(buf, a->path);
		return 0;
	}
	return -ENOENT;
}

int record_path(struct fs *fs, struct inode *dir, const char *name,
		char *buf, size_t len)
{
	char *abs;
	const char *rel;
	int rc = 0, fd;

	if (dir->rpath && dir->rpath_gen == fs->ns_gen)
		return record_join(dir->rpath, name, buf, len);
	if (dir->rpath && record_still_names(fs, dir)) {
		dir->rpath_gen = fs->ns_gen;
		return record_join(dir->rpath, name, buf, len);
	}
	abs = malloc(PATH_MAX + 1);
	if (!abs)
		return -ENOMEM;
	fd = inode_fd_get(fs->itab, dir);
	if (fd < 0) {
		rc = fd;
		goto out_free;
	}
	rel = record_fd_rel(fs, fd, abs, &rc);
	inode_fd_put(fs->itab, dir, fd);
	if (!rel && rc == -ENOENT && !name && dir->type != S_IFDIR) {
		rc = record_alias_path(fs, dir, buf, len);
		goto out_free;
	}
	if (!rel)
		goto out_free;
	rc = record_join(rel, name, buf, len);
	if (rc == 0)
		record_cache(fs, dir, rel);
out_free:
	free(abs);
	return rc;
}


/* Under the ns lock (the answer holds until the op runs): the lstat of
 * NAME in DIR into ST; false when there is none. */
static bool record_lstat(struct fs *fs, struct inode *dir, const char *name, struct stat *st)
{
	int fd;
	bool ok;

	if (!dir || !name || (fd = inode_fd_get(fs->itab, dir)) < 0)
		return false;
	ok = fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
	inode_fd_put(fs->itab, dir, fd);
	return ok;
}

/* NAME in DIR is a non-directory with other links. */
static bool record_has_links(struct fs *fs, struct inode *dir, const char *name)
{
	struct stat st;

	return record_lstat(fs, dir, name, &st) && !S_ISDIR(st.st_mode) && st.st_nlink > 1;
}

static bool record_is_dir(struct fs *fs, struct inode *dir, const char *name)
{
	struct stat st;

	return record_lstat(fs, dir, name, &st) && S_ISDIR(st.st_mode);
}

void record_begin(struct fs *fs, struct record *r, enum journal_op_type type,
		  struct inode *dir, const char *name,
		  struct inode *dir2, const char *name2)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->op.type = type;
	r->dir = dir;
	r->name = name;
	r->dir2 = dir2;
	r->name2 = name2;
	if (!fs->journal)
		return;
	journal_ns_lock(fs->journal);
	r->paths = malloc(2 * RECORD_PATH_MAX);
	if (!r->paths) {
		rc = -ENOMEM;
		goto out_log;
	}
	rc = record_path(fs, dir, name, r->paths, RECORD_PATH_MAX);
	if (rc < 0)
		goto out_log;
	r->op.path = r->paths;
	/* an attribute change names the inode too: should the name be gone
	 * when the sender gets to it, the inode's other names still need it
	 * (netsync/primary/sender_scan.c, scan_inode_names) */
	if (type == JOP_SETATTR || type == JOP_SETXATTR || type == JOP_REMOVEXATTR)
		r->op.ino = dir->ino;
	if (type == JOP_RENAME && (record_is_dir(fs, dir, name) || record_is_dir(fs, dir2, name2)))
		r->op.mode = S_IFDIR;	/* the journal must know a directory moves */
	if (type == JOP_UNLINK)
		r->drops_link = record_has_links(fs, dir, name);
	else if (type == JOP_RENAME)	/* an exchange too: a spare rescan */
		r->drops_link = record_has_links(fs, dir2, name2);
	if (dir2) {
		rc = record_path(fs, dir2, name2, r->paths + RECORD_PATH_MAX,
				 RECORD_PATH_MAX);
		if (rc < 0)
			goto out_log;
		r->op.path2 = r->paths + RECORD_PATH_MAX;
	}
	r->ok = true;
	rc = journal_prepare(fs->journal, &r->op);
	if (rc < 0)
		goto out_log;
	return;
out_log:
	/* An unlinked file (setattr through an open fd) has no path and
	 * nothing left to replicate; anything else is worth a line, a file
	 * that still has links but no name we know included. */
	if (rc == -ENOENT) {
		struct stat st;
		int fd = inode_fd_get(fs->itab, dir);

		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink > 0)
			rc = -ESTALE;
		if (fd >= 0)
			inode_fd_put(fs->itab, dir, fd);
	}
	/* A file with links left whose name we lost track of: the change
	 * cannot be recorded by path, so the whole store is rescanned, which
	 * is sure to find it (as the journal does for a dirty file it cannot
	 * name). The rescan is recorded before the change is made, and the
	 * sender reads the store after it. */
	if (rc == -ESTALE && journal_needs_scan(fs->journal, "", 0) >= 0) {
		log_warn("cannot name a hard-linked file that changed; rescanning "
			 "the store to send it", "op=%s", journal_op_name(type));
		return;
	}
	if (rc != -ENOENT)
		log_error("could not prepare the journal for a change; the "
			  "peer will need a resync of this path",
			  "op=%s name=%s err=\"%s\"", journal_op_name(type),
			  name ? name : "", strerror(-rc));
}

void record_seed(struct fs *fs, const struct record *r, struct inode *i)
{
	if (fs->journal && r->ok && r->op.path)
		record_cache(fs, i, r->op.path);
}

void record_seed_path2(struct fs *fs, const struct record *r, struct inode *i)
{
	if (fs->journal && r->ok && r->op.path2)
		record_cache(fs, i, r->op.path2);
}

void record_seen(struct fs *fs, struct inode *dir, const char *name, struct inode *i)
{
	char *buf;

	if (!fs->journal)
		return;
	buf = malloc(RECORD_PATH_MAX);
	if (!buf)
		return;
	journal_ns_lock(fs->journal);
	if (record_path(fs, dir, name, buf, RECORD_PATH_MAX) == 0)
		record_cache(fs, i, buf);
	record_alias_note(fs, dir, name, i->dev, i->ino);
	journal_ns_unlock(fs->journal);
	free(buf);
}

/* Result slot K of R's op: the mtime of NAME in DIR (DIR itself when
 * NAME is NULL), not following a symlink. Nothing when it cannot be read
 * (an unlinked name): the peer then keeps what it has. */
static void record_res(struct fs *fs, struct record *r, int k, struct inode *dir,
		       const char *name, struct stat *out)
{
	struct stat st;
	int fd, rc;

	if (!dir || (fd = inode_fd_get(fs->itab, dir)) < 0)
		return;
	rc = fstatat(fd, name ? name : "", &st, AT_SYMLINK_NOFOLLOW | (name ? 0 : AT_EMPTY_PATH));
	inode_fd_put(fs->itab, dir, fd);
	if (rc < 0)
		return;
	r->op.res_mask |= JRES_BIT(k);
	r->op.res_mtime[k] = st.st_mtim;
	if (out)
		*out = st;
}

/*
 * What the op left in the store, read under the namespace lock right
 * after the change (no other op in between): the mtimes the peer must
 * end up with. Entries that an op creates or moves (new node, link,
 * rename target, both sides of an exchange, a whiteout) and every
 * directory whose entries changed. A setattr carries its own values; an
 * xattr change moves no mtime.
 */
static void record_results(struct fs *fs, struct record *r)
{
	struct journal_op *op = &r->op;
	struct stat st;

	switch (op->type) {
	case JOP_CREATE:
	case JOP_MKDIR:
	case JOP_MKNOD:
	case JOP_SYMLINK:
		if (r->made) {
			op->res_mask |= JRES_BIT(JRES_PATH);
			op->res_mtime[JRES_PATH] = r->made->st_mtim;
		} else {
			record_res(fs, r, JRES_PATH, r->dir, r->name, NULL);
		}
		/* fallthrough */
	case JOP_UNLINK:
	case JOP_RMDIR:
		record_res(fs, r, JRES_DIR, r->dir, NULL, NULL);
		break;
	case JOP_LINK:
		/* dir is the inode itself: its own directory does not change */
		record_res(fs, r, JRES_PATH2, r->dir2, r->name2, NULL);
		record_res(fs, r, JRES_DIR2, r->dir2, NULL, NULL);
		break;
	case JOP_RENAME:
		if (op->flags & (RENAME_EXCHANGE | RENAME_WHITEOUT)) {
			memset(&st, 0, sizeof(st));
			record_res(fs, r, JRES_PATH, r->dir, r->name, &st);
			if (op->flags & RENAME_WHITEOUT) {
				op->uid = st.st_uid;
				op->gid = st.st_gid;
			}
		}
		record_res(fs, r, JRES_PATH2, r->dir2, r->name2, NULL);
		record_res(fs, r, JRES_DIR, r->dir, NULL, NULL);
		record_res(fs, r, JRES_DIR2, r->dir2, NULL, NULL);
		break;
	default:
		break;
	}
}

void record_end(struct fs *fs, struct record *r, bool applied)
{
	int64_t seq;

	if (!fs->journal)
		return;
	if (applied && r->ok) {
		record_results(fs, r);
		seq = journal_append(fs->journal, &r->op);
		if (seq < 0)
			log_error("could not journal a change; the peer will "
				  "need a resync of this path",
				  "op=%s path=%s err=\"%s\"",
				  journal_op_name(r->op.type), r->op.path,
				  strerror((int)-seq));
		/* In overflow a change to a file is only its path marked for
		 * rescan; a name of it removed since takes that change with it
		 * (the sender finds nothing there), and the file's other names,
		 * which we cannot list, keep the old mode and owner on the peer.
		 * Only a walk of the store finds them. */
		if (r->drops_link && journal_overflowed(fs->journal) &&
		    journal_needs_scan(fs->journal, "", 0) >= 0)
			log_notice("a hard-linked file lost a name while the journal "
				   "records paths only; rescanning the store", "path=%s",
				   r->op.path);
	}
	if (applied && (r->op.type == JOP_RENAME || r->op.type == JOP_UNLINK ||
			r->op.type == JOP_RMDIR))
		fs->ns_gen++;	/* cached record paths may be stale now */
	if (applied && r->ok && r->op.type == JOP_RENAME && S_ISDIR(r->op.mode) &&
	    r->op.path2)
		record_alias_moved(r->op.path, r->op.path2, r->op.flags & RENAME_EXCHANGE);
	journal_ns_unlock(fs->journal);
	free(r->paths);
	r->paths = NULL;
}

void record_set_scan(struct fs *fs, bool on)
{
	if (fs->journal)
		journal_set_scan(fs->journal, on ? fs_scan_writers : NULL,
				 on ? fs : NULL);
}

void record_pin(struct fs *fs, struct inode *i, int fd)
{
	int rc;

	if (!fs->journal)
		return;
	rc = journal_pin(fs->journal, i->ino, fd);
	if (rc < 0)
		log_error("could not mark a file written behind our back",
			  "ino=%llu err=\"%s\"", (unsigned long long)i->ino,
			  strerror(-rc));
}

void record_unpin(struct fs *fs, struct inode *i)
{
	if (fs->journal)
		journal_unpin(fs->journal, i->ino);
}

void record_write_begin(struct fs *fs, struct inode *i, int fd)
{
	int rc;

	if (!fs->journal)
		return;
	/* len 0: only the file's durability mark, no range. */
	rc = journal_mark_dirty(fs->journal, i->ino, fd, 0, 0);
	if (rc < 0)
		log_error("could not mark a file before writing it",
			  "ino=%llu err=\"%s\"", (unsigned long long)i->ino,
			  strerror(-rc));
}

void record_write(struct fs *fs, struct inode *i, int fd, uint64_t off,
		  uint64_t len)
{
	int rc;

	if (!fs->journal || len == 0)
		return;
	rc = journal_mark_dirty(fs->journal, i->ino, fd, off, len);
	if (rc < 0)
		log_error("could not mark written data dirty",
			  "ino=%llu err=\"%s\"", (unsigned long long)i->ino,
			  strerror(-rc));
}

void record_truncate(struct fs *fs, struct inode *i, uint64_t size)
{
	if (fs->journal)
		journal_truncate(fs->journal, i->ino, size);
}

void record_forget(struct fs *fs, struct inode *i)
{
	struct stat st;
	int fd;

	if (!fs->journal || i->type != S_IFREG)
		return;
	/* -ESTALE: its file handle says the store inode is gone. */
	fd = inode_fd_get(fs->itab, i);
	if (fd == -ESTALE || (fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink == 0))
		journal_forget(fs->journal, i->ino);
	inode_fd_put(fs->itab, i, fd);
}

int record_commit(struct fs *fs)
{
	if (!fs->journal)
		return 0;
	return journal_commit(fs->journal);
}
