/*
 * scan — the mount-time store scan: stat walk, comparison with the
 * manifest, NEEDS_SCAN records for what differs. Main thread of the mount
 * process only (scan_mount before fs_run, scan_unmount after it); reads
 * directories and lstat()s entries, never file contents.
 *
 * What counts as changed. An entry differs when its inode, type, mode,
 * size, mtime or ctime differs from the manifest. ctime is what makes this
 * safe against restores and rsync -t: a tool can put an old mtime back,
 * but every change of content, owner, mode, xattrs or link count sets
 * ctime, and nothing but the kernel sets it. A directory that kept its
 * inode but changed (names added or removed, mode, owner) is scanned for
 * its names only (SCAN_NAMES: the peer removes what it lacks, nothing is
 * re-sent); its new children are changes of their own. Everything else
 * (a new, replaced or changed entry, a removed one) is scanned whole; a
 * removed path makes the sender prune its nearest existing ancestor. A
 * non-directory (of any type: symlinks, devices, FIFOs and sockets have
 * hard links too) with other names that are new gets the common ancestor
 * of its names scanned whole, so that the walk there re-creates the links.
 */
#include "netsync/delta/scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "journal/journal.h"

static int64_t scan_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static int scan_note(struct manifest *m, const char *path, const struct stat *st)
{
	struct manifest_entry e = {
		.path = (char *)path,
		.ino = st->st_ino,
		.size = S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) ?
			(uint64_t)st->st_size : 0,
		.mtime_ns = scan_ns(&st->st_mtim),
		.ctime_ns = scan_ns(&st->st_ctim),
		.mode = st->st_mode,
		.nlink = (uint32_t)st->st_nlink,
	};

	return manifest_add(m, &e);
}

struct scan_frame {
	DIR *d;
	size_t plen;
};

int scan_store(int store_fd, struct manifest *m)
{
	struct scan_frame st[SCAN_DEPTH_MAX];
	char path[PATH_MAX];
	struct stat rst, est;
	struct dirent *de;
	int depth = 0, fd, rc;

	memset(m, 0, sizeof(*m));
	if (fstat(store_fd, &rst) < 0)
		return -errno;
	m->root_dev = rst.st_dev;
	m->root_ino = rst.st_ino;
	rc = scan_note(m, "", &rst);
	if (rc < 0)
		goto out_fail;
	fd = openat(store_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(st[0].d = fdopendir(fd))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		goto out_fail;
	}
	st[0].plen = 0;
	depth = 1;
	path[0] = '\0';
	while (depth > 0) {
		struct scan_frame *f = &st[depth - 1];
		size_t plen = f->plen, nlen;

		errno = 0;
		de = readdir(f->d);
		if (!de) {
			if (errno) {
				rc = -errno;
				goto out_fail;
			}
			closedir(f->d);
			depth--;
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		nlen = strlen(de->d_name);
		if (plen + 1 + nlen >= sizeof(path)) {
			rc = -ENAMETOOLONG;
			goto out_fail;
		}
		if (plen > 0)
			path[plen++] = '/';
		memcpy(path + plen, de->d_name, nlen + 1);
		if (fstatat(dirfd(f->d), de->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* raced with a removal: not there */
			rc = -errno;
			goto out_fail;
		}
		rc = scan_note(m, path, &est);
		if (rc < 0)
			goto out_fail;
		if (!S_ISDIR(est.st_mode) || est.st_dev != rst.st_dev)
			continue;	/* a mount point inside is not replicated */
		if (depth >= SCAN_DEPTH_MAX) {
			rc = -ENAMETOOLONG;
			goto out_fail;
		}
		fd = openat(dirfd(f->d), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			rc = -errno;
			goto out_fail;
		}
		st[depth].d = fdopendir(fd);
		if (!st[depth].d) {
			rc = -errno;
			close(fd);
			goto out_fail;
		}
		st[depth].plen = plen + nlen;
		depth++;
	}
	manifest_sort(m);
	return 0;
out_fail:
	while (depth > 0)
		closedir(st[--depth].d);
	manifest_free(m);
	return rc;
}

/* ---- comparison ---- */

static bool scan_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 0)
		return *path != '\0';
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static int scan_push(struct scan_result *r, enum scan_what what, const char *path)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct scan_change *nc = realloc(r->c, cap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		r->c = nc;
		r->cap = cap;
	}
	r->c[r->n].what = what;
	r->c[r->n].path = strdup(path);
	if (!r->c[r->n].path)
		return -ENOMEM;
	r->n++;
	return 0;
}

void scan_result_free(struct scan_result *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->c[i].path);
	free(r->c);
	memset(r, 0, sizeof(*r));
}

static bool scan_same(const struct manifest_entry *a, const struct manifest_entry *b)
{
	return a->ino == b->ino && a->mode == b->mode && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The directory part shared by A and B ("" if none). */
static void scan_common_dir(char *a, const char *b)
{
	size_t i = 0, last = 0;

	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			last = i;
	if ((a[i] == '\0' && b[i] == '/') || (b[i] == '\0' && a[i] == '/'))
		last = i;	/* one is an ancestor of the other */
	a[last] = '\0';
}

/*
 * A new name of an inode with several names (any non-directory): its
 * links are re-created by a walk of the common ancestor of all its names
 * (the walk sends LINK for every name after the first it meets). Only for inodes some new name of
 * which was found; NOW is sorted by path, so this is a scan over it.
 */
static int scan_links(const struct manifest *old, const struct manifest *now,
		      struct scan_result *r)
{
	int rc = 0;

	for (size_t i = 0; i < now->n && rc == 0; i++) {
		const struct manifest_entry *e = &now->e[i], *o;
		char *anc;

		if (S_ISDIR(e->mode) || e->nlink < 2)
			continue;
		o = manifest_find(old, e->path);
		if (o && o->ino == e->ino)
			continue;	/* not a new name */
		anc = strdup(e->path);
		if (!anc)
			return -ENOMEM;
		for (size_t k = 0; k < now->n; k++)
			if (k != i && now->e[k].ino == e->ino && !S_ISDIR(now->e[k].mode))
				scan_common_dir(anc, now->e[k].path);
		rc = scan_push(r, SCAN_WHOLE, anc);
		free(anc);
	}
	return rc;
}

static int scan_change_cmp(const void *a, const void *b)
{
	const struct scan_change *x = a, *y = b;
	int c = manifest_path_cmp(x->path, y->path);

	return c ? c : (int)x->what - (int)y->what;	/* WHOLE before NAMES */
}

/* Sorts R and drops what a whole scan of an ancestor (or itself) covers,
 * and duplicates. */
static void scan_tidy(struct scan_result *r)
{
	const char *whole = NULL;
	size_t k = 0;

	if (r->n > 1)
		qsort(r->c, r->n, sizeof(r->c[0]), scan_change_cmp);
	for (size_t i = 0; i < r->n; i++) {
		struct scan_change *c = &r->c[i];
		bool drop = whole && (strcmp(c->path, whole) == 0 ||
				      scan_under(c->path, whole));

		if (!drop && k > 0 && strcmp(r->c[k - 1].path, c->path) == 0 &&
		    r->c[k - 1].what == c->what)
			drop = true;
		if (drop) {
			free(c->path);
			continue;
		}
		r->c[k++] = *c;
		if (c->what == SCAN_WHOLE)
			whole = r->c[k - 1].path;
	}
	r->n = k;
}

/* True if sorted R holds PATH (any kind). */
static bool scan_result_has(const struct scan_result *r, const char *path)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = manifest_path_cmp(r->c[mid].path, path);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A removed name whose directory is scanned anyway needs nothing more:
 * that scan's list of names (PRUNE) removes it on the peer. */
static void scan_drop_pruned(const struct manifest *now, struct scan_result *r)
{
	char parent[PATH_MAX];
	bool *drop = calloc(r->n ? r->n : 1, sizeof(*drop));
	size_t k = 0;

	if (!drop)
		return;	/* keeping them only costs a redundant prune */
	for (size_t i = 0; i < r->n; i++) {
		const char *p = r->c[i].path, *slash = strrchr(p, '/');

		if (!*p || manifest_find(now, p))
			continue;
		snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - p) : 0, p);
		drop[i] = manifest_find(now, parent) && scan_result_has(r, parent);
	}
	for (size_t i = 0; i < r->n; i++) {
		if (drop[i])
			free(r->c[i].path);
		else
			r->c[k++] = r->c[i];
	}
	r->n = k;
	free(drop);
}

int scan_diff(const struct manifest *old, const struct manifest *now,
	      struct scan_result *out)
{
	size_t i = 0, k = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	while (rc == 0 && (i < old->n || k < now->n)) {
		const struct manifest_entry *o = i < old->n ? &old->e[i] : NULL;
		const struct manifest_entry *e = k < now->n ? &now->e[k] : NULL;
		int c = !o ? 1 : !e ? -1 : manifest_path_cmp(o->path, e->path);

		if (c < 0) {		/* gone: the sender prunes an ancestor */
			rc = scan_push(out, SCAN_WHOLE, o->path);
			i++;
		} else if (c > 0) {	/* new */
			rc = scan_push(out, SCAN_WHOLE, e->path);
			k++;
		} else {
			if (!scan_same(o, e)) {
				bool names = S_ISDIR(o->mode) && S_ISDIR(e->mode) &&
					     o->ino == e->ino;

				rc = scan_push(out, names ? SCAN_NAMES : SCAN_WHOLE, e->path);
			}
			i++;
			k++;
		}
	}
	if (rc == 0)
		rc = scan_links(old, now, out);
	if (rc < 0) {
		scan_result_free(out);
		return rc;
	}
	scan_tidy(out);
	scan_drop_pruned(now, out);
	return 0;
}

/* ---- the mount's hooks ---- */

static int scan_open_store(const char *store)
{
	int fd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Records the whole store for a rescan (the manifest is missing or the
 * scan failed) if the peer has anything to compare with. */
static int scan_record_all(struct journal *j, const char *why)
{
	struct journal_stats js;
	int64_t seq;

	journal_get_stats(j, &js);
	if (js.acked_seq == 0) {
		log_info("no manifest of the store; the peer holds nothing yet and "
			 "gets a baseline", "why=\"%s\"", why);
		return 0;
	}
	log_notice("no manifest of the store to tell what changed while twinfs "
		   "was not mounted; rescanning the whole store", "why=\"%s\"", why);
	seq = journal_needs_scan(j, "", 0);
	if (seq < 0)
		return (int)seq;
	return journal_commit(j);
}

/*
 * A change the crash recovery covers already: the same regular file (same
 * inode, one name) at PATH in the manifest and now, its data marks found
 * by the journal's recovery, which resends its content, attributes and
 * xattrs. Sending it again for the scan read it twice on each side.
 */
static bool scan_recovered(struct journal *j, const struct manifest *old,
			   const struct manifest *now, const struct scan_change *c)
{
	const struct manifest_entry *o, *e;

	if (c->what != SCAN_WHOLE || !journal_recovered_path(j, c->path))
		return false;
	o = manifest_find(old, c->path);
	e = manifest_find(now, c->path);
	return o && e && S_ISREG(o->mode) && S_ISREG(e->mode) && o->ino == e->ino &&
	       o->nlink == 1 && e->nlink == 1;
}

int scan_mount(struct journal *j, const char *store, const char *state)
{
	struct manifest old, now;
	struct scan_result r = { 0 };
	size_t skipped = 0;
	double t0 = clock_mono_s(), t1;
	char why[128];
	int fd, rc;

	fd = scan_open_store(store);
	if (fd < 0)
		return fd;
	rc = scan_store(fd, &now);
	close(fd);
	if (rc < 0) {
		log_error("cannot scan the store at mount; rescanning it whole",
			  "store=%s err=%s", store, strerror(-rc));
		manifest_remove(state);
		scan_record_all(j, "the scan failed");
		return rc;
	}
	rc = manifest_read(state, &old);
	if (rc == 0 && (old.root_dev != now.root_dev || old.root_ino != now.root_ino)) {
		manifest_free(&old);
		rc = -ESTALE;
	}
	if (rc < 0) {
		snprintf(why, sizeof(why), "%s", rc == -ENOENT ? "none written" :
			 rc == -ESTALE ? "it describes another store" : strerror(-rc));
		rc = scan_record_all(j, why);
		goto out_write;
	}
	rc = scan_diff(&old, &now, &r);
	if (rc < 0) {
		manifest_free(&old);
		goto out_free;
	}
	for (size_t i = 0; i < r.n && rc >= 0; i++) {
		int64_t seq;

		if (scan_recovered(j, &old, &now, &r.c[i])) {
			skipped++;
			continue;
		}
		seq = journal_needs_scan(j, r.c[i].path,
					 r.c[i].what == SCAN_NAMES ? JSCAN_NAMES : 0);

		if (seq < 0)
			rc = (int)seq;
		else
			log_debug("changed while not mounted", "path=/%s what=%s",
				  r.c[i].path, r.c[i].what == SCAN_NAMES ? "names" : "whole");
	}
	manifest_free(&old);
	if (rc >= 0 && r.n)
		rc = journal_commit(j);
	if (rc < 0) {
		log_error("cannot record what changed in the store while not mounted",
			  "store=%s err=%s", store, strerror(-rc));
		goto out_free;
	}
out_write:
	t1 = clock_mono_s();
	/* Only once the changes are durable in the journal: from here on the
	 * journal covers every difference from this manifest. */
	if (rc >= 0) {
		int wrc = manifest_write(state, &now);

		if (wrc < 0)
			log_warn("cannot write the store manifest; the next mount rescans "
				 "more", "state=%s err=%s", state, strerror(-wrc));
	}
	log_notice("store scanned at mount", "store=%s entries=%zu changed=%zu "
		   "left_to_recovery=%zu seconds=%.3f manifest_seconds=%.3f", store, now.n,
		   r.n - skipped, skipped, t1 - t0, clock_mono_s() - t1);
out_free:
	scan_result_free(&r);
	manifest_free(&now);
	return rc < 0 ? rc : 0;
}

int scan_unmount(const char *store, const char *state)
{
	struct manifest now;
	double t0 = clock_mono_s();
	int fd, rc;

	fd = scan_open_store(store);
	if (fd < 0)
		return fd;
	/* The store durable first: the manifest says what the next mount may
	 * skip, and a power cut must not leave an entry with the metadata the
	 * manifest holds and older data (an overwrite in place whose inode
	 * reached the disk and whose blocks did not). */
	if (syncfs(fd) < 0) {
		rc = -errno;
		close(fd);
		log_warn("cannot make the store durable at unmount; the manifest stays as at "
			 "mount, so the next mount re-checks all changed since", "store=%s err=%s", store,
			 strerror(-rc));
		return rc;
	}
	rc = scan_store(fd, &now);
	close(fd);
	if (rc == 0) {
		rc = manifest_write(state, &now);
		log_info("store manifest written at unmount", "entries=%zu seconds=%.3f",
			 now.n, clock_mono_s() - t0);
		manifest_free(&now);
	}
	if (rc < 0)
		log_warn("cannot write the store manifest at unmount; the next mount "
			 "rescans more", "store=%s err=%s", store, strerror(-rc));
	return rc;
}
