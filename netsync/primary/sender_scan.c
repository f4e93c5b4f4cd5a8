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

#include "common/array.h"
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
	if ((op.path2 = cursor_link_known(&s->c, st, path)) != NULL) {
		/* another name of it went in this batch (sender_links.c) */
		op.type = JOP_LINK;
		op.path = op.path2;
		op.path2 = path;
		op.res_mask = 0;
	} else if (S_ISREG(st->st_mode)) {
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
	if (op.type != JOP_LINK && op.type != JOP_MKDIR && st->st_nlink > 1)
		op.flags = JCREATE_F_LINKED;
	if (proto_encode_op(out, seq, &op) < 0) {
		log_error("cannot send an entry of the store", "path=/%s", path);
		sender_set_error(s, "cannot send %s (name or target too long?)", path);
		return -EINVAL;
	}
	return 0;
}

/* The ATTR of folder PATH as the store has it now. Read now, it may name a
 * folder the peer does not hold at this point of the stream (removed by
 * the batch's records, made again by later ones, which bring its times):
 * PROTO_ATTR_IF_PRESENT lets the peer skip it then. */
static void scan_put_attr(struct evbuffer *out, const char *path, const struct stat *st)
{
	struct proto_attr a;

	memset(&a, 0, sizeof(a));
	a.path = path;
	a.mask = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_ATIME | JATTR_MTIME |
		 PROTO_ATTR_IF_PRESENT;
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

/* Cuts A to the folder that holds both A and B ("" if none). */
static void scan_common_dir(char *a, const char *b)
{
	size_t i = 0, last = 0;

	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			last = i;
	a[last] = '\0';
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
 * Names sent from the store go after the batch's records.
 *
 * A NEEDS_SCAN (or a repair) of a path that is gone here, or of a folder
 * whose names changed, makes the peer remove what this store lacks in a
 * folder (PRUNE). That list is read from the store as it is now, which
 * may be ahead of the batch: sent where the record stands, it would
 * remove on the peer entries that the batch's later records still use
 * (a folder they create something in, then remove), and those records
 * would fail there. So the path is only noted (c->names_after) and its
 * folder's names go once the batch's records are all sent, at its BATCH
 * record (sender_put_names_after), when the peer holds everything the
 * records describe.
 */
static int scan_defer_names(struct sender *s, const char *path)
{
	return pathset_add(&s->c.names_after, path, 0) < 0 ? -ENOMEM : 0;
}

/*
 * The deferred names of PATH, from the store as it is now. The nearest
 * entry that exists, PATH itself or an ancestor: a folder gets its names
 * (the peer removes the ones this store lacks, whole subtrees included),
 * then its times, which the removals changed; a file where a folder was
 * replaces the peer's folder (an ancestor of PATH), and a file at PATH
 * itself needs nothing (the record that made it follows). A folder a walk
 * of this batch covers is left to the walk, whose PRUNE says the same.
 * Directories above are not created on the peer: one missing there would
 * be created empty and hide what it lacks. 0 or -errno.
 */
static int scan_put_names_now(struct sender *s, struct evbuffer *out, uint64_t seq,
			      const char *path)
{
	char anc[PATH_MAX];
	struct path_ref ref;
	struct stat st;
	int rc;

	snprintf(anc, sizeof(anc), "%s", path);
	for (;;) {
		rc = scan_stat(s, anc, &ref, &st);
		if (rc == 0)
			break;
		if (rc != -ENOENT || !*anc)
			return rc == -ENOENT ? 0 : rc;
		scan_parent(anc);
	}
	path_put(&ref);
	if (!S_ISDIR(st.st_mode))
		return strcmp(anc, path) == 0 ? 0 : sender_put_replace(s, out, seq, anc);
	if (pathset_find(&s->c.pruned, anc) || cursor_walks(&s->c, anc))
		return 0;	/* this batch sends its names already */
	if (strcmp(anc, path) != 0)
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

/*
 * Scanned paths and the records after them. A NEEDS_SCAN record is
 * answered with what its path holds when it is sent; records after it,
 * already made by then, are in the store too. Replayed on the peer they
 * meet the path's older state, or nothing: an empty file made while
 * unmounted and renamed after the mount was gone when its NEEDS_SCAN was
 * answered, so the RENAME found nothing to move on the peer; a folder
 * renamed above it moved the peer's copy without it, and `twinfs sync`
 * exited 0 with the file missing there. So each answered NEEDS_SCAN path
 * is kept until the sender has sent the records up to the journal head of
 * that moment (none later can have changed what was seen). Until then:
 * - a record naming a path at or below a kept path is not replayed: each
 *   path it names goes whole, as the store has it, at the batch's BATCH
 *   record (c->paths_after; a LINK: the folder holding both names, so
 *   that the walk links them);
 * - a RENAME of a folder above a kept path is replayed (the peer has the
 *   folder), and the path's new name goes whole at the BATCH record;
 * either way a kept path follows the rename.
 */
/* PATH is kept until the record at UNTIL; OPEN: answered in the batch
 * being sent. 0 or -ENOMEM. */
static int scan_keep(struct sender *s, const char *path, uint64_t until, bool open)
{
	struct scan_move *m;

	if (ARRAY_GROW(s->moves, s->cap_moves, s->n_moves + 1, 16) < 0)
		return -ENOMEM;
	m = &s->moves[s->n_moves];
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	m->until = until;
	m->open = open;
	s->n_moves++;
	return 0;
}

int sender_scan_note(struct sender *s, const char *path)
{
	struct journal_stats js;

	journal_get_stats(s->j, &js);
	return scan_keep(s, path, js.head_seq, true);
}

/*
 * The store is read for an answered path until its batch ends, not only
 * when the NEEDS_SCAN is answered: its walk, and a folder's names, times
 * and walk (JSCAN_NAMES), go after the batch's records. An op made in
 * between (an exchange of the folder with another) is then already in
 * what the peer got, and replayed after it, it would apply twice: the
 * exchange swapped the folder the walk had just made equal back out of
 * place. So each path answered in the batch is kept until the journal
 * head of the batch's end.
 */
void sender_scan_batch_end(struct sender *s)
{
	struct journal_stats js;

	journal_get_stats(s->j, &js);
	for (size_t i = 0; i < s->n_moves; i++) {
		if (!s->moves[i].open)
			continue;
		s->moves[i].open = false;
		if (js.head_seq > (s->moves[i].until & ~(1ull << 63)))
			s->moves[i].until = js.head_seq | (s->moves[i].until & (1ull << 63));
	}
}

/* The suffix of PATH below or at FROM ("" for FROM itself), or NULL. */
static const char *scan_below(const char *path, const char *from)
{
	size_t n = strlen(from);

	if (n == 0)
		return path;
	if (strncmp(path, from, n) != 0)
		return NULL;
	return path[n] == '\0' ? path + n : path[n] == '/' ? path + n + 1 : NULL;
}

/* Kept paths at or below FROM are renamed to TO/...; each goes whole at
 * the BATCH record if SEND. 0 or -ENOMEM. */
static int scan_moves_rename(struct sender *s, const char *from, const char *to,
			     bool send)
{
	for (size_t i = 0; i < s->n_moves; i++) {
		const char *rest = scan_below(s->moves[i].path, from);
		char *np;

		/* (an exchange's first side, renamed already, stays) */
		if (!rest || (s->moves[i].until & (1ull << 63)))
			continue;
		if (asprintf(&np, "%s%s%s", to, *to && *rest ? "/" : "", rest) < 0)
			return -ENOMEM;
		free(s->moves[i].path);
		s->moves[i].path = np;
		s->moves[i].until |= 1ull << 63;	/* renamed in this pass */
		if (send && pathset_add(&s->c.paths_after, np, 0) < 0)
			return -ENOMEM;
	}
	return 0;
}

struct after_moves {
	const char *from, *to;
	bool exchange;
	char **olds, **news;
	size_t n, cap_olds, cap_news;
	int rc;
};

static void scan_after_moves_one(const struct pathset_entry *e, void *arg)
{
	struct after_moves *x = arg;
	const char *rest = scan_below(e->path, x->from), *dst = x->to;
	char *np, *op;

	if (!rest && x->exchange) {
		rest = scan_below(e->path, x->to);
		dst = x->from;
	}
	if (!rest || x->rc < 0)
		return;
	if (ARRAY_GROW(x->olds, x->cap_olds, x->n + 1, 8) < 0 ||
	    ARRAY_GROW(x->news, x->cap_news, x->n + 1, 8) < 0) {
		x->rc = -ENOMEM;
		return;
	}
	op = strdup(e->path);
	if (!op || asprintf(&np, "%s%s%s", dst, *dst && *rest ? "/" : "", rest) < 0) {
		free(op);
		x->rc = -ENOMEM;
		return;
	}
	x->olds[x->n] = op;
	x->news[x->n++] = np;
}

/*
 * A RENAME replayed as it is (a folder above the batch's pending paths)
 * moves what those paths name on the peer and here: a path to go whole at
 * the BATCH record follows it. Left under its old name, it was gone when
 * the BATCH came (only its old folder's names went), and the file reached
 * the peer as dirty data alone, which made it in its new folder there and
 * left that folder's mtime the peer's own.
 */
static int scan_after_follow(struct sender *s, const char *from, const char *to,
			     bool exchange)
{
	struct after_moves x = { .from = from, .to = to, .exchange = exchange };

	if (!s->c.paths_after.n || !*from || !*to)
		return 0;
	pathset_each(&s->c.paths_after, scan_after_moves_one, &x);
	for (size_t i = 0; i < x.n; i++) {
		pathset_remove(&s->c.paths_after, x.olds[i]);
		free(x.olds[i]);
	}
	for (size_t i = 0; i < x.n; i++) {
		if (x.rc == 0 && pathset_add(&s->c.paths_after, x.news[i], 0) < 0)
			x.rc = -ENOMEM;
		free(x.news[i]);
	}
	free(x.olds);
	free(x.news);
	return x.rc;
}

/*
 * PATH goes whole at the BATCH record. A file with other names is sent by
 * a walk of PATH alone as a file of its own, unless a name the walk meets
 * first links it: if another kept path (scanned, or moved since) names
 * the same inode, the folder holding both goes instead, so that its walk
 * links them.
 */
static int scan_after(struct sender *s, const char *path)
{
	char dir[PATH_MAX];
	struct path_ref ref;
	struct stat st, o;

	snprintf(dir, sizeof(dir), "%s", path);
	if (scan_stat(s, path, &ref, &st) == 0) {
		path_put(&ref);
		for (size_t i = 0; i < s->n_moves && !S_ISDIR(st.st_mode) && st.st_nlink > 1; i++) {
			if (strcmp(s->moves[i].path, path) == 0 ||
			    scan_stat(s, s->moves[i].path, &ref, &o) < 0)
				continue;
			path_put(&ref);
			if (o.st_dev == st.st_dev && o.st_ino == st.st_ino)
				scan_common_dir(dir, s->moves[i].path);
		}
	}
	return pathset_add(&s->c.paths_after, dir, 0) < 0 ? -ENOMEM : 0;
}

int sender_scan_cover(struct sender *s, const struct journal_rec *r)
{
	const struct journal_op *op = &r->op;
	bool two = op->type == JOP_RENAME || op->type == JOP_LINK;
	struct scan_move by = { 0 };
	bool covered = false;
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < s->n_moves; i++) {
		struct scan_move *m = &s->moves[i];

		if (r->seq > m->until) {
			free(m->path);	/* nothing later can have changed it */
			continue;
		}
		s->moves[k++] = *m;
		if (scan_below(op->path, m->path) ||
		    (two && op->path2 && scan_below(op->path2, m->path))) {
			if (!covered || (m->until & ~(1ull << 63)) > (by.until & ~(1ull << 63)))
				by = *m;
			covered = true;
		}
	}
	s->n_moves = k;
	if (covered && op->type == JOP_LINK) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", op->path);
		scan_common_dir(dir, op->path2);
		/* A LINK not replayed makes its new name on the peer only at
		 * the BATCH record. A record after it naming the new name (a
		 * chmod through either name, which the mount may journal under
		 * the newest) would meet nothing there: the new name is kept
		 * as the path that covered the LINK, and waits too. */
		if (op->path2 && scan_keep(s, op->path2, by.until & ~(1ull << 63), by.open) < 0)
			return -ENOMEM;
		return scan_after(s, dir) < 0 ? -ENOMEM : 1;
	}
	if (op->type == JOP_RENAME && op->path2) {
		rc = scan_moves_rename(s, op->path, op->path2, !covered);
		if (rc == 0 && (op->flags & RENAME_EXCHANGE))
			rc = scan_moves_rename(s, op->path2, op->path, !covered);
		for (size_t i = 0; i < s->n_moves; i++)
			s->moves[i].until &= ~(1ull << 63);
		if (rc < 0)
			return rc;
	}
	if (!covered)
		return op->type == JOP_RENAME && op->path2 ?
		       scan_after_follow(s, op->path, op->path2,
					 op->flags & RENAME_EXCHANGE) : 0;
	rc = scan_after(s, op->path);
	if (rc == 0 && two && op->path2)
		rc = scan_after(s, op->path2);
	if (rc == 0 && op->ino && (op->type == JOP_SETATTR || op->type == JOP_SETXATTR ||
				   op->type == JOP_REMOVEXATTR))
		rc = pathset_add(&s->c.inodes_after, op->path, op->ino);
	return rc < 0 ? rc : 1;
}

/*
 * A replayed exchange or whiteout rename can act on entries from its
 * future: over its own result (a peer interrupted mid-apply) an exchange
 * undoes itself, equal mtimes fool the whiteout's "done" test, NEEDS_SCAN
 * answers acked before a reconnect hold the store as it was after it. So
 * can any rename the peer may have seen the result of (seen_until):
 * `mv a b; mkdir a; touch a/x` replayed there moves the new a onto the
 * empty b the first pass made, and no error says so. And any rename made
 * while a walk ran (walk_window_end, a baseline's walk too): the walk may
 * have read its result, and the record, replayed after the walk, swaps an
 * exchange back or moves the later folder. And any rename of a split
 * brain's stream (split_stream): each connection replays the window from
 * the common point again, but a file's data goes out once (its dirty
 * record is gone with the batch an earlier connection sent), and the
 * whole state of the file's path, read now, is no longer there once the
 * rename moved it: only the new name, sent whole, carries the content.
 * Each is replayed, then both names go whole at the BATCH record.
 */
int sender_scan_replayed(struct sender *s, const struct journal_rec *r)
{
	const struct journal_op *op = &r->op;
	bool swaps = op->flags & (RENAME_EXCHANGE | RENAME_WHITEOUT);

	if (op->type != JOP_RENAME || !op->path2)
		return 0;
	if (!(r->seq <= s->resume_until &&
	      (swaps || s->split_stream || r->seq <= s->seen_until)) &&
	    r->seq > s->walk_window_end)
		return 0;
	if (pathset_add(&s->c.paths_after, op->path, 0) < 0 ||
	    pathset_add(&s->c.paths_after, op->path2, 0) < 0)
		return -ENOMEM;
	return 0;
}

void sender_scan_forget(struct sender *s)
{
	for (size_t i = 0; i < s->n_moves; i++)
		free(s->moves[i].path);
	free(s->moves);
	s->moves = NULL;
	s->n_moves = s->cap_moves = 0;
}

struct names_after_ctx {
	struct sender *s;
	struct evbuffer *out;
	uint64_t seq;
	int rc;
};

static void scan_names_after_one(const struct pathset_entry *e, void *arg)
{
	struct names_after_ctx *x = arg;

	if (x->rc == 0)
		x->rc = scan_put_names_now(x->s, x->out, x->seq, e->path);
}

/*
 * A path sent whole here is read from the store now and again by its
 * walk, which waits behind the batch's repairs (a dirty peer's: asked for
 * block hashes, a round trip each), not as of the batch's last record: a
 * later record made before those reads (an exchange of the path with
 * another) is in what the peer gets already, and replayed in a later
 * batch it would apply twice (the exchange swaps the names back). So each
 * is kept as an answered NEEDS_SCAN path is, until the journal head of
 * the batch's end.
 */
static void scan_paths_after_one(const struct pathset_entry *e, void *arg)
{
	struct names_after_ctx *x = arg;

	if (x->rc == 0 && !cursor_walks(&x->s->c, e->path))
		x->rc = sender_put_path(x->s, x->out, x->seq, e->path);
	if (x->rc == 0)
		x->rc = sender_scan_note(x->s, e->path);
}

/*
 * Attribute changes not replayed (sender_scan_cover) whose path no longer
 * names the inode they changed. A hard-linked file's chmod, chown, utime
 * or xattr change through a name removed since is in no other record:
 * sending the gone path sends nothing, and the peer's other names of the
 * inode kept the old attributes while sync said synced. The store cannot
 * be asked for an inode's names, so it is walked for them (stat only,
 * this filesystem only); rare: it takes such a change under a scanned
 * folder, then the name's removal, both before the batch is sent.
 */
struct inode_names_ctx {
	struct sender *s;
	uint64_t *inos;
	size_t n, cap;
	int rc;
};

static void scan_gone_inode_one(const struct pathset_entry *e, void *arg)
{
	struct inode_names_ctx *x = arg;
	struct path_ref ref;
	struct stat st;

	if (x->rc)
		return;
	if (scan_stat(x->s, e->path, &ref, &st) == 0) {
		path_put(&ref);
		if (st.st_ino == e->value)
			return;	/* still named: it goes as paths_after */
	}
	if (ARRAY_GROW(x->inos, x->cap, x->n + 1, 8) < 0) {
		x->rc = -ENOMEM;
		return;
	}
	x->inos[x->n++] = e->value;
}

/* Every non-directory of the store whose inode is in X goes whole at this
 * BATCH record. 0 or -errno. */
static int scan_inode_names(struct sender *s, struct evbuffer *out, uint64_t seq)
{
	struct inode_names_ctx x = { .s = s };
	struct treewalk *w = NULL;
	struct treewalk_item it;
	int rc;

	pathset_each(&s->c.inodes_after, scan_gone_inode_one, &x);
	pathset_clear(&s->c.inodes_after);
	rc = x.rc;
	if (rc == 0 && x.n) {
		log_notice("an attribute change's name is gone; looking for the file's "
			   "other names in the store", "peer=%s files=%zu", s->peer, x.n);
		rc = treewalk_open(s->store_fd, "", &w);
	}
	while (rc >= 0 && w && (rc = treewalk_next(w, &it)) > 0) {
		/* a name under a subtree this batch walks goes with the walk */
		if (it.leave || S_ISDIR(it.st.st_mode) || cursor_walks(&s->c, it.path))
			continue;
		for (size_t i = 0; i < x.n && rc > 0; i++) {
			if (it.st.st_ino != x.inos[i])
				continue;
			rc = sender_put_path(s, out, seq, it.path);
			rc = rc < 0 ? rc : 1;
		}
	}
	treewalk_free(w);
	free(x.inos);
	return rc < 0 ? rc : 0;
}

int sender_put_names_after(struct sender *s, struct evbuffer *out, uint64_t seq)
{
	struct names_after_ctx x = { .s = s, .out = out, .seq = seq };
	struct pathset todo;

	/* moved NEEDS_SCAN paths first: gone, they note their names too; and
	 * the folders they make on the peer may hold another name of a file
	 * whose attribute change lost its own (scan_inode_names), which
	 * could not be made there before its folder */
	pathset_each(&s->c.paths_after, scan_paths_after_one, &x);
	pathset_clear(&s->c.paths_after);
	if (x.rc == 0)
		x.rc = scan_inode_names(s, out, seq);
	todo = s->c.names_after;

	/* a replace below may note more: they go with this batch too */
	while (todo.n && x.rc == 0) {
		pathset_init(&s->c.names_after);
		pathset_each(&todo, scan_names_after_one, &x);
		pathset_clear(&todo);
		todo = s->c.names_after;
	}
	pathset_clear(&todo);
	pathset_init(&s->c.names_after);
	return x.rc;
}

int sender_put_path(struct sender *s, struct evbuffer *out, uint64_t seq,
		    const char *path)
{
	struct path_ref ref;
	struct stat st;
	int rc;

	rc = scan_stat(s, path, &ref, &st);
	if (rc == -ENOENT)
		return scan_defer_names(s, path);
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
		log_notice("no detailed record of how a directory changed (a full "
			   "journal, a crash, a change while unmounted, a repair, or "
			   "a record left to the batch's end); sending its whole subtree",
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
		return scan_defer_names(s, path);
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
	return rc < 0 ? rc : scan_defer_names(s, path);
}

/*
 * NEEDS_SCAN names a path the journal could not record in detail: we
 * send what the path is now. An existing path: the entry itself as an OP
 * carrying the record's seq (so order and resume work as for any op),
 * and its whole state walked before the batch's dirty files (its subtree
 * for a directory, its xattrs and content for a file; sender_put_walk,
 * cursor_n_files). With JSCAN_NAMES a directory gets its entry and
 * xattrs, and its names and times after the batch's records. A path that
 * is gone: the peer prunes it from the nearest ancestor that exists, after
 * the batch's records (scan_put_names_now) — a record that removed or
 * renamed it may not exist (while the journal is full, the removing op is
 * itself only a NEEDS_SCAN of its path).
 */
int sender_put_scan(struct sender *s, struct evbuffer *out,
		    const struct journal_rec *r)
{
	int rc;

	if (r->op.flags & JSCAN_NAMES)
		rc = scan_put_names_only(s, out, r->seq, r->op.path);
	else
		rc = sender_put_path(s, out, r->seq, r->op.path);
	return rc < 0 ? rc : sender_scan_note(s, r->op.path);
}

/*
 * A path the peer failed to apply: whatever the peer holds there (a
 * folder deleted behind its back, a file where a folder should be) is
 * replaced by what the store holds now: the parent's names without PATH
 * (which removes the peer's PATH, whatever it is), then PATH sent anew as
 * for NEEDS_SCAN; gone, its nearest folder's names after the batch's
 * records. If the peer lacks the parent, it fails on PATH again and the
 * repair moves up (repairs_scope). 0 or -errno.
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
		return scan_defer_names(s, path);
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

/* Adds SCOPE to SCOPES[*N] unless a walk of this batch already sends it
 * whole (an earlier record replaced by it) or a scope already listed
 * holds it. */
static void sender_scope_add(struct sender *s, char (*scope)[PROTO_PATH_MAX + 1],
			     const char **scopes, size_t *n, const char *path)
{
	if (cursor_walks(&s->c, path))
		return;
	for (size_t i = 0; i < *n; i++)
		if (repairs_under(path, scopes[i]))
			return;
	snprintf(scope[*n], sizeof(scope[*n]), "%s", path);
	scopes[*n] = scope[*n];
	(*n)++;
}

/* Replaces record R, which names a path the peer failed to apply, by the
 * current state of the failed path (or of the folder its failures moved
 * the repair up to) for each path R names; every repair below a scope is
 * carried by it. 0, 3 while the peer's answers about the scopes' files
 * are out (called again: all of this is idempotent), or -errno. */
int sender_put_repair_rec(struct sender *s, struct evbuffer *out,
				 const struct journal_rec *r, uint64_t until)
{
	const char *paths[2] = { r->op.path, NULL };
	uint64_t end = s->c.cur->b->end_seq;
	char scope[2][PROTO_PATH_MAX + 1], one[PROTO_PATH_MAX + 1];
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
		repairs_scope(rep, rep->path, one, sizeof(one));
		repairs_carry(&s->repairs, one, end);
		sender_scope_add(s, scope, scopes, &n, one);
	}
	rc = sender_delta_replace(s, out, r->seq, scopes, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		log_info("replaced a record the peer failed on by the path's state",
			 "peer=%s seq=%llu op=%s replaced=/%s", s->peer,
			 (unsigned long long)r->seq, journal_op_name(r->op.type), scopes[i]);
	return rc;
}

/* The batch's records are all sent: repairs no record carried (the peer
 * failed on file data or an ATTR) go out now, before the batch's data.
 * The set is chosen from entries not yet carried, and they are marked
 * only once it is sent, so that a call again after 3 sees the same set. */
int sender_put_open_repairs(struct sender *s, struct evbuffer *out, uint64_t seq)
{
	char (*scope)[PROTO_PATH_MAX + 1] = NULL;
	char one[PROTO_PATH_MAX + 1];
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
		repairs_scope(rep, rep->path, one, sizeof(one));
		sender_scope_add(s, scope, scopes, &n, one);
	}
	/* 3: called again with the same set */
	rc = sender_delta_replace(s, out, seq, scopes, n);
	for (size_t i = 0; rc == 0 && i < s->repairs.n; i++) {
		struct repair *rep = &s->repairs.r[i];

		if (rep->sent_end || !rep->failures)
			continue;
		repairs_scope(rep, rep->path, one, sizeof(one));
		repairs_carry(&s->repairs, one, s->c.cur->b->end_seq);
	}
out:
	free(scope);
	free(scopes);
	return rc;
}
