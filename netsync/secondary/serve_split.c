/*
 * serve_split — this node's side of a split brain (docs/protocol.md,
 * "Split brain"): the exchange of diverged paths, then the primary's
 * stream applied to every path this node did not change itself (hold.h
 * says which frames are held back; each path held back joins the list on
 * both nodes), and `twinfs resolve`. Shares struct serve (serve_int.h);
 * serve's loop thread.
 */
#include "netsync/secondary/serve_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/log.h"
#include "netsync/secondary/receiver.h"
#include "netsync/secondary/splitres.h"
#include "netsync/wire/proto_gen.h"

static bool serve_split_hold(struct serve *s, const char *path, bool whole);
static bool serve_split_aliases(struct serve *s, size_t from);

void serve_split_begin(struct serve *s)
{
	int rc;

	/* nothing is applied until both nodes listed what they changed;
	 * the connection stays up (heartbeats) for `twinfs resolve` */
	serve_set_error(s, "%s", s->bind.why);
	rc = divergence_begin(&s->div, receiver_store_fd(s->recv), s->bind.tail.paths,
			      s->bind.has_tail ? s->bind.tail.len : 0,
			      bufferevent_get_output(s->bev));
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_SPLITBRAIN, "%s", s->bind.why);
		return;
	}
	s->div_logged = false;
	serve_set_state(s, PEER_SPLIT);
}

void serve_split_reset(struct serve *s)
{
	if (!s->split_stream)
		return;
	receiver_split_end(s->recv);
	s->split_stream = false;
	hold_clear(&s->hold);
}

/*
 * Both lists are in: the primary now replays its changes from the common
 * point. What this node changed itself stays as it is (held); the rest of
 * the store takes the primary's changes. No seq of that stream is
 * recorded (receiver_split_begin): after `resolve` this node resumes at
 * the common point with its store marked dirty, and the primary resends
 * the whole state of every path changed since.
 */
static void serve_split_stream(struct serve *s)
{
	size_t n = divergence_keep_secondary(&s->div, true);
	int rc = 0;

	hold_clear(&s->hold);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = hold_add(&s->hold, s->div.e[i].path,
			      s->div.e[i].whole || !S_ISDIR(s->div.e[i].here.mode));
		if (rc == 0 && !S_ISDIR(s->div.e[i].here.mode))
			rc = hold_add_inode(&s->hold, receiver_store_fd(s->recv), s->div.e[i].path);
		else if (rc == 0 && s->div.e[i].whole)
			rc = hold_add_tree_inodes(&s->hold, receiver_store_fd(s->recv),
						  s->div.e[i].path);
	}
	if (rc == 0)
		rc = hold_note_mtimes(&s->hold, receiver_store_fd(s->recv));
	if (rc == 0)
		rc = receiver_split_begin(s->recv, s->bind.common);
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot take the primary's other changes "
				"during the split brain on %s: %s", s->node_name, strerror(-rc));
		return;
	}
	s->split_stream = true;
	log_notice("split brain: taking the primary's changes of every path this node did "
		   "not change", "peer=%s common_seq=%llu held_paths=%zu", s->peer,
		   (unsigned long long)s->bind.common, n);
	serve_split_aliases(s, 0);
}

static int serve_split_alias(const char *path, void *arg)
{
	return serve_split_hold(arg, path, false) ? 0 : -ECANCELED;
}

/* The other names of the held files recorded from the FROM-th on are
 * held and listed too (hold_each_alias). False after failing the
 * connection. */
static bool serve_split_aliases(struct serve *s, size_t from)
{
	int rc = hold_each_alias(&s->hold, receiver_store_fd(s->recv), from,
				 serve_split_alias, s);

	if (rc == -ECANCELED)
		return false;
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot look for other names of a held "
				"file on %s: %s", s->node_name, strerror(-rc));
		return false;
	}
	return true;
}

/* A frame held back for PATH: PATH is held from now on and, unless it is
 * listed already, goes to the primary as a diverged path; WHOLE: PATH is
 * a folder held with everything in it (div_entry.whole). Returns false
 * after failing the connection. */
static bool serve_split_hold(struct serve *s, const char *path, bool whole)
{
	size_t inos = s->hold.n_inos;
	const struct div_entry *e;
	int rc;

	if (!path)
		return true;
	rc = divergence_hold(&s->div, receiver_store_fd(s->recv), path, whole,
			     bufferevent_get_output(s->bev));
	e = rc < 0 ? NULL : divergence_lookup(&s->div, path);
	if (e && (hold_add(&s->hold, path, whole || !S_ISDIR(e->here.mode)) < 0 ||
		  (!S_ISDIR(e->here.mode) &&
		   hold_add_inode(&s->hold, receiver_store_fd(s->recv), path) < 0) ||
		  hold_note_mtimes(&s->hold, receiver_store_fd(s->recv)) < 0))
		rc = -ENOMEM;
	if (e && rc >= 0 && whole) {
		int t = hold_add_tree_inodes(&s->hold, receiver_store_fd(s->recv), path);

		rc = t < 0 ? t : rc;
	}
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot hold /%s back on %s: %s", path,
				s->node_name, strerror(-rc));
		return false;
	}
	if (rc == 1) {
		s->last_tx_ns = clock_mono_ns();
		log_notice("split brain: a change of the primary's is held back, this node "
			   "changed the path too", "peer=%s path=/%s", s->peer, path);
	}
	return s->hold.n_inos == inos || serve_split_aliases(s, inos);
}

static bool serve_split_held(struct serve *s, const char *path)
{
	return serve_split_hold(s, path, false);
}

/* DIR's mtime back to this node's, if it keeps it (hold_note_mtimes).
 * A change applied in it moved it where the primary's is not known to be
 * the same: the folder differs, and is listed (held), the root excepted. */
static void serve_split_keep_mtime(struct serve *s, const char *dir)
{
	int fd = receiver_store_fd(s->recv);
	struct timespec ts[2];
	struct stat st;
	int64_t ns;

	if (!hold_mtime(&s->hold, dir, &ns) ||
	    fstatat(fd, dir[0] ? dir : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == ns)
		return;
	ts[0] = (struct timespec){ 0, UTIME_OMIT };
	ts[1] = (struct timespec){ ns / 1000000000, ns % 1000000000 };
	if (utimensat(fd, dir[0] ? dir : ".", ts, AT_SYMLINK_NOFOLLOW) < 0)
		log_warn("split brain: cannot keep a folder's mtime", "path=/%s err=%s", dir,
			 strerror(errno));
	else if (dir[0] && !hold_covers(&s->hold, dir))
		serve_split_held(s, dir);
}

/* The same for the folder PATH is in, after a change applied there.
 * PRIMARY_SET: the change carried the primary's mtime of that folder
 * (an OP's results), which a folder above a held path takes. */
static void serve_split_keep_parent_mtime(struct serve *s, const char *path,
					  bool primary_set)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	char dir[PATH_MAX];

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (primary_set)
		hold_forget_mtime(&s->hold, dir);	/* unless held */
	serve_split_keep_mtime(s, dir);
}

/*
 * A frame that fails on this store during the split brain meets what this
 * node changed (a path it moved, removed or replaced, which a frame the
 * hold held back would have made fit): it is held back too, and its path
 * listed, instead of dropping the connection to repair a path the
 * resolution decides. A frame that is malformed or names a path it may
 * not, or a store that refuses writes, fails the connection as ever.
 */
static bool serve_split_failed(struct serve *s, const char *what, const char *path,
			       const char *path2, int rc)
{
	if (!path || !path[0] || rc == -EBADMSG || rc == -EINVAL || rc == -EXDEV ||
	    rc == -ENOSPC || rc == -EDQUOT || rc == -EROFS || rc == -EIO || rc == -ENOMEM) {
		serve_apply_failed(s, what, rc);
		return false;
	}
	log_info("split brain: a change of the primary's does not apply here; held back",
		 "peer=%s op=%s path=/%s err=%s", s->peer, what, path, strerror(-rc));
	return serve_split_held(s, path) && serve_split_held(s, path2);
}

/*
 * An OP held back (or failed) whose results set the primary's mtime of the
 * folder PATH is in (K: JRES_DIR or JRES_DIR2): that folder now keeps this
 * node's mtime where the primary's differs, so it is listed and held too
 * (its attributes are this node's until the resolution; the entries in it
 * still take the primary's other changes). The root is never listed.
 */
static bool serve_split_held_parent(struct serve *s, const struct journal_op *op,
				    const char *path, int k)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	char dir[PATH_MAX];
	struct stat st;

	if (!slash || !(op->res_mask & JRES_BIT(k)) || (size_t)(slash - path) >= sizeof(dir))
		return true;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (fstatat(receiver_store_fd(s->recv), dir, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode) || (st.st_mtim.tv_sec == op->res_mtime[k].tv_sec &&
				     st.st_mtim.tv_nsec == op->res_mtime[k].tv_nsec))
		return true;
	return serve_split_held(s, dir);
}

/*
 * PATH of a RENAME held back: where it is a folder here, on the primary it
 * now holds another folder (or nothing), so the whole of this node's is
 * held, the primary's changes below it too (they are changes of that
 * other folder), and the listed PATH stands for everything in it.
 */
static bool serve_split_held_moved(struct serve *s, const char *path)
{
	struct stat st;

	return serve_split_hold(s, path, path &&
				fstatat(receiver_store_fd(s->recv), path, &st,
					AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
}

/* OP held back with both its paths (a symlink's path2 is its target;
 * a RENAME's folders whole), and the folders whose mtime it would have
 * set. */
static void serve_split_op_held(struct serve *s, const struct journal_op *op)
{
	bool two = op->type != JOP_SYMLINK;

	if (op->type == JOP_RENAME) {
		if (!serve_split_held_moved(s, op->path) || !serve_split_held_moved(s, op->path2))
			return;
	} else if (!serve_split_held(s, op->path) || (two && !serve_split_held(s, op->path2))) {
		return;
	}
	if (serve_split_held_parent(s, op, op->path, JRES_DIR) && two)
		serve_split_held_parent(s, op, op->path2, JRES_DIR2);
}

/* OP: applied, or held back (serve_split_op_held). */
static void serve_split_op(struct serve *s, const struct proto_op *m)
{
	int fd = receiver_store_fd(s->recv);
	const char *why;
	int rc;

	if (hold_op(&s->hold, &m->op, &why) || hold_alias(&s->hold, fd, m->op.path) ||
	    (m->op.type != JOP_SYMLINK && hold_alias(&s->hold, fd, m->op.path2))) {
		serve_split_op_held(s, &m->op);
	} else if ((rc = receiver_op(s->recv, m)) < 0) {
		if (serve_split_failed(s, proto_op_name(m->op.type), m->op.path,
				       m->op.type == JOP_SYMLINK ? NULL : m->op.path2, rc) &&
		    serve_split_held_parent(s, &m->op, m->op.path, JRES_DIR) &&
		    m->op.type != JOP_SYMLINK)
			serve_split_held_parent(s, &m->op, m->op.path2, JRES_DIR2);
	} else {
		if (m->op.type == JOP_SETATTR && (m->op.attr_mask & JATTR_MTIME))
			hold_forget_mtime(&s->hold, m->op.path);	/* the primary's */
		serve_split_keep_parent_mtime(s, m->op.path,
					      m->op.res_mask & JRES_BIT(JRES_DIR));
		if (m->op.type != JOP_SYMLINK)
			serve_split_keep_parent_mtime(s, m->op.path2,
						      m->op.res_mask & JRES_BIT(JRES_DIR2));
	}
}

/* PRUNE: never removes a held path (hold_prune_keep). */
static void serve_split_prune(struct serve *s, struct proto_prune *m)
{
	char *keep = NULL;
	int rc;

	if (hold_subtree(&s->hold, m->path)) {
		serve_split_held(s, m->path);
		return;
	}
	rc = hold_prune_keep(&s->hold, m, &keep);
	if (rc == 0)
		rc = receiver_prune(s->recv, m);
	free(keep);
	if (rc < 0) {
		serve_split_failed(s, "prune", receiver_failed_path(s->recv), NULL, rc);
		return;
	}
	serve_split_keep_mtime(s, m->path);	/* its entries went */
}

/* A frame of the primary's stream during the split brain. 0, or -EBADMSG
 * (malformed). */
static int serve_split_stream_frame(struct serve *s, const struct proto_frame *f)
{
	uint64_t seq;
	int rc;

	switch (f->h.type) {
	case PROTO_OP: {
		struct proto_op m;

		if (proto_decode_op(f, &m) < 0)
			return -EBADMSG;
		serve_split_op(s, &m);
		return 0;
	}
	case PROTO_DATA: {
		struct proto_data m;

		if (proto_decode_data(f, &m) < 0)
			return -EBADMSG;
		if (hold_covers(&s->hold, m.path) || hold_above(&s->hold, m.path) ||
		    hold_alias(&s->hold, receiver_store_fd(s->recv), m.path))
			serve_split_held(s, m.path);
		else if ((rc = receiver_data(s->recv, &m)) < 0)
			serve_split_failed(s, "write", m.path, NULL, rc);
		else
			serve_split_keep_parent_mtime(s, m.path, false);	/* it may create it */
		return 0;
	}
	case PROTO_ATTR: {
		struct proto_attr m;

		if (proto_decode_attr(f, &m) < 0)
			return -EBADMSG;
		/* a folder above a held path takes its attributes */
		if (hold_covers(&s->hold, m.path) ||
		    hold_alias(&s->hold, receiver_store_fd(s->recv), m.path))
			serve_split_held(s, m.path);
		else if ((rc = receiver_attr(s->recv, &m)) < 0)
			serve_split_failed(s, "setattr", m.path, NULL, rc);
		else
			hold_forget_mtime(&s->hold, m.path);	/* the primary's now */
		return 0;
	}
	case PROTO_PRUNE: {
		struct proto_prune m;

		if (proto_decode_prune(f, &m) < 0)
			return -EBADMSG;
		serve_split_prune(s, &m);
		return 0;
	}
	case PROTO_HASH_REQ:
		return serve_hash_req(s, f) == -EBADMSG ? -EBADMSG : 0;
	case PROTO_BATCH_END:
		/* nothing of this stream is made durable or recorded (the store
		 * is marked dirty): the ACK only paces the primary's window */
		if (proto_decode_seq(f, &seq) < 0)
			return -EBADMSG;
		proto_encode_ack(bufferevent_get_output(s->bev), seq);
		s->last_tx_ns = clock_mono_ns();
		return 0;
	default:
		serve_conn_fail(s, PROTO_E_SPLITBRAIN, "%s frame during a split brain: %s",
				proto_type_name(f->h.type), s->bind.why);
		return 0;
	}
}

/*
 * `twinfs resolve`, this node's part (the primary leads): the versions
 * this node loses go to STATE/conflicts/<stamp>-resolve, the ones the
 * primary takes are sent (versions.c), and once the primary has queued
 * its state of every diverged path this node takes its history and
 * resumes at the common point; the connection closes so that the primary
 * reconnects into the ordinary stream.
 */
static void serve_resolve_done(struct serve *s, const struct proto_resolve *m)
{
	uint64_t resume = s->bind.common;
	int rc;

	serve_split_reset(s);	/* back to this node's own seq, then to resume */
	rc = receiver_set_position(s->recv, resume);
	if (rc == 0)
		rc = binding_resolved(&s->bind, m->seq);
	if (rc < 0) {
		serve_conn_fail(s, PROTO_E_APPLY, "cannot record the resolution on %s: %s",
				s->node_name, strerror(-rc));
		return;
	}
	s->commit_seq = resume;
	divergence_free(&s->div);
	serve_set_error(s, "%s", "");
	proto_encode_goodbye(bufferevent_get_output(s->bev), "split brain resolved");
	s->last_tx_ns = clock_mono_ns();
	serve_set_state(s, PEER_CLOSING);
}

static void serve_split_resolve(struct serve *s, const struct proto_frame *f)
{
	struct proto_resolve m;

	if (proto_decode_resolve(f, &m) < 0) {
		serve_conn_fail(s, PROTO_E_BADFRAME, "malformed RESOLVE frame");
	} else if (m.step == PROTO_RS_BEGIN) {
		const char *err = splitres_begin(&s->div, &m, s->o->state,
						 receiver_store_fd(s->recv), s->node_name,
						 bufferevent_get_output(s->bev));

		/* `twinfs resolve` waiting on this node reads it (status) */
		snprintf(s->res_error, sizeof(s->res_error), "%s", err ? err : "");
		s->last_tx_ns = clock_mono_ns();
	} else if (m.step == PROTO_RS_DONE) {
		serve_resolve_done(s, &m);
	} else if (m.step == PROTO_RS_FAILED) {
		log_error("the primary could not resolve the split brain", "why=\"%s\"",
			  m.name);
		serve_set_error(s, "resolve failed on the primary: %s", m.name);
		snprintf(s->res_error, sizeof(s->res_error), "on the primary: %s", m.name);
	}
}

/* Split brain: the exchange of diverged paths, then the primary's stream
 * (serve_split_stream) until the primary goes or `twinfs resolve`. */
void serve_on_split_frame(struct serve *s, const struct proto_frame *f)
{
	uint64_t t;
	int rc;

	switch (f->h.type) {
	case PROTO_DIVERGED:
		rc = divergence_on_frame(&s->div, receiver_store_fd(s->recv), f,
					 bufferevent_get_output(s->bev));
		if (rc < 0) {
			serve_conn_fail(s, PROTO_E_BADFRAME, "malformed DIVERGED frame");
			return;
		}
		if (rc == 1 && !s->div_logged) {
			log_warn("SPLIT BRAIN: paths changed on both nodes after their common "
				 "point; nothing is overwritten (twinfs status lists them, twinfs "
				 "resolve decides)", "peer=%s diverged=%zu first=/%s", s->peer,
				 s->div.n, s->div.n ? s->div.e[0].path : "");
			s->div_logged = true;
		}
		if (rc == 1)
			serve_split_stream(s);
		return;
	case PROTO_HEARTBEAT:
		if (proto_decode_heartbeat(f, &t) < 0)
			serve_conn_fail(s, PROTO_E_BADFRAME, "malformed HEARTBEAT frame");
		return;
	case PROTO_RESOLVE:
		serve_split_resolve(s, f);
		return;
	case PROTO_GOODBYE:
	case PROTO_ERROR:
		serve_conn_free(s);
		return;
	default:
		if (!s->split_stream)
			serve_conn_fail(s, PROTO_E_SPLITBRAIN, "%s frame during a split brain: "
					"%s", proto_type_name(f->h.type), s->bind.why);
		else if (serve_split_stream_frame(s, f) == -EBADMSG)
			serve_conn_fail(s, PROTO_E_BADFRAME, "malformed %s frame",
					proto_type_name(f->h.type));
		return;
	}
}
