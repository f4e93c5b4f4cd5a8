/*
 * conflicts — the conflict-copy folders of a state directory
 * (conflicts.h). Copies are made with copy_file_range (a reflink or an
 * in-kernel copy where the filesystem can), times and mode preserved so
 * that a restored file is the version that was saved. Blocking IO on the
 * caller's thread; the store is only read, except by conflicts_restore,
 * which writes to the mountpoint it is given.
 */
#include "netsync/roles/conflicts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xattrname.h"
#include "netsync/wire/path.h"

#define CONFLICTS_DIR "conflicts"

/* Opens STATE/conflicts/ID (creating what is missing if CREATE). */
static int conflicts_open(const char *state, const char *id, bool create)
{
	char p[PATH_MAX];
	int fd;

	if (snprintf(p, sizeof(p), "%s/" CONFLICTS_DIR, state) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	if (create && mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (id && snprintf(p, sizeof(p), "%s/" CONFLICTS_DIR "/%s", state, id) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	if (id && create && mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int conflicts_begin(const char *state, const char *why, char *id, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char t[32];
	int fd;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y%m%dT%H%M%SZ", &tm);
	if (snprintf(id, len, "%s-%s", t, why) >= (int)len)
		return -ENAMETOOLONG;
	for (int i = 2; i < 100; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/" CONFLICTS_DIR "/%s", state, id);
		if (access(p, F_OK) < 0)
			break;
		snprintf(id, len, "%s-%s-%d", t, why, i);
	}
	fd = conflicts_open(state, id, true);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* The replicated xattrs (user.*, trusted.*) of IN onto OUT: a version is
 * kept whole. Best effort: a copy without them still keeps the data. */
static void conflicts_copy_xattrs(int in, int out)
{
	char names[4096], val[65536];
	ssize_t n = flistxattr(in, names, sizeof(names));

	for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
		const char *x = names + off;
		ssize_t v;

		if (!xattrname_replicated(x))
			continue;
		v = fgetxattr(in, x, val, sizeof(val));
		if (v >= 0)
			(void)fsetxattr(out, x, val, (size_t)v, 0);
	}
}

int conflicts_copy_entry(int src_dirfd, const char *src_name, int dst_dirfd,
			 const char *dst_name)
{
	struct timespec times[2];
	struct stat st;
	int in = -1, out = -1, rc = 0;

	if (fstatat(src_dirfd, src_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	unlinkat(dst_dirfd, dst_name, 0);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(src_dirfd, src_name, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, dst_dirfd, dst_name) < 0)
			return -errno;
		goto times;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	in = openat(src_dirfd, src_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = openat(dst_dirfd, dst_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     st.st_mode & 07777);
	if (out < 0) {
		rc = -errno;
		goto out_in;
	}
	for (off_t left = st.st_size; left > 0;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);

		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS)) {
			char buf[1 << 16];

			n = read(in, buf, sizeof(buf));
			if (n > 0 && write(out, buf, (size_t)n) != n)
				n = -1;
		}
		if (n < 0) {
			rc = -errno;
			goto out_out;
		}
		if (n == 0)
			break;	/* the file shrank meanwhile */
		left -= n;
	}
	conflicts_copy_xattrs(in, out);
	if (fchmod(out, st.st_mode & 07777) < 0 || fsync(out) < 0)
		rc = -errno;
out_out:
	close(out);
out_in:
	close(in);
	if (rc < 0)
		return rc;
times:
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	utimensat(dst_dirfd, dst_name, times, AT_SYMLINK_NOFOLLOW);
	return 0;
}

/* Opens (creating) the parent folder of PATH under DIRFD; *name points at
 * PATH's last component. Returns an fd or -errno. */
static int conflicts_parent(int dirfd, const char *path, const char **name, bool create)
{
	char buf[PATH_MAX];
	char *slash;
	int fd;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	*name = slash ? path + (slash - buf) + 1 : path;
	if (!slash) {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	*slash = '\0';
	if (create) {
		for (char *p = buf; (p = strchr(p, '/')); p++) {
			*p = '\0';
			if (mkdirat(dirfd, buf, 0700) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
		if (mkdirat(dirfd, buf, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	fd = openat(dirfd, buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A folder's files, symlinks and subfolders (what a folder's version
 * holds), SRC into DST. 0 or -errno. */
static int conflicts_copy_tree(int src, int dst, int depth)
{
	int fd = fcntl(src, F_DUPFD_CLOEXEC, 0), rc = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		int s2, d2;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(src, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
				rc = conflicts_copy_entry(src, de->d_name, dst, de->d_name);
			continue;
		}
		if (depth > 256)
			continue;
		if (mkdirat(dst, de->d_name, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		s2 = openat(src, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		d2 = openat(dst, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s2 >= 0 && d2 >= 0)
			rc = conflicts_copy_tree(s2, d2, depth + 1);
		else
			rc = -errno;
		if (s2 >= 0)
			close(s2);
		if (d2 >= 0)
			close(d2);
	}
	closedir(d);
	return rc;
}

/* conflicts_save_at's copy of REF (PATH of the store, stat ST). */
static int conflicts_save_ref(const char *state, const char *id, const struct path_ref *ref,
			      const char *path, const struct stat *st, bool tree)
{
	const char *name;
	int dir, rc;

	dir = conflicts_open(state, id, true);
	if (dir < 0)
		return dir;
	if (S_ISDIR(st->st_mode) && !tree) {
		rc = conflicts_parent(dir, path, &name, true);
		if (rc >= 0) {
			if (mkdirat(rc, name, 0700) < 0 && errno != EEXIST)
				rc = -errno;
			else
				close(rc), rc = 1;
		}
		close(dir);
		return rc;
	}
	if (S_ISDIR(st->st_mode)) {
		int src = openat(ref->dirfd, ref->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				 O_CLOEXEC);
		int pd = conflicts_parent(dir, path, &name, true), dst = -1;

		close(dir);
		rc = src < 0 ? -errno : pd;
		if (rc >= 0 && mkdirat(pd, name, 0700) < 0 && errno != EEXIST)
			rc = -errno;
		if (rc >= 0 && (dst = openat(pd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC)) < 0)
			rc = -errno;
		if (rc >= 0)
			rc = conflicts_copy_tree(src, dst, 0);
		if (src >= 0)
			close(src);
		if (pd >= 0)
			close(pd);
		if (dst >= 0)
			close(dst);
		return rc < 0 ? rc : 1;
	}
	if (!S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode)) {
		close(dir);
		return 0;	/* devices, fifos, sockets: no content to lose */
	}
	rc = conflicts_parent(dir, path, &name, true);
	close(dir);
	if (rc < 0)
		return rc;
	dir = rc;
	rc = conflicts_copy_entry(ref->dirfd, ref->name, dir, name);
	close(dir);
	return rc < 0 ? rc : 1;
}

static int conflicts_save_at(const char *state, const char *id, int store_fd,
			     const char *path, bool tree)
{
	struct path_ref ref;
	struct stat st;
	int rc;

	/* nothing on the way is followed: a path below a symlink of the
	 * store is no path of it (its version is "gone"), and the copy must
	 * be of the entry the plan names, not of what a symlink points at */
	if (!*path)
		return 0;	/* the root: its entries are listed on their own */
	rc = path_resolve(store_fd, path, false, &ref);
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP)
		return 0;
	if (rc < 0)
		return rc;
	if (fstatat(ref.dirfd, ref.name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		path_put(&ref);
		return rc;
	}
	rc = conflicts_save_ref(state, id, &ref, path, &st, tree);
	path_put(&ref);
	return rc;
}

int conflicts_save(const char *state, const char *id, int store_fd, const char *path)
{
	return conflicts_save_at(state, id, store_fd, path, false);
}

int conflicts_save_tree(const char *state, const char *id, int store_fd, const char *path)
{
	return conflicts_save_at(state, id, store_fd, path, true);
}

/* Same type and content (symlink target, file bytes). 1, 0 or -errno. */
static int conflicts_same(int adir, const char *aname, int bdir, const char *bname)
{
	struct stat a, b;
	int fa, fb, rc = 1;

	if (fstatat(adir, aname, &a, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (fstatat(bdir, bname, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	if ((a.st_mode & S_IFMT) != (b.st_mode & S_IFMT) || a.st_size != b.st_size)
		return 0;
	if (S_ISDIR(a.st_mode))
		return 1;
	if (S_ISLNK(a.st_mode)) {
		char ta[PATH_MAX], tb[PATH_MAX];
		ssize_t na = readlinkat(adir, aname, ta, sizeof(ta));
		ssize_t nb = readlinkat(bdir, bname, tb, sizeof(tb));

		return na == nb && na >= 0 && memcmp(ta, tb, (size_t)na) == 0;
	}
	fa = openat(adir, aname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	fb = openat(bdir, bname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fa < 0 || fb < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		static __thread char ba[1 << 16], bb[1 << 16];
		ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));

		if (na < 0 || nb < 0) {
			rc = -errno;
			break;
		}
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0) {
			rc = 0;
			break;
		}
		if (na == 0)
			break;
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return rc;
}

int conflicts_drop_same(const char *state, const char *id, int store_fd, const char *path)
{
	struct path_ref ref = { .dirfd = -1 };
	const char *name;
	int dir, rc;
	struct stat st;

	dir = conflicts_open(state, id, false);
	if (dir < 0)
		return dir == -ENOENT ? 0 : dir;
	rc = conflicts_parent(dir, path, &name, false);
	close(dir);
	if (rc < 0)
		return rc == -ENOENT || rc == -ENOTDIR ? 0 : rc;
	dir = rc;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode)) {
		close(dir);
		return 0;	/* no copy, or a folder (finish removes it if empty) */
	}
	/* below a symlink of the store, the path is not there: the copy stays */
	rc = path_resolve(store_fd, path, false, &ref) < 0 ? 0 :
	     conflicts_same(dir, name, ref.dirfd, ref.name);
	path_put(&ref);
	if (rc == 1) {
		if (unlinkat(dir, name, 0) < 0)
			rc = -errno;
		else
			rc = 0;
	} else if (rc == 0) {
		rc = 1;
	}
	close(dir);
	return rc;
}

/* Removes empty folders below DIRFD; returns files left, or -errno. */
static long conflicts_sweep(int dirfd)
{
	long files = 0;
	struct dirent *de;
	DIR *d;
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		long n;
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type != DT_DIR) {
			files++;
			continue;
		}
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		n = conflicts_sweep(sub);
		close(sub);
		if (n == 0)
			unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
		else if (n > 0)
			files += n;
	}
	closedir(d);
	return files;
}

int conflicts_finish(const char *state, const char *id)
{
	char p[PATH_MAX];
	long n;
	int dir = conflicts_open(state, id, false);

	if (dir < 0)
		return dir == -ENOENT ? 0 : dir;
	n = conflicts_sweep(dir);
	close(dir);
	if (n == 0) {
		snprintf(p, sizeof(p), "%s/" CONFLICTS_DIR "/%s", state, id);
		rmdir(p);
	}
	return n < 0 ? (int)n : (int)(n > INT32_MAX ? INT32_MAX : n);
}

static int conflicts_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) < 0 && errno != ENOENT ? -1 : 0;
}

int conflicts_remove(const char *state, const char *id)
{
	char p[PATH_MAX];

	if (!id[0] || strchr(id, '/') || id[0] == '.')
		return -EINVAL;
	snprintf(p, sizeof(p), "%s/" CONFLICTS_DIR "/%s", state, id);
	return nftw(p, conflicts_rm_cb, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

/* Calls fn for every non-directory below DIRFD (REL: its path). */
static int conflicts_walk(int dirfd, const char *id, const char *rel, conflicts_fn fn,
			  void *arg, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (depth > 256)
		return -ELOOP;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub >= 0) {
				conflicts_walk(sub, id, path, fn, arg, depth + 1);
				close(sub);
			}
			continue;
		}
		fn(id, path, &st, arg);
	}
	closedir(d);
	return 0;
}

int conflicts_list(const char *state, conflicts_fn fn, void *arg)
{
	struct dirent *de;
	DIR *d;
	int top = conflicts_open(state, NULL, false);

	if (top < 0)
		return top == -ENOENT ? 0 : top;
	d = fdopendir(top);
	if (!d) {
		close(top);
		return -errno;
	}
	while ((de = readdir(d))) {
		int sub;

		if (de->d_name[0] == '.')
			continue;
		sub = openat(top, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		conflicts_walk(sub, de->d_name, "", fn, arg, 0);
		close(sub);
	}
	closedir(d);
	return 0;
}

struct restore_ctx {
	const char *state;
	int src, dest;
	char saved[CONFLICTS_ID_MAX];
	int n, err;
};

static void conflicts_restore_one(const char *id, const char *path, const struct stat *st,
				  void *arg)
{
	struct restore_ctx *c = arg;
	const char *name, *sname;
	int ddir, sdir, rc;

	(void)id;
	(void)st;
	if (c->err)
		return;
	/* what the store holds there now is kept, never discarded */
	rc = conflicts_save(c->state, c->saved, c->dest, path);
	if (rc < 0)
		goto fail;
	ddir = conflicts_parent(c->dest, path, &name, true);
	if (ddir < 0) {
		rc = ddir;
		goto fail;
	}
	sdir = conflicts_parent(c->src, path, &sname, false);
	if (sdir < 0) {
		close(ddir);
		rc = sdir;
		goto fail;
	}
	rc = conflicts_copy_entry(sdir, sname, ddir, name);
	close(sdir);
	close(ddir);
	if (rc < 0)
		goto fail;
	c->n++;
	return;
fail:
	log_error("cannot restore a conflict copy", "path=/%s err=\"%s\"", path, strerror(-rc));
	c->err = rc;
}

int conflicts_restore(const char *state, const char *id, const char *dest)
{
	struct restore_ctx c = { .state = state };
	int rc;

	c.src = conflicts_open(state, id, false);
	if (c.src < 0)
		return c.src;
	c.dest = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dest < 0) {
		rc = -errno;
		close(c.src);
		return rc;
	}
	rc = conflicts_begin(state, "restore", c.saved, sizeof(c.saved));
	if (rc == 0)
		rc = conflicts_walk(c.src, id, "", conflicts_restore_one, &c, 0);
	if (rc == 0 && c.err)
		rc = c.err;
	conflicts_finish(state, c.saved);
	close(c.src);
	close(c.dest);
	return rc < 0 ? rc : c.n;
}
