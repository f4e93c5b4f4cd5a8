/*
 * sender_walk — what the sender sends from the store rather than from the
 * journal: the whole state of paths to repair (NEEDS_SCAN records, paths
 * of batches replayed to a peer interrupted mid-apply) and the walk of
 * subtrees (a NEEDS_SCAN directory, or the whole store for a baseline),
 * with the PRUNE that lets the peer remove names it alone has.
 * Runs only on the primary thread's event_base (sender_int.h).
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/array.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xattrname.h"
#include "journal/journal.h"
#include "netsync/wire/proto.h"
#include "netsync/primary/sentmap.h"
#include "netsync/primary/treewalk.h"

/* ---- the cursor's repairs and walks ---- */

/* Every repair is sent: forget them (a walk adds one per file, so the list
 * must not grow with the tree). */
static void cursor_clear_repairs(struct cursor *c)
{
	for (size_t i = 0; i < c->n_repair; i++) {
		free(c->repair[i].path);
		if (c->repair[i].fd >= 0)
			close(c->repair[i].fd);
		if (i < c->cap_rdelta)
			c->rdelta[i] = NULL;	/* owned by c->dq */
	}
	c->n_repair = 0;
	c->file = cursor_n_files(c);
}

/* Forgets the walk's directories down to N. */
void cursor_pop_dirs(struct cursor *c, size_t n)
{
	while (c->n_dirs > n) {
		struct walk_dir *d = &c->dirs[--c->n_dirs];

		free(d->path);
		free(d->names);
	}
}

/* Notes NAME in the directory the walk is in (none for the walk's root). */
static int cursor_note_name(struct cursor *c, const char *name)
{
	struct walk_dir *d;
	size_t n = strlen(name) + 1;

	if (c->n_dirs == 0)
		return 0;
	d = &c->dirs[c->n_dirs - 1];
	if (ARRAY_GROW(d->names, d->cap, d->len + n, 4096) < 0)
		return -ENOMEM;
	memcpy(d->names + d->len, name, n);
	d->len += n;
	return 0;
}

/* The walk enters directory PATH. */
static int cursor_push_dir(struct cursor *c, const char *path)
{
	if (ARRAY_GROW(c->dirs, c->cap_dirs, c->n_dirs + 1, 16) < 0)
		return -ENOMEM;
	memset(&c->dirs[c->n_dirs], 0, sizeof(c->dirs[0]));
	c->dirs[c->n_dirs].path = strdup(path);
	if (!c->dirs[c->n_dirs].path)
		return -ENOMEM;
	c->n_dirs++;
	return 0;
}

/* Queues the subtree ROOT ("" = the whole store) to be walked after the
 * batch's files. */
int cursor_add_walk(struct cursor *c, const char *root)
{
	for (size_t i = 0; i < c->n_roots; i++)
		if (strcmp(c->walk_roots[i], root) == 0 || !*c->walk_roots[i])
			return 0;
	if (ARRAY_GROW(c->walk_roots, c->cap_roots, c->n_roots + 1, 4) < 0)
		return -ENOMEM;
	c->walk_roots[c->n_roots] = strdup(root);
	if (!c->walk_roots[c->n_roots])
		return -ENOMEM;
	c->n_roots++;
	return 0;
}

bool cursor_walks(const struct cursor *c, const char *path)
{
	for (size_t i = 0; i < c->n_roots; i++) {
		const char *root = c->walk_roots[i];
		size_t n = strlen(root);

		if (!n || (strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/')))
			return true;
	}
	return false;
}

int cursor_add_repair(struct cursor *c, const char *path)
{
	struct journal_dirty *d;

	if (!path || !*path)
		return 0;
	for (size_t i = 0; i < c->n_repair; i++)
		if (strcmp(c->repair[i].path, path) == 0)
			return 0;
	if (ARRAY_GROW(c->repair, c->cap_repair, c->n_repair + 1, 16) < 0)
		return -ENOMEM;
	d = &c->repair[c->n_repair];
	memset(d, 0, sizeof(*d));
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	d->fd = -1;
	d->whole = true;
	c->n_repair++;
	return 0;
}

/* ---- NEEDS_SCAN and the baseline walk ---- */

/*
 * Baseline — sending what the store holds rather than what the journal
 * says changed.
 *
 * The journal covers changes since the peer's last acknowledged position.
 * Three gaps are outside it: a peer that never applied anything (a first
 * `mount --peer` over a store that already holds files), a peer behind
 * what this journal still holds (restored from an old backup, or its
 * state reset after the journal was trimmed: journal_rewind says
 * -ERANGE), and a directory recorded as NEEDS_SCAN while the journal was
 * full. Until a scan/delta engine exists they are closed by re-sending
 * the affected subtree whole, never by skipping it.
 *
 * Ordering is the one of a fuzzy checkpoint plus redo log. A baseline is
 * an ordinary batch taken from the journal (journal_owe_batch makes sure
 * there is one, with a fresh BATCH seq S above anything the peer holds);
 * its own records and dirty files are not sent, because every change
 * they describe is already in the store when the walk starts (the fs
 * applies a change to the store before it appends the record, and the
 * take appends S under the ns lock). The walk then sends, for every
 * entry of the subtree, parents before children, the op that creates it
 * (MKDIR, CREATE, SYMLINK, MKNOD, or LINK for a further name of an inode
 * already sent in this walk), its user/trusted xattrs, for a regular
 * file its whole content followed by its ATTR (the repair path, one read
 * and one hash per block as for any data), and for a directory an ATTR
 * when it is left. All these ops carry seq S, which is above the peer's
 * applied seq, so the receiver applies them; BATCH_END(S) closes the
 * batch and the peer acks S when it is all durable. Changes made while
 * the walk runs get seqs above S and follow in later batches: whatever
 * state of an entry the walk happened to see, replaying them gives the
 * final state, because the receiver's ops are idempotent (creating an
 * existing file or directory, unlinking a missing name, renaming a name
 * already renamed all succeed) and dirty data is re-sent by range. Not
 * a rename: an exchange swaps back what the walk read after it, and
 * `mv a b; mkdir a; touch a/x` moves the later a onto b; so each rename
 * up to the walk's end sends both names whole at its BATCH record too
 * (sender_scan_replayed).
 * If the connection drops before S is acked, the peer still reports a
 * position below S (or 0), so the next HELLO starts the baseline again.
 *
 * Where that argument is weak: readdir of a directory whose names change
 * may miss a renamed entry or return it under both names, so a RENAME
 * replayed after the walk can find neither name on the peer (ENOENT) or
 * a non-empty directory in the way. The peer then reports an apply
 * error; replaying would fail the same way, so the sender sends a new
 * baseline on the next connection (sender_on_frame, rebaseline), whose
 * batch covers those records. It converges once a walk runs without
 * such a rename. Entries sent under a name that was renamed away stay
 * on the peer as names it alone has (see below).
 *
 * A baseline also deletes. When the walk leaves a directory it sends the
 * names it found there (PRUNE, after the entries and before the
 * directory's ATTR); the peer removes every other entry of its copy,
 * whole subtrees included (netsync/secondary/receiver.c, receiver_prune). The same
 * ordering argument holds: a name created here after the walk read the
 * directory may be removed on the peer, and its CREATE, with a higher
 * seq, follows.
 */
int sender_put_xattr_state(struct evbuffer *out, uint64_t seq, const char *path, int fd,
			   const char *lpath)
{
	struct journal_op op = { .type = JOP_REMOVEXATTR, .path = path };
	char *names = NULL, *val = NULL;
	size_t keep = 0;
	ssize_t n, vn;
	int rc = 0;

	n = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(lpath, NULL, 0);
	if (n < 0)
		return errno == ENOTSUP || errno == ENOENT ? 0 : -errno;
	names = malloc((size_t)n + 1);
	val = malloc(PROTO_XVALUE_MAX);
	if (!names || !val) {
		rc = -ENOMEM;
		goto out_free;
	}
	n = n ? (fd >= 0 ? flistxattr(fd, names, (size_t)n) : llistxattr(lpath, names, (size_t)n)) : 0;
	if (n < 0) {
		rc = -errno;
		goto out_free;
	}
	/* what a replica carries (common/xattrname.h); labels and other
	 * system.* names are each host's own */
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		size_t l = strlen(names + i) + 1;

		if (xattrname_replicated(names + i)) {
			memmove(names + keep, names + i, l);
			keep += l;
		}
	}
	op.xvalue = keep ? names : NULL;
	op.xsize = keep;
	/* the store root keeps its own xattrs on each side: only what it has
	 * here is sent, nothing is removed there */
	if (*path && proto_encode_op(out, seq, &op) < 0) {
		rc = -EINVAL;
		goto out_free;
	}
	for (size_t i = 0; i < keep; i += strlen(names + i) + 1) {
		vn = fd >= 0 ? fgetxattr(fd, names + i, val, PROTO_XVALUE_MAX) :
			       lgetxattr(lpath, names + i, val, PROTO_XVALUE_MAX);
		if (vn < 0)
			continue;	/* removed meanwhile: a later op says so */
		op = (struct journal_op){ .type = JOP_SETXATTR, .path = path, .xname = names + i,
					  .xvalue = val, .xsize = (size_t)vn };
		if (proto_encode_op(out, seq, &op) < 0) {
			log_error("cannot send an extended attribute", "path=%s name=%s",
				  path, names + i);
			rc = -EINVAL;
			goto out_free;
		}
	}
out_free:
	free(names);
	free(val);
	return rc;
}

int sender_put_xattrs(struct sender *s, struct evbuffer *out, uint64_t seq,
		      const struct treewalk_item *it)
{
	char p[64 + NAME_MAX + 1];

	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", it->dirfd, it->name);
	return sender_put_xattr_state(out, seq, it->path, -1, p);
}

static void sender_put_walk_attr(struct evbuffer *out, const struct treewalk_item *it,
				 uint32_t mask)
{
	struct proto_attr a;

	memset(&a, 0, sizeof(a));
	a.path = it->path;
	a.mask = mask;
	a.mode = it->st.st_mode & 07777;
	a.uid = it->st.st_uid;
	a.gid = it->st.st_gid;
	a.atime = it->st.st_atim;
	a.mtime = it->st.st_mtim;
	proto_encode_attr(out, &a);
}

/* The walk leaves directory PATH: sends the names it found there (several
 * PRUNE frames for a long list), so that the peer removes the others. */
static int sender_put_prune(struct sender *s, struct evbuffer *out, uint64_t seq,
			    const char *path)
{
	struct cursor *c = &s->c;
	struct walk_dir *d;
	int rc;

	if (c->n_dirs == 0 || strcmp(c->dirs[c->n_dirs - 1].path, path) != 0) {
		/* Cannot happen with a depth-first walk; without the list
		 * nothing is removed, which only leaves extra names. */
		log_warn("baseline walk left a directory it was not in; not pruning it",
			 "path=/%s", path);
		return 0;
	}
	d = &c->dirs[c->n_dirs - 1];
	rc = sender_put_names(s, out, seq, path, d->names, d->len);
	if (rc < 0)
		return rc;
	cursor_pop_dirs(c, c->n_dirs - 1);
	return 0;
}

/* Sends one entry of a walk. Returns 0 or -errno. */
static int sender_put_walk_item(struct sender *s, struct evbuffer *out,
				const struct treewalk_item *it)
{
	const uint32_t meta = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_ATIME |
			      JATTR_MTIME;
	uint64_t seq = s->c.cur->b->end_seq;
	struct journal_op op = { 0 };
	const char *link_to;
	char target[PATH_MAX];
	ssize_t n;
	int fd, rc;

	if (it->leave) {
		/* After its entries, whose creation changed its times. */
		rc = sender_put_prune(s, out, seq, it->path);
		if (rc < 0)
			return rc;
		sender_put_walk_attr(out, it, meta);
		return 0;
	}
	rc = cursor_note_name(&s->c, it->name);
	if (rc == 0 && S_ISDIR(it->st.st_mode))
		rc = cursor_push_dir(&s->c, it->path);
	if (rc < 0)
		return rc;
	op.path = it->path;
	op.mode = it->st.st_mode;
	op.uid = it->st.st_uid;
	op.gid = it->st.st_gid;
	/* every name of a linked file is counted (sender_links.c) */
	link_to = S_ISDIR(it->st.st_mode) ? NULL : cursor_link_first(&s->c, &it->st, it->path);
	if (!link_to)
		link_to = it->link_to;
	if (!S_ISDIR(it->st.st_mode) && link_to) {
		op.type = JOP_LINK;
		op.path = link_to;
		op.path2 = it->path;
	} else if (S_ISREG(it->st.st_mode)) {
		op.type = JOP_CREATE;
	} else if (S_ISDIR(it->st.st_mode)) {
		op.type = JOP_MKDIR;
	} else if (S_ISLNK(it->st.st_mode)) {
		n = readlinkat(it->dirfd, it->name, target, sizeof(target) - 1);
		if (n < 0)
			return 0;	/* gone meanwhile: a later op says so */
		target[n] = '\0';
		op.type = JOP_SYMLINK;
		op.path2 = target;
	} else {
		op.type = JOP_MKNOD;
		op.rdev = it->st.st_rdev;
	}
	if (op.type != JOP_LINK && op.type != JOP_MKDIR && it->st.st_nlink > 1)
		op.flags = JCREATE_F_LINKED;
	/* A CREATE makes the peer's copy anew: what it held is gone. */
	sentmap_forget(s->held, op.path);
	if (op.type == JOP_LINK)
		sentmap_forget(s->held, op.path2);
	if ((op.type != JOP_MKDIR || *it->path) && proto_encode_op(out, seq, &op) < 0) {
		log_error("cannot send an entry of the store", "path=%s", it->path);
		sender_set_error(s, "cannot send %s (name or target too long?)", it->path);
		return -EINVAL;
	}
	if (op.type == JOP_LINK)
		return 0;
	rc = sender_put_xattrs(s, out, seq, it);
	if (rc < 0)
		return rc;
	switch (op.type) {
	case JOP_CREATE:
		s->resync_files++;
		/*
		 * Its content is read through an fd opened here, relative to the
		 * walk's directory fd, not later by path: if a parent is renamed
		 * while the walk is in it, the path no longer resolves, yet the
		 * peer must get the content under the name it was created with
		 * (the RENAME that follows moves it).
		 */
		fd = fsutil_open_noatime(it->dirfd, it->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
					 O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return fd == -ENOENT || fd == -ELOOP ? 0 : fd;
		/* what the peer holds decides what is sent (sender_delta.c) */
		if (s->delta_bs)
			return sender_delta_walk(s, out, it->path, fd, &it->st);
		rc = cursor_add_repair(&s->c, it->path);	/* data, then ATTR */
		if (rc < 0 || s->c.n_repair == 0 ||
		    strcmp(s->c.repair[s->c.n_repair - 1].path, it->path) != 0 ||
		    s->c.repair[s->c.n_repair - 1].fd >= 0) {
			close(fd);
			return rc;
		}
		s->c.repair[s->c.n_repair - 1].fd = fd;
		return 0;
	case JOP_MKNOD:
		sender_put_walk_attr(out, it, meta);
		return 0;
	case JOP_SYMLINK:	/* no mode of its own */
		sender_put_walk_attr(out, it, meta & ~JATTR_MODE);
		return 0;
	default:
		return 0;
	}
}

/* Walks the cursor's queued subtrees, one entry per call, before the
 * batch's dirty files (see cursor_n_files). Returns 1 if it put something on the wire, 0 when every
 * walk is done, -EAGAIN when this pump's step budget is used up (continue
 * from the write callback), or -errno to drop the connection. */
int sender_put_walk(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	struct treewalk_item it;
	struct journal_stats js;
	int rc;

	cursor_clear_repairs(c);	/* sender_put_data sent them all */
	/* an answered walk file goes next; the walk goes on while answers
	 * are out, and does not end before they are all in */
	rc = sender_delta_next(s);
	if (rc != 0)
		return rc;
	if (sender_delta_pending(c) && ((!c->walk && c->next_root >= c->n_roots) ||
					 sender_delta_unanswered(c) >= DELTA_OUT_MAX))
		return -EAGAIN;
	for (;;) {
		if (!c->walk) {
			if (c->next_root >= c->n_roots) {
				/* names of linked files the walks did not meet */
				rc = c->n_blinks ? sender_put_link_groups(s, out) : 0;
				if (rc != 0)
					return rc;
				return c->attrs_after.n ? sender_put_attrs_after(s, out) : 0;
			}
			rc = treewalk_open(s->store_fd, c->walk_roots[c->next_root], &c->walk);
			if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP) {
				c->next_root++;	/* gone: a later op removes it */
				continue;
			}
			if (rc < 0) {
				log_error("cannot walk the store to send it", "path=%s err=%s",
					  c->walk_roots[c->next_root], strerror(-rc));
				sender_set_error(s, "cannot walk %s: %s",
						 c->walk_roots[c->next_root], strerror(-rc));
				return rc;
			}
			/* one per NEEDS_SCAN path (files too): notice for the
			 * whole store only */
			log_msg(*c->walk_roots[c->next_root] ? LOG_INFO : LOG_NOTICE,
				"sending the whole state of a subtree; the peer "
				"removes names it alone has", "peer=%s path=/%s", s->peer,
				c->walk_roots[c->next_root]);
		}
		if (s->walk_budget <= 0)
			return -EAGAIN;
		s->walk_budget--;
		rc = treewalk_next(c->walk, &it);
		if (rc == 0) {
			treewalk_free(c->walk);
			c->walk = NULL;
			c->next_root++;
			if (c->next_root < c->n_roots)
				continue;
			/* The walks are done: the batch's dirty files follow. */
			journal_get_stats(s->j, &js);
			s->walk_window_end = js.head_seq;
			c->file = 0;
			return 1;
		}
		if (rc < 0) {
			log_error("cannot walk the store to send it", "path=%s err=%s",
				  c->walk_roots[c->next_root], strerror(-rc));
			sender_set_error(s, "cannot walk %s: %s", c->walk_roots[c->next_root],
					 strerror(-rc));
			return rc;
		}
		rc = sender_put_walk_item(s, out, &it);
		return rc < 0 ? rc : 1;
	}
}

/* The peer needs a baseline of the whole store (see "Baseline"). */
void sender_baseline_start(struct sender *s, const char *why)
{
	log_notice("sending the peer the whole store (baseline)", "peer=%s why=\"%s\"",
		   s->peer, why);
	s->baseline_pending = true;
	s->baseline_end = 0;
	sentmap_clear(s->held);
	journal_owe_batch(s->j);
}
