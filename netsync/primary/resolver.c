/*
 * resolver — receives a secondary's versions and applies them through the
 * mountpoint (resolver.h). Order per path: the primary's own version is
 * copied aside first (never discarded), then the secondary's is written
 * to a temporary name beside the destination and renamed over it, with
 * its mode, owner and mtime; a path the secondary lacks is removed. No
 * symlink of the mount is followed on the way to a path ("Where a version
 * is written" below). The loop thread runs everything but resolver_thread.
 */
#include "netsync/primary/resolver.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "netsync/roles/conflicts.h"
#include "netsync/wire/path.h"

/* a path has at most PATH_MAX / 2 components */
#define RESOLVER_TREE_DEPTH (PATH_MAX / 2)

static void resolver_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct resolver *r = arg;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0)
		return;
	if (r->th_running) {
		pthread_join(r->th, NULL);
		r->th_running = false;
	}
	if (r->rc < 0)
		log_error("cannot apply the secondary's versions", "err=\"%s\"", r->err);
	if (r->done)
		r->done(r, r->rc, r->arg);	/* the plan is still there */
	resolver_reset(r);
}

int resolver_init(struct resolver *r, struct event_base *base, const char *state,
		  const char *store, const char *mountpoint, resolver_done_fn done, void *arg)
{
	memset(r, 0, sizeof(*r));
	r->base = base;
	r->done = done;
	r->arg = arg;
	r->efd = -1;
	r->state = strdup(state);
	r->store = strdup(store);
	r->mountpoint = mountpoint ? strdup(mountpoint) : NULL;
	if (!r->state || !r->store || (mountpoint && !r->mountpoint))
		return -ENOMEM;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0)
		return -errno;
	r->ev = event_new(base, r->efd, EV_READ | EV_PERSIST, resolver_ev_cb, r);
	if (!r->ev || event_add(r->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* Removes NAME of DIRFD, with everything in it if it is a folder; no
 * symlink is followed. 0 (gone already too) or -errno. */
static int resolver_rm_at(int dirfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	/* a listing that changes while it is read may skip a name: read it
	 * again while the folder is not empty */
	for (int pass = 0; rc == 0; pass++) {
		rewinddir(d);
		while (rc == 0 && (de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				rc = depth > 0 ? resolver_rm_at(fd, de->d_name, depth - 1) : -ELOOP;
		if (rc < 0 || unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			break;
		if (errno != ENOTEMPTY || pass == 3)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

static void resolver_rm_tree(const char *p)
{
	resolver_rm_at(AT_FDCWD, p, RESOLVER_TREE_DEPTH);
}

void resolver_reset(struct resolver *r)
{
	char p[PATH_MAX];

	if (r->th_running)
		return;	/* the worker's; resolver_ev_cb resets after it */
	for (size_t i = 0; i < r->n; i++) {
		if (r->in[i].fd >= 0)
			close(r->in[i].fd);
		free(r->in[i].path);
		free(r->in[i].target);
		free(r->in[i].xattrs);
	}
	free(r->in);
	r->in = NULL;
	r->n = r->cap = 0;
	resolution_free(&r->plan);
	r->active = r->receiving = r->restore = false;
	if (r->state) {
		snprintf(p, sizeof(p), "%s/incoming", r->state);
		resolver_rm_tree(p);
	}
}

void resolver_fini(struct resolver *r)
{
	if (r->th_running) {
		pthread_join(r->th, NULL);
		r->th_running = false;
	}
	resolver_reset(r);
	if (r->ev)
		event_free(r->ev);
	if (r->efd >= 0)
		close(r->efd);
	free(r->state);
	free(r->store);
	free(r->mountpoint);
	memset(r, 0, sizeof(*r));
	r->efd = -1;
}

int resolver_start(struct resolver *r, struct resolution *plan, bool restore,
		   const char *stamp)
{
	char p[PATH_MAX];

	if (r->active)
		return -EBUSY;
	if (!r->mountpoint)
		return -ENOTSUP;
	resolver_reset(r);
	snprintf(p, sizeof(p), "%s/incoming", r->state);
	if (mkdir(p, 0700) < 0)
		return -errno;
	if (plan) {
		r->plan = *plan;
		memset(plan, 0, sizeof(*plan));
	}
	r->restore = restore;
	snprintf(r->stamp, sizeof(r->stamp), "%s", stamp);
	r->active = r->receiving = true;
	return 0;
}

int resolver_on_entry(struct resolver *r, const struct proto_entry *e)
{
	struct resolver_item *it;
	char p[PATH_MAX];

	if (!r->receiving || path_check(e->path, false) < 0)
		return -EPROTO;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct resolver_item *n = realloc(r->in, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->in = n;
		r->cap = cap;
	}
	it = &r->in[r->n];
	memset(it, 0, sizeof(*it));
	it->fd = -1;
	it->path = strdup(e->path);
	it->target = e->target ? strdup(e->target) : NULL;
	if (!it->path || (e->target && !it->target))
		return -ENOMEM;
	it->mode = e->mode;
	it->uid = e->uid;
	it->gid = e->gid;
	it->mtime_ns = e->mtime_ns;
	r->n++;
	if (S_ISREG(e->mode)) {
		snprintf(p, sizeof(p), "%s/incoming/%zu", r->state, r->n - 1);
		it->fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (it->fd < 0)
			return -errno;
	}
	return 0;
}

int resolver_on_data(struct resolver *r, const struct proto_data *m)
{
	struct resolver_item *it = r->n ? &r->in[r->n - 1] : NULL;
	int rc;

	if (!r->receiving || !it || it->fd < 0 || strcmp(it->path, m->path) != 0)
		return -EPROTO;
	rc = proto_data_verify(m);
	if (rc < 0)
		return rc;
	if (pwrite(it->fd, m->bytes, m->len, (off_t)m->offset) != (ssize_t)m->len)
		return -errno ? -errno : -EIO;
	return 0;
}

int resolver_on_xattr(struct resolver *r, const struct journal_op *op)
{
	struct resolver_item *it = r->n ? &r->in[r->n - 1] : NULL;
	size_t n = op->xname ? strlen(op->xname) + 1 : 0;
	uint32_t len = (uint32_t)op->xsize;
	char *b;

	if (!r->receiving || !it || !n || op->type != JOP_SETXATTR ||
	    strcmp(it->path, op->path) != 0 || op->xsize > 65536)
		return -EPROTO;
	b = realloc(it->xattrs, it->xattrs_len + n + 4 + len);
	if (!b)
		return -ENOMEM;
	memcpy(b + it->xattrs_len, op->xname, n);
	memcpy(b + it->xattrs_len + n, &len, 4);
	if (len)
		memcpy(b + it->xattrs_len + n + 4, op->xvalue, len);
	it->xattrs = b;
	it->xattrs_len += n + 4 + len;
	return 0;
}

/* The version's xattrs onto FD (the file or folder written). */
static int resolver_set_xattrs(const struct resolver_item *it, int fd)
{
	for (size_t off = 0; off < it->xattrs_len;) {
		const char *name = it->xattrs + off;
		size_t n = strlen(name) + 1;
		uint32_t len;

		memcpy(&len, it->xattrs + off + n, 4);
		if (fsetxattr(fd, name, it->xattrs + off + n + 4, len, 0) < 0)
			return -errno;
		off += n + 4 + len;
	}
	return 0;
}

/*
 * Where a version is written. The plan is in tree order (a folder before
 * what is in it), so a path whose type the winner changes (a folder for a
 * symlink or a file, or the reverse) is written before anything below it:
 * below a winner's folder, its entries land in that folder; below a
 * winner's symlink or file, the entries' versions are "gone" (as both
 * nodes list them) and there is nothing to remove. Nothing is ever looked
 * up through a symlink of the mount: it would name another place (or
 * loop), and writing or removing there would change a path the plan does
 * not list. A non-folder on the way to a version the winner has below a
 * folder is this node's version of that folder's path: it is kept aside
 * (conflicts/) and replaced by a folder, as the winner's tree has it.
 */

/* Opens DEST's parent folder in the mount (fd MFD), making the folders
 * that are missing and replacing a non-folder on the way (kept aside
 * first). *NAME points at DEST's last component. An fd or -errno. */
static int resolver_parent(struct resolver *r, int mfd, const char *dest, const char **name)
{
	char buf[PATH_MAX];
	char *c = buf, *slash;
	int fd, rc;

	if (snprintf(buf, sizeof(buf), "%s", dest) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	fd = fcntl(mfd, F_DUPFD_CLOEXEC, 0);
	while (fd >= 0 && (slash = strchr(c, '/'))) {
		struct stat st;
		int next;

		*slash = '\0';
		if (fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
			rc = conflicts_save(r->state, r->folder, r->sfd, buf);
			if (rc >= 0)
				rc = unlinkat(fd, c, 0) < 0 ? -errno : 0;
			if (rc < 0) {
				close(fd);
				return rc;
			}
			log_notice("a folder of the winner's replaces this node's non-folder "
				   "(kept aside)", "path=/%s conflicts=%s", buf, r->folder);
		}
		if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			close(fd);
			return rc;
		}
		next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = -errno;
		close(fd);
		if (next < 0)
			return rc;
		fd = next;
		*slash = '/';
		c = slash + 1;
	}
	if (fd < 0)
		return -errno;
	*name = dest + (c - buf);
	return fd;
}

/* Removes DEST of the mount (fd MFD), with everything in it. A path
 * below a non-folder here (or below nothing) is gone already. */
static int resolver_remove(int mfd, const char *dest)
{
	struct path_ref ref;
	int rc = path_resolve(mfd, dest, false, &ref);

	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP)
		return 0;
	if (rc < 0)
		return rc;
	rc = resolver_rm_at(ref.dirfd, ref.name, RESOLVER_TREE_DEPTH);
	path_put(&ref);
	return rc;
}

/* A folder's version at NAME of PFD (this node's non-folder there is kept
 * aside already: p_saves). */
static int resolver_put_dir(const struct resolver_item *it, int pfd, const char *name,
			    const struct timespec ts[2])
{
	struct stat st;
	int fd, rc = 0;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    unlinkat(pfd, name, 0) < 0)
		return -errno;
	if (mkdirat(pfd, name, it->mode & 07777) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, it->mode & 07777) < 0 ||
	    (fchown(fd, it->uid, it->gid) < 0 && errno != EPERM))
		rc = -errno;
	if (rc == 0)
		rc = resolver_set_xattrs(it, fd);
	if (rc == 0 && futimens(fd, ts) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* A regular file's version (STATE/incoming) at TMP of PFD. */
static int resolver_put_file(const struct resolver_item *it, int pfd, const char *tmp)
{
	off_t off = 0;
	struct stat st;
	int out, rc;

	out = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	rc = fstat(it->fd, &st) < 0 ? -errno : 0;
	while (rc == 0 && off < st.st_size) {
		char buf[1 << 16];
		ssize_t k = pread(it->fd, buf, sizeof(buf), off);

		if (k <= 0 || write(out, buf, (size_t)k) != k)
			rc = k == 0 ? -EIO : -errno;
		off += k > 0 ? k : 0;
	}
	if (rc == 0 && fchmod(out, it->mode & 07777) < 0)
		rc = -errno;
	if (rc == 0 && fchown(out, it->uid, it->gid) < 0 && errno != EPERM)
		rc = -errno;
	if (rc == 0)
		rc = resolver_set_xattrs(it, out);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* Writes item IT at DEST of the mount (fd MFD). 0 or -errno. */
static int resolver_put(struct resolver *r, int mfd, const struct resolver_item *it,
			const char *dest, int n)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT },
				  { it->mtime_ns / 1000000000, it->mtime_ns % 1000000000 } };
	const char *name;
	char tmp[64];
	int pfd, rc;

	if (!it->mode)
		return resolver_remove(mfd, dest);
	if (!S_ISDIR(it->mode) && !S_ISLNK(it->mode) && !S_ISREG(it->mode))
		return 0;	/* devices, fifos: not sent as versions */
	pfd = resolver_parent(r, mfd, dest, &name);
	if (pfd < 0)
		return pfd;
	if (S_ISDIR(it->mode)) {
		rc = resolver_put_dir(it, pfd, name, ts);
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".twinfs-resolve.%d.%d", (int)getpid(), n);
	unlinkat(pfd, tmp, 0);
	if (S_ISLNK(it->mode))
		rc = symlinkat(it->target ? it->target : "", pfd, tmp) < 0 ? -errno : 0;
	else
		rc = resolver_put_file(it, pfd, tmp);
	if (rc < 0)
		goto out_tmp;
	utimensat(pfd, tmp, ts, AT_SYMLINK_NOFOLLOW);
	if (S_ISLNK(it->mode))
		fchownat(pfd, tmp, it->uid, it->gid, AT_SYMLINK_NOFOLLOW);
	rc = resolver_rm_at(pfd, name, RESOLVER_TREE_DEPTH);
	if (rc == 0 && renameat(pfd, tmp, pfd, name) < 0)
		rc = -errno;
out_tmp:
	if (rc < 0)
		unlinkat(pfd, tmp, 0);
out:
	close(pfd);
	return rc;
}

static const struct resolver_item *resolver_find(const struct resolver *r, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->in[i].path, path) == 0)
			return &r->in[i];
	return NULL;
}

/* P is a path the plan lists below FOLDER, or below one. */
static bool resolver_planned(const struct resolver *r, const char *p, const char *folder)
{
	size_t f = strlen(folder);

	for (size_t i = 0; i < r->plan.n; i++) {
		const char *q = r->plan.it[i].e->path;
		size_t n = strlen(q);

		if (strncmp(q, folder, f) == 0 && q[f] == '/' && strncmp(p, q, n) == 0 &&
		    (p[n] == '\0' || p[n] == '/'))
			return true;
	}
	return false;
}

/* An entry below a folder whose version went beside as a conflict copy
 * (with everything in it): its version is there. */
static bool resolver_beside_above(const struct resolver *r, const char *p)
{
	for (size_t i = 0; i < r->plan.n; i++) {
		const struct resolution_item *it = &r->plan.it[i];
		size_t n = strlen(it->e->path);

		if (it->dest && strcmp(it->dest, it->e->path) != 0 &&
		    strncmp(p, it->e->path, n) == 0 && p[n] == '/')
			return true;
	}
	return false;
}

/* A folder's version where this node has no folder comes with what it
 * holds (versions_send_path): every item received below PATH goes below
 * DEST, but, in place, the paths the plan lists and what is below them
 * (their own items). 0 or -errno. */
static int resolver_put_below(struct resolver *r, int mfd, const char *path,
			      const char *dest)
{
	size_t len = strlen(path);
	char to[PATH_MAX];
	int rc = 0;

	for (size_t k = 0; k < r->n && rc >= 0; k++) {
		const char *p = r->in[k].path;

		/* in place, a listed entry below is its own item; beside (a
		 * conflict copy), the folder goes whole */
		if (strncmp(p, path, len) != 0 || p[len] != '/' ||
		    (strcmp(dest, path) == 0 && resolver_planned(r, p, path)))
			continue;
		if (snprintf(to, sizeof(to), "%s%s", dest, p + len) >= (int)sizeof(to))
			return -ENAMETOOLONG;
		rc = resolver_put(r, mfd, &r->in[k], to, (int)(r->plan.n + k));
		if (rc < 0)
			log_error("cannot write a file of a folder's version", "path=/%s err=%s",
				  to, strerror(-rc));
	}
	return rc;
}

static int resolver_run(struct resolver *r, int sfd, int mfd)
{
	int rc = 0;

	r->sfd = sfd;
	if (r->restore) {
		snprintf(r->folder, sizeof(r->folder), "%s-restore", r->stamp);
		for (size_t i = 0; i < r->n && rc >= 0; i++) {
			rc = conflicts_save(r->state, r->folder, sfd, r->in[i].path);
			if (rc >= 0)
				rc = resolver_put(r, mfd, &r->in[i], r->in[i].path, (int)i);
			if (rc < 0)
				snprintf(r->err, sizeof(r->err), "/%s: %s", r->in[i].path,
					 strerror(-rc));
		}
		if (rc >= 0)
			conflicts_finish(r->state, r->folder);
		return rc < 0 ? rc : 0;
	}
	snprintf(r->folder, sizeof(r->folder), "%s", r->plan.folder);
	for (size_t i = 0; i < r->plan.n && rc >= 0; i++) {
		const struct resolution_item *it = &r->plan.it[i];

		/* a folder that the secondary's version replaces, or one that
		 * moved (whole), goes aside with its files */
		if (it->p_saves)
			rc = (S_ISDIR(it->e->peer.mode) && !it->e->whole ? conflicts_save :
			      conflicts_save_tree)(r->state, r->plan.folder, sfd, it->e->path);
		if (rc < 0)
			snprintf(r->err, sizeof(r->err), "keeping /%s aside: %s", it->e->path,
				 strerror(-rc));
	}
	for (size_t i = 0; i < r->plan.n && rc >= 0; i++) {
		const struct resolution_item *it = &r->plan.it[i];
		const struct resolver_item *v;

		/* below a folder whose version went beside whole, an entry's
		 * version is in that copy already (and its own place beside
		 * may be below what is no folder here) */
		if (!it->dest || resolver_beside_above(r, it->e->path))
			continue;
		v = resolver_find(r, it->e->path);
		/* a folder that moved replaces this node's whole (kept aside
		 * above): what is in it here belongs to another folder */
		if (v && it->e->whole && S_ISDIR(v->mode) && strcmp(it->dest, it->e->path) == 0)
			rc = resolver_remove(mfd, it->dest);
		if (rc >= 0)
			rc = v ? resolver_put(r, mfd, v, it->dest, (int)i) : -ENODATA;
		if (rc >= 0 && S_ISDIR(v->mode))
			rc = resolver_put_below(r, mfd, it->e->path, it->dest);
		if (rc < 0)
			snprintf(r->err, sizeof(r->err), "writing /%s: %s", it->dest,
				 strerror(-rc));
	}
	if (rc >= 0)
		conflicts_finish(r->state, r->plan.folder);
	return rc < 0 ? rc : 0;
}

static void *resolver_thread(void *arg)
{
	struct resolver *r = arg;
	uint64_t one = 1;
	int sfd = open(r->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int mfd = open(r->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	pthread_setname_np(pthread_self(), "tw-resolve");
	if (sfd < 0 || mfd < 0) {
		r->rc = -errno;
		snprintf(r->err, sizeof(r->err), "cannot open the store or the mountpoint: %s",
			 strerror(errno));
	} else {
		r->rc = resolver_run(r, sfd, mfd);
	}
	if (sfd >= 0)
		close(sfd);
	if (mfd >= 0)
		close(mfd);
	if (write(r->efd, &one, sizeof(one)) < 0)
		log_error("cannot wake the replication thread", "err=%s", strerror(errno));
	return NULL;
}

int resolver_apply(struct resolver *r)
{
	int rc;

	if (!r->receiving)
		return -EPROTO;
	r->receiving = false;
	r->rc = 0;
	r->err[0] = '\0';
	rc = -pthread_create(&r->th, NULL, resolver_thread, r);
	if (rc == 0)
		r->th_running = true;
	return rc;
}
