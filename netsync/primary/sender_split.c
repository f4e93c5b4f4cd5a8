/*
 * sender_split — the primary's side of a split brain (docs/protocol.md,
 * "Split brain"): the exchange of diverged paths; then the stream of
 * this node's changes from the common point, which the secondary applies
 * to every path it did not change itself (it holds the others back and
 * names them in DIVERGED frames flagged HELD); and `twinfs resolve`,
 * which this node leads. No ack of that stream reaches the journal: the
 * peer holds another node's changes, and the window from the common point
 * is what the resolution replays. Loop thread of the replication thread.
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/bufferevent.h>

#include "common/json.h"
#include "common/log.h"
#include "journal/journal.h"
#include "netsync/control/ctljson.h"
#include "netsync/primary/sentmap.h"
#include "netsync/primary/treewalk.h"
#include "netsync/roles/resolution.h"
#include "netsync/roles/tail.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto_gen.h"

/* In a split brain whose exchange is complete: `resolve` can run. */
static bool sender_splitting(const struct sender *s)
{
	return (s->state == PEER_SPLIT || s->split_stream) && s->div.complete;
}

/* "" (a damaged journal): nothing to name. A renamed path is marked
 * too (tail_add_moved): a folder that moved stands for all it holds. */
static void sender_collect_path(const char *path, const char *why, void *arg)
{
	if (!path[0])
		return;
	if (strcmp(why, "renamed") != 0)
		tail_add(arg, path);
	if (!strcmp(why, "rename") || !strcmp(why, "renamed"))
		tail_add_moved(arg, path);
}

/*
 * Split brain (docs/protocol.md, "Split brain"): both nodes wrote after
 * their common point. Nothing is sent; the connection stays up while both
 * ends exchange what they changed (this node: its journal's records after
 * the peer's last ack), so that `status` on both lists every diverged
 * path, and `twinfs resolve` can act on it.
 */
int sender_split(struct sender *s)
{
	struct tail mine = { 0 };
	int rc;

	rc = journal_list_pending(s->state_dir, s->store_dir, sender_collect_path, &mine);
	if (rc == 0)
		rc = divergence_begin(&s->div, s->store_fd, mine.paths, mine.len,
				      bufferevent_get_output(s->bev));
	tail_free(&mine);
	if (rc < 0)
		return rc;
	s->div_stale = false;
	pathset_clear(&s->split_aliased);
	sender_set_state(s, PEER_SPLIT, "split brain");
	return 0;
}

static int sender_resolve_begin(struct sender *s, enum proto_keep keep)
{
	struct proto_resolve m = { .step = PROTO_RS_BEGIN, .keep = (uint8_t)keep };
	struct resolution plan;
	char stamp[32];
	int rc;

	if (!sender_splitting(s))
		return -ENOTCONN;
	resolution_stamp(stamp, sizeof(stamp));
	/* this store changed during the stream: its versions as they are */
	rc = divergence_refresh(&s->div, s->store_fd);
	if (rc == 0)
		rc = resolution_plan(&s->div, true, keep, s->peer_name[0] ? s->peer_name :
				     "peer", stamp, &plan);
	if (rc == 0)
		rc = resolver_start(&s->res, &plan, false, stamp);
	resolution_free(&plan);
	if (rc < 0)
		return rc;
	s->res_error[0] = '\0';	/* `resolve` reads a failure here (status) */
	log_warn("RESOLVING the split brain", "peer=%s keep=%s paths=%zu", s->peer,
		 keep == PROTO_KEEP_PRIMARY ? "primary" : keep == PROTO_KEEP_SECONDARY ?
		 "secondary" : "both", s->div.n);
	m.stamp = stamp;
	m.name = s->peer_name[0] ? s->peer_name : "peer";
	m.seq = s->div.held;	/* the secondary checks it planned the same list */
	/* the secondary plans from the versions this plan used */
	rc = divergence_send_refresh(&s->div, bufferevent_get_output(s->bev));
	return rc < 0 ? rc : proto_encode_resolve(bufferevent_get_output(s->bev), &m);
}

static int sender_on_resolve(struct sender *s, const struct proto_resolve *m)
{
	switch (m->step) {
	case PROTO_RS_REQUEST:
		return sender_resolve_begin(s, (enum proto_keep)m->keep);
	case PROTO_RS_RESTORE:
		if (s->state != PEER_STREAMING || s->split_stream)
			return -EPROTO;
		log_notice("the secondary restores a folder of conflict copies", "peer=%s",
			   s->peer);
		return resolver_start(&s->res, NULL, true, m->stamp);
	case PROTO_RS_FILES:
		return resolver_apply(&s->res);
	case PROTO_RS_FAILED:
		log_error("the secondary could not take part in the resolution", "peer=%s "
			  "why=\"%s\"", s->peer, m->name);
		snprintf(s->res_error, sizeof(s->res_error), "on the peer: %s", m->name);
		resolver_reset(&s->res);
		/* both lists are made again on the next connection */
		return s->div_stale ? -ECONNRESET : 0;
	default:
		return -EPROTO;
	}
}

/* The resolver's worker is done (loop thread): every diverged path's
 * state as this store now holds it is owed to the secondary, which then
 * takes this node's history and resumes at the common point. */
void sender_resolved(struct resolver *r, int rc, void *arg)
{
	struct sender *s = arg;
	struct proto_resolve m = { .step = PROTO_RS_DONE };
	uint64_t max = 0;

	if (!s->bev)
		return;
	if (r->restore) {
		m.step = rc < 0 ? PROTO_RS_FAILED : PROTO_RS_DONE;
		m.name = rc < 0 ? r->err : "";
		proto_encode_resolve(bufferevent_get_output(s->bev), &m);
		log_warn("RESTORED conflict copies through the mount", "peer=%s files=%zu%s%s",
			 s->peer, r->n, rc < 0 ? " err=" : "", rc < 0 ? r->err : "");
		return;
	}
	if (rc < 0) {
		m.step = PROTO_RS_FAILED;
		m.name = r->err;
		proto_encode_resolve(bufferevent_get_output(s->bev), &m);
		log_error("cannot resolve the split brain", "peer=%s why=\"%s\"", s->peer, r->err);
		snprintf(s->res_error, sizeof(s->res_error), "%s", r->err);
		if (s->div_stale)	/* both lists are made again */
			sender_disconnect(s, "the split brain's lists changed during a resolve");
		return;
	}
	for (size_t i = 0; i < r->plan.n; i++) {
		int64_t seq = journal_needs_scan(s->j, r->plan.it[i].e->path, 0);

		if (seq > 0 && (uint64_t)seq > max)
			max = (uint64_t)seq;
	}
	journal_commit(s->j);
	m.seq = max;
	proto_encode_resolve(bufferevent_get_output(s->bev), &m);
	log_warn("RESOLVED the split brain: the secondary takes this node's state of every "
		 "diverged path", "peer=%s paths=%zu up_to_seq=%llu conflicts=%s", s->peer,
		 r->plan.n, (unsigned long long)max, r->plan.folder);
	s->lin.decided = false;
	s->backoff_ms = BACKOFF_MIN_MS;	/* the secondary closes; come back at once */
}

void sender_resolve_cmd(struct sender *s, const char *word, bool dry, struct evbuffer *out)
{
	struct ctljson j;
	struct resolution plan = { 0 };
	enum proto_keep keep;
	char err[300] = "", line[4400], stamp[32];
	int rc = 0;

	ctljson_begin(&j, out);
	if (!s || resolution_keep(word, true, &keep) < 0) {
		snprintf(err, sizeof(err), "--keep wants local, peer or both");
	} else if (!sender_splitting(s)) {
		snprintf(err, sizeof(err), "no split brain to resolve%s", s->state == PEER_SPLIT ?
			 " yet: the nodes are still exchanging their paths" : " (the peer must be "
			 "connected and in a split brain: see twinfs status)");
	} else if (s->res.active) {
		snprintf(err, sizeof(err), "a resolution is already running");
	} else {
		resolution_stamp(stamp, sizeof(stamp));
		rc = divergence_refresh(&s->div, s->store_fd);
		if (rc == 0)
			rc = resolution_plan(&s->div, true, keep, s->peer_name, stamp, &plan);
		if (rc == 0 && !dry)
			rc = sender_resolve_begin(s, keep);
		if (rc < 0)
			snprintf(err, sizeof(err), "cannot resolve: %s", strerror(-rc));
	}
	ctljson_bool(&j, "ok", err[0] == '\0');
	if (err[0])
		ctljson_str(&j, "error", err);
	else
		ctljson_str(&j, "result", dry ? "dry-run" : "started");
	json_key(ctljson_json(&j), "plan");
	json_array_begin(ctljson_json(&j));
	for (size_t i = 0; i < plan.n; i++) {
		resolution_describe(&plan, true, i, line, sizeof(line));
		json_string(ctljson_json(&j), line);
	}
	json_array_end(ctljson_json(&j));
	ctljson_end(&j);
	resolution_free(&plan);
}


/*
 * Both lists are in: this node's changes from the common point go out as
 * a replay over a store that may hold later ones (the secondary's store
 * holds its own changes, and what an earlier connection of this split
 * brain applied), so every path changed since is sent whole at its batch
 * (the dirty replay of sender_on_hello). A path only this node changed
 * leaves the list: it is no conflict, the stream carries it.
 */
static void sender_split_stream(struct sender *s)
{
	struct journal_stats js;
	int rc;

	divergence_keep_secondary(&s->div, false);
	journal_get_stats(s->j, &js);
	sender_scan_forget(s);
	rc = journal_rewind(s->j, s->lin.common);
	if (rc < 0) {
		log_warn("split brain: the journal no longer reaches back to the common "
			 "point; nothing is sent until twinfs resolve", "peer=%s common_seq=%llu "
			 "err=%s", s->peer, (unsigned long long)s->lin.common, strerror(-rc));
		return;
	}
	sentmap_clear(s->held);	/* the peer's store is not this one's replica */
	memset(s->held_node, 0, sizeof(s->held_node));
	s->resume_until = s->repair_until = js.head_seq;
	s->dirty_replay = true;
	s->split_stream = true;
	for (size_t i = 0; i < s->repairs.n; i++)
		s->repairs.r[i].sent_end = 0;
	log_notice("split brain: sending this node's changes of every path the peer did not "
		   "change", "peer=%s common_seq=%llu head_seq=%llu diverged=%zu", s->peer,
		   (unsigned long long)s->lin.common, (unsigned long long)js.head_seq, s->div.n);
	sender_set_state(s, PEER_STREAMING, "split brain: streaming what does not conflict");
	sender_kick(s);
}

/* "dev:ino" of ST into ID (48 bytes). */
static void sender_split_ino(const struct stat *st, char *id)
{
	snprintf(id, 48, "%llx:%llx", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
}

/*
 * Other names of a file the secondary listed. The primary's change of a
 * file through a name the secondary removed (or replaced) changes the
 * file's other names here too, but the stream carries it under that name
 * only, which the secondary holds back: its other names there would keep
 * the old version, unlisted. So once the secondary lists a path that is a
 * file with several names here, every other name that the list lacks is
 * sent whole (NEEDS_SCAN): the secondary applies it, or holds it back
 * (and lists it) if it changed that name or its file itself. One walk of
 * the store (stat only) per call that finds such files, on the loop.
 */
static void sender_split_aliases(struct sender *s)
{
	struct treewalk *w = NULL;
	struct treewalk_item it;
	struct pathset inos;
	struct path_ref ref;
	struct stat st;
	char id[48];
	int rc, n = 0;

	pathset_init(&inos);
	for (size_t i = 0; i < s->div.n; i++) {
		const struct div_entry *e = &s->div.e[i];

		if (!e->changed_peer || pathset_find(&s->split_aliased, e->path) ||
		    pathset_add(&s->split_aliased, e->path, 0) < 0 ||
		    path_resolve(s->store_fd, e->path, false, &ref) < 0)
			continue;
		if (fstatat(ref.dirfd, ref.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_nlink > 1) {
			sender_split_ino(&st, id);
			pathset_add(&inos, id, 0);
		}
		path_put(&ref);
	}
	if (!inos.n)
		goto out;
	rc = treewalk_open(s->store_fd, "", &w);
	while (rc >= 0 && (rc = treewalk_next(w, &it)) > 0) {
		if (it.leave || !S_ISREG(it.st.st_mode) || it.st.st_nlink < 2)
			continue;
		sender_split_ino(&it.st, id);
		if (!pathset_find(&inos, id) || divergence_lookup(&s->div, it.path))
			continue;
		if (journal_needs_scan(s->j, it.path, 0) > 0) {
			log_notice("split brain: sending another name of a file the peer listed "
				   "(the change it holds back changed this one too)",
				   "peer=%s path=/%s", s->peer, it.path);
			n++;
		}
	}
	treewalk_free(w);
	if (rc < 0)
		log_warn("split brain: cannot search the store for the other names of a "
			 "listed file; they converge at resolve", "peer=%s err=%s", s->peer,
			 strerror(-rc));
	if (n)
		sender_kick(s);
out:
	pathset_clear(&inos);
}

int sender_split_frame(struct sender *s, const struct proto_frame *fr)
{
	struct proto_diverged dm;
	struct proto_resolve m;
	int rc;

	if (fr->h.type == PROTO_RESOLVE) {
		rc = proto_decode_resolve(fr, &m);
		return rc < 0 ? rc : sender_on_resolve(s, &m);
	}
	if (s->state != PEER_SPLIT && !s->split_stream)
		return -EPROTO;
	/* the resolver's worker reads the list: a path held back meanwhile
	 * is left out, and a failed resolution starts both lists again */
	if (s->res.active && proto_decode_diverged(fr, &dm) == 0 &&
	    (dm.flags & PROTO_DIV_F_HELD)) {
		s->div_stale = true;
		return 0;
	}
	rc = divergence_on_frame(&s->div, s->store_fd, fr, bufferevent_get_output(s->bev));
	if (rc == 1)
		log_warn("SPLIT BRAIN: paths changed on both nodes after their common "
			 "point; nothing is overwritten (twinfs status lists them, twinfs "
			 "resolve decides)", "peer=%s diverged=%zu first=/%s", s->peer,
			 s->div.n, s->div.n ? s->div.e[0].path : "");
	if (rc == 2)
		log_notice("split brain: the peer held back a change of this node's (it "
			   "changed the path too)", "peer=%s diverged=%zu", s->peer, s->div.n);
	if (rc == 1)
		sender_split_stream(s);
	if ((rc == 1 || rc == 2) && s->split_stream)
		sender_split_aliases(s);
	return rc < 0 ? rc : 0;
}
