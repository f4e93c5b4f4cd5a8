/*
 * sender_scan — the sender's answer to a path whose history it does not
 * have: a NEEDS_SCAN record (the journal was full, records were lost, or
 * the store changed while not mounted) and a path the peer failed to
 * apply. Either way the peer's copy of the path is made equal to what the
 * store holds now: the entry, its subtree or content (queued as a walk,
 * sender_walk.c), and the list of names of the nearest directory (PRUNE)
 * so that the peer removes what this store lacks. Runs only on the
 * primary thread's event_base (sender_int.h); reads the store, never
 * writes it.
 */
#include "netsync/primary/sender_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/log.h"
#include "common/pathset.h"
#include "journal/journal.h"
#include "netsync/primary/treewalk.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

/* lstat of PATH beneath the store, no symlink followed on the way. 0 with
 * *ref open (path_put it), -ENOENT if PATH is not there (a component
 * missing, not a directory, or a symlink), or -errno. */
static int scan_stat(struct sender *s, const char *path, struct path_ref *ref,
		     struct stat *st)
{
	int rc = path_resolve(s->store_fd, path, true, ref);

	if (rc == -ENOTDIR || rc == -ELOOP)
		rc = -ENOENT;
	if (rc < 0)
		return rc;
	if (fstatat(ref->dirfd, ref->name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOTDIR ? -ENOENT : -errno;
		path_put(ref);
	}
	return rc;
}

/* The op that creates PATH as it is (CREATE, MKDIR, SYMLINK, MKNOD), with
 * SEQ; none for the root. 0, or -errno to drop the connection. */
static int scan_put_entry(struct sender *s, struct evbuffer *out, uint64_t seq,
			  const char *path, const struct path_ref *ref,
			  const struct stat *st)
{
	struct journal_op op = { .path = path, .mode = st->st_mode, .uid = st->st_uid,
				 .gid = st->st_gid,
				 /* its mtime as the store has it (a file's ATTR
				  * follows its data and sets it again) */
				 .res_mask = JRES_BIT(JRES_PATH),
				 .res_mtime[JRES_PATH] = st->st_mtim };
	char target[PATH_MAX];
	ssize_t n;

	if (!*path)
		return 0;
	if (S_ISREG(st->st_mode)) {
		op.type = JOP_CREATE;
	} else if (S_ISDIR(st->st_mode)) {
		op.type = JOP_MKDIR;
	} else if (S_ISLNK(st->st_mode)) {
		n = readlinkat(ref->dirfd, ref->name, target, sizeof(target) - 1);
		if (n < 0)
			return 0;	/* gone meanwhile: a later op says so */
		target[n] = '\0';
		op.type = JOP_SYMLINK;
		op.path2 = target;
	} else {
		op.type = JOP_MKNOD;
		op.rdev = st->st_rdev;
	}
	if (proto_encode_op(out, seq, &op) < 0) {
		log_error("cannot send an entry of the store", "path=/%s", path);
		sender_set_error(s, "cannot send %s (name or target too long?)", path);
		return -EINVAL;
	}
	return 0;
}

static void scan_put_attr(struct evbuffer *out, const char *path, const struct stat *st)
{
	struct proto_attr a;

	memset(&a, 0, sizeof(a));
	a.path = path;
	a.mask = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_ATIME | JATTR_MTIME;
	a.mode = st->st_mode & 07777;
	a.uid = st->st_uid;
	a.gid = st->st_gid;
	a.atime = st->st_atim;
	a.mtime = st->st_mtim;
	proto_encode_attr(out, &a);
}

struct attrs_after_ctx {
	struct sender *s;
	struct evbuffer *out;
	int sent;
};

static void scan_attr_after_one(const struct pathset_entry *e, void *arg)
{
	struct attrs_after_ctx *x = arg;
	struct path_ref ref;
	struct stat st;

	if (scan_stat(x->s, e->path, &ref, &st) < 0)
		return;	/* gone meanwhile: a later op says so */
	path_put(&ref);
	if (S_ISDIR(st.st_mode)) {
		scan_put_attr(x->out, e->path, &st);
		x->sent++;
	}
}

int sender_put_attrs_after(struct sender *s, struct evbuffer *out)
{
	struct attrs_after_ctx x = { .s = s, .out = out };

	pathset_each(&s->c.attrs_after, scan_attr_after_one, &x);
	pathset_clear(&s->c.attrs_after);
	return x.sent > 0;
}

int sender_put_names(struct sender *s, struct evbuffer *out, uint64_t seq,
		     const char *path, const char *names, size_t len)
{
	struct proto_prune m = { .seq = seq, .path = path };
	size_t off = 0;
	int rc;

	do {
		size_t end = off;

		/* whole names, at most PROTO_PRUNE_CHUNK bytes */
		while (end < len) {
			size_t n = strlen(names + end) + 1;

			if (end - off + n > PROTO_PRUNE_CHUNK)
				break;
			end += n;
		}
		m.names = names ? names + off : NULL;
		m.names_len = end - off;
		m.flags = end >= len ? PROTO_PRUNE_F_LAST : 0;
		rc = proto_encode_prune(out, &m);
		if (rc < 0) {
			log_error("cannot send the names of a directory", "path=/%s", path);
			sender_set_error(s, "cannot send the names of %s", path);
			return rc;
		}
		off = end;
	} while (off < len);
	return 0;
}

/* Sends the names directory PATH holds now (EXCEPT left out, if not
 * NULL): the peer removes every other name it has there. 0, -ENOENT if
 * PATH is not a directory here, or -errno. */
static int scan_put_dir_names(struct sender *s, struct evbuffer *out, uint64_t seq,
			      const char *path, const char *except)
{
	struct path_ref ref;
	struct dirent *de;
	char *names = NULL;
	size_t len = 0, cap = 0;
	DIR *d;
	int fd, rc;

	rc = path_resolve(s->store_fd, path, true, &ref);
	if (rc < 0)
		return rc == -ENOTDIR || rc == -ELOOP ? -ENOENT : rc;
	fd = openat(ref.dirfd, ref.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	path_put(&ref);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name) + 1;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (except && strcmp(de->d_name, except) == 0))
			continue;
		if (len + n > cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *p;

			while (ncap < len + n)
				ncap *= 2;
			p = realloc(names, ncap);
			if (!p) {
				rc = -ENOMEM;
				goto out_close;
			}
			names = p;
			cap = ncap;
		}
		memcpy(names + len, de->d_name, n);
		len += n;
	}
	rc = errno ? -errno : 0;
	if (rc == 0)
		rc = sender_put_names(s, out, seq, path, names, len);
out_close:
	closedir(d);
	free(names);
	return rc;
}

/* Cuts PATH to its parent ("" for a top-level name). */
static void scan_parent(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash)
		*slash = '\0';
	else
		path[0] = '\0';
}

/*
 * PATH is gone here. Whatever happened to it (removed, renamed away, its
 * folder removed), the peer's copy is brought in line at the nearest
 * ancestor that still exists: its names (the peer removes the ones this
 * store lacks, PATH among them, whole subtrees included), then its times,
 * which the removals changed. Nothing is re-sent. Directories above are
 * not created on the peer: one missing there would be created empty and
 * hide what it lacks; the peer reports the missing path instead, which
 * is then repaired whole (sender.c, "Apply errors"). 0 or -errno.
 */
static int scan_put_gone(struct sender *s, struct evbuffer *out, uint64_t seq,
			 const char *path)
{
	char anc[PATH_MAX];
	struct path_ref ref;
	struct stat st;
	int rc;

	snprintf(anc, sizeof(anc), "%s", path);
	for (;;) {
		scan_parent(anc);
		rc = scan_stat(s, anc, &ref, &st);
		if (rc == 0)
			break;
		if (rc != -ENOENT || !*anc)
			return rc == -ENOENT ? 0 : rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		/* a file where a folder was: the peer's folder goes, the file
		 * is sent */
		path_put(&ref);
		return sender_put_replace(s, out, seq, anc);
	}
	path_put(&ref);
	if (pathset_find(&s->c.pruned, anc))
		return 0;	/* this batch sent its names already */
	log_info("a path the journal could not follow is gone; the peer removes "
		 "what this store lacks in its nearest folder", "path=/%s folder=/%s",
		 path, anc);
	if (pathset_add(&s->c.pruned, anc, 0) < 0)
		return -ENOMEM;
	rc = scan_put_dir_names(s, out, seq, anc, NULL);
	if (rc == -ENOENT)
		return 0;	/* gone meanwhile: a later op says so */
	if (rc == 0) {
		scan_put_attr(out, anc, &st);
		rc = pathset_add(&s->c.attrs_after, anc, 0) < 0 ? -ENOMEM : 0;
	}
	return rc;
}

int sender_put_path(struct sender *s, struct evbuffer *out, uint64_t seq,
		    const char *path)
{
	struct path_ref ref;
	struct stat st;
	int rc;

	rc = scan_stat(s, path, &ref, &st);
	if (rc == -ENOENT)
		return scan_put_gone(s, out, seq, path);
	if (rc < 0)
		return rc;
	rc = scan_put_entry(s, out, seq, path, &ref, &st);
	path_put(&ref);
	if (rc < 0)
		return rc;
	if (*path) {
		/* creating it on the peer changes its folder's mtime there */
		char parent[PATH_MAX];

		snprintf(parent, sizeof(parent), "%s", path);
		scan_parent(parent);
		if (pathset_add(&s->c.attrs_after, parent, 0) < 0)
			return -ENOMEM;
	}
	if (S_ISDIR(st.st_mode))
		log_notice("the journal could not describe how a directory changed "
			   "(it was full, records were lost in a crash, or the store "
			   "changed while not mounted); sending its whole subtree",
			   "path=/%s", path);
	/* the walk sends the entry again with its xattrs, and a file's content */
	return cursor_add_walk(&s->c, path);
}

/* A directory whose names (or attributes) changed, not what is below:
 * its entry and xattrs, its names, its times. */
static int scan_put_names_only(struct sender *s, struct evbuffer *out, uint64_t seq,
			       const char *path)
{
	struct treewalk_item it = { .path = path };
	struct path_ref ref;
	struct stat st;
	int rc;

	rc = scan_stat(s, path, &ref, &st);
	if (rc == -ENOENT)
		return scan_put_gone(s, out, seq, path);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(st.st_mode)) {
		path_put(&ref);
		return sender_put_path(s, out, seq, path);
	}
	/* creating an existing directory sets its mode and owner there */
	rc = scan_put_entry(s, out, seq, path, &ref, &st);
	it.dirfd = ref.dirfd;
	it.name = ref.name;
	it.st = st;
	if (rc == 0)
		rc = sender_put_xattrs(s, out, seq, &it);
	path_put(&ref);
	if (rc == 0)
		rc = scan_put_dir_names(s, out, seq, path, NULL);
	if (rc == -ENOENT)
		return 0;
	if (rc == 0) {
		scan_put_attr(out, path, &st);
		rc = pathset_add(&s->c.attrs_after, path, 0) < 0 ? -ENOMEM : 0;
	}
	return rc;
}

/*
 * NEEDS_SCAN names a path the journal could not record in detail: we
 * send what the path is now. An existing path: the entry itself as an OP
 * carrying the record's seq (so order and resume work as for any op),
 * and its whole state walked before the batch's dirty files (its subtree
 * for a directory, its xattrs and content for a file; sender_put_walk,
 * cursor_n_files). With JSCAN_NAMES a directory gets its names and
 * attributes only. A path that is gone: the peer prunes it from the
 * nearest ancestor that exists (scan_put_gone) — a record that removed
 * or renamed it may not exist (while the journal is full, the removing
 * op is itself only a NEEDS_SCAN of its path).
 */
int sender_put_scan(struct sender *s, struct evbuffer *out,
		    const struct journal_rec *r)
{
	if (r->op.flags & JSCAN_NAMES)
		return scan_put_names_only(s, out, r->seq, r->op.path);
	return sender_put_path(s, out, r->seq, r->op.path);
}

/*
 * A path the peer failed to apply: whatever the peer holds there (a
 * folder deleted behind its back, a file where a folder should be) is
 * replaced by what the store holds now: the parent's names without PATH
 * (which removes the peer's PATH, whatever it is), then PATH sent anew as
 * for NEEDS_SCAN. If the peer lacks the parent, it fails on PATH again
 * and the repair moves up (repairs_scope). 0 or -errno.
 */
int sender_put_replace(struct sender *s, struct evbuffer *out, uint64_t seq,
		       const char *path)
{
	char parent[PATH_MAX];
	const char *base;
	struct path_ref ref;
	struct stat st;
	int rc;

	if (!*path)
		return sender_put_path(s, out, seq, path);	/* the root: walk it */
	rc = scan_stat(s, path, &ref, &st);
	if (rc == -ENOENT)
		return scan_put_gone(s, out, seq, path);
	if (rc < 0)
		return rc;
	path_put(&ref);
	snprintf(parent, sizeof(parent), "%s", path);
	scan_parent(parent);
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	rc = scan_put_dir_names(s, out, seq, parent, base);
	if (rc == -ENOENT)
		return 0;	/* gone meanwhile: a later op says so */
	return rc < 0 ? rc : sender_put_path(s, out, seq, path);
}

/* ---- repairs of the paths the peer failed to apply (sender.c, "Apply
 * errors") ---- */

int sender_put_repair_rec(struct sender *s, struct evbuffer *out,
				 const struct journal_rec *r, uint64_t until)
{
	const char *paths[2] = { r->op.path, NULL };
	uint64_t end = s->c.cur->b->end_seq;
	char scope[2][PROTO_PATH_MAX + 1];
	const char *scopes[2];
	size_t n = 0;
	int rc;

	if (r->op.type == JOP_RENAME || r->op.type == JOP_LINK)
		paths[1] = r->op.path2;
	for (int i = 0; i < 2; i++) {
		struct repair *rep;

		if (!paths[i])
			continue;
		rep = repairs_covering(&s->repairs, paths[i], r->seq);
		if (!rep)	/* a rename's other name: repaired with it */
			rep = repairs_note(&s->repairs, paths[i], NULL, NULL, until, false);
		if (!rep)
			return -ENOMEM;
		if (rep->sent_end < end)
			rep->sent_end = end;
		repairs_scope(rep, paths[i], scope[n], sizeof(scope[n]));
		scopes[n] = scope[n];
		n++;
	}
	/* 3: waits for the peer's answers, called again (all of the above
	 * is idempotent) */
	rc = sender_delta_replace(s, out, r->seq, scopes, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		log_info("replaced a record the peer failed on by the path's state",
			 "peer=%s seq=%llu op=%s replaced=/%s", s->peer,
			 (unsigned long long)r->seq, journal_op_name(r->op.type), scopes[i]);
	return rc;
}

int sender_put_open_repairs(struct sender *s, struct evbuffer *out, uint64_t seq)
{
	char (*scope)[PROTO_PATH_MAX + 1] = NULL;
	const char **scopes = NULL;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < s->repairs.n; i++)
		n += !s->repairs.r[i].sent_end && s->repairs.r[i].failures;
	if (!n)
		return 0;
	scope = malloc(n * sizeof(*scope));
	scopes = malloc(n * sizeof(*scopes));
	if (!scope || !scopes) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < s->repairs.n; i++) {
		struct repair *rep = &s->repairs.r[i];

		if (rep->sent_end || !rep->failures)
			continue;
		repairs_scope(rep, rep->path, scope[n], sizeof(scope[n]));
		scopes[n] = scope[n];
		n++;
	}
	/* 3: called again with the same set (sent_end is set only once done) */
	rc = sender_delta_replace(s, out, seq, scopes, n);
	for (size_t i = 0; rc == 0 && i < s->repairs.n; i++)
		if (!s->repairs.r[i].sent_end && s->repairs.r[i].failures)
			s->repairs.r[i].sent_end = seq;
out:
	free(scope);
	free(scopes);
	return rc;
}
