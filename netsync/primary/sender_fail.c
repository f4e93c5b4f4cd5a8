/*
 * sender_fail — how the sender meets the peer's failures (sender_int.h):
 * an apply error on a path (repaired from the store, with a backoff once
 * the path is stuck), a peer that holds the stream because its store is
 * full or read-only (ERROR with RETRY), and a series of failures of one
 * kind (a growing wait before the next connection, until progress), and
 * an apply error that a baseline answers better than a repair. Runs
 * on the primary thread's loop, as the rest of the sender.
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "journal/journal.h"
#include "netsync/primary/repairs.h"
#include "netsync/wire/path.h"

/*
 * Apply errors. The peer reports that it cannot apply what it was sent
 * (a path missing that it should have, a type in the way, ...) and drops
 * the connection; its position stays before the failing batch. Replaying
 * that batch would fail the same way, for ever. So the failing path is
 * repaired from the store instead: on the replay every record naming it
 * (or a path below it), up to the journal head at the failure, is replaced
 * by the path's current state, the peer's copy removed first (the
 * parent's names without it) and sent anew (sender_put_replace); a rename
 * that names it repairs its new name too. If no record names it (the
 * failure was on file data), the replay's BATCH record carries the
 * repair. Whatever state the replace sends, the records after it replay
 * on top of it (the ordering argument of "Baseline", sender_walk.c). The
 * path is repaired once the peer acks a batch that carried it. Logged at
 * warning level the first time; a path that fails again counts as stuck
 * (status shows it, `twinfs sync` does not succeed) and each further
 * failure doubles the wait before reconnecting, up to 30 s, instead of
 * reconnecting in a tight loop. Returns 0, or -EINVAL if the text names
 * no path (the connection is then dropped as for any error).
 */
int sender_on_apply_error(struct sender *s, const char *text)
{
	struct journal_stats js;
	char what[32], path[PROTO_PATH_MAX + 1], dir[PROTO_PATH_MAX + 1];
	const char *fix = path;
	struct repair *r;
	uint32_t ms;

	if (repairs_parse(text, what, sizeof(what), path, sizeof(path)) < 0 ||
	    path_check(path, true) < 0)
		return -EINVAL;
	/* the folder the peer lacks on the way, if it named one: repairing it
	 * carries the path, where repairing the path alone would fail again */
	if (repairs_hint(text, path, dir, sizeof(dir)) == 0 && path_check(dir, false) == 0)
		fix = dir;
	journal_get_stats(s->j, &js);
	r = repairs_note(&s->repairs, fix, what, text, js.head_seq, true);
	if (!r)
		return -EINVAL;
	s->apply_errors++;
	if (r->failures == 1)
		log_warn("the peer could not apply a change; repairing the path from "
			 "this store", "peer=%s path=/%s repair=/%s op=%s text=\"%s\"",
			 s->peer, path, fix, what, text);
	else if (r->failures == REPAIRS_STUCK_AFTER)
		log_warn("a path is stuck: the peer fails to apply it again after a "
			 "repair; retrying with backoff", "peer=%s path=/%s repair=/%s op=%s "
			 "text=\"%s\"", s->peer, path, fix, what, text);
	else
		log_info("the peer failed on a stuck path again", "peer=%s path=/%s "
			 "repair=/%s failures=%u", s->peer, path, fix, r->failures);
	ms = repairs_backoff_ms(&s->repairs);
	if (ms > s->backoff_ms)
		s->backoff_ms = ms;
	return 0;
}

/*
 * The peer cannot apply for now and says so without dropping the link
 * (ERROR with RETRY: its store is full). It holds our stream, retries
 * every second, and ends the stall with an empty RETRY text once it
 * applies again; meanwhile nothing is re-sent (what we sent waits in the
 * socket buffers) and nothing reconnects. The reason shows as last_error
 * and peer_stalled in status and in a failing `twinfs sync`. Logged once
 * when it starts (the peer logs it once a minute while it lasts) and once
 * when it ends; a new connection to a peer still full starts it again.
 */
void sender_on_peer_stalled(struct sender *s, const char *text)
{
	if (!text[0]) {
		if (s->stalled[0])
			log_notice("the peer applies changes again", "peer=%s stalled_s=%.1f",
				   s->peer, clock_mono_s() - s->stalled_since);
		s->stalled[0] = '\0';
		s->last_error[0] = '\0';
		return;
	}
	if (!s->stalled[0]) {
		s->stalled_since = clock_mono_s();
		log_warn("the peer cannot apply changes for now; it holds the stream and "
			 "retries (nothing is re-sent)", "peer=%s err=\"%s\"", s->peer, text);
	}
	snprintf(s->stalled, sizeof(s->stalled), "%s", text);
	sender_set_error(s, "peer %s: %s", s->peer, text);
}

/*
 * Repeated failures of one kind. A peer that reports the same failure on
 * every connection (the same ERROR code and reason: the text after its
 * last colon; not a path it failed on, which the repairs handle) had the
 * mount reconnect every 0.2 s, because the backoff restarts at each good
 * HELLO. So a failure of the kind of the one
 * before, with no progress acknowledged since, doubles the wait before
 * the next connection, up to 30 s, and only an ACK past the point of the
 * failure ends the series. Returns true when the failure is to be logged
 * loud: the first of a series, then once a minute.
 */
bool sender_note_failure(struct sender *s, uint32_t code, const char *text)
{
	const char *why = strrchr(text, ':');
	struct journal_stats js;
	double now = clock_mono_s();
	char kind[sizeof(s->fail_kind)];
	uint32_t ms = BACKOFF_MIN_MS;

	snprintf(kind, sizeof(kind), "%u%s", (unsigned)code, why ? why : text);
	journal_get_stats(s->j, &js);
	if (s->fail_count && strcmp(kind, s->fail_kind) == 0) {
		s->fail_count++;
	} else {
		s->fail_count = 1;
		s->fail_logged = 0;
		snprintf(s->fail_kind, sizeof(s->fail_kind), "%s", kind);
	}
	s->fail_acked = js.acked_seq;
	for (unsigned k = 1; k < s->fail_count && ms < BACKOFF_FAIL_MAX_MS; k++)
		ms *= 2;
	if (ms > BACKOFF_FAIL_MAX_MS)
		ms = BACKOFF_FAIL_MAX_MS;
	if (ms > s->backoff_ms)
		s->backoff_ms = ms;
	if (s->fail_count > 1 && now - s->fail_logged < 60)
		return false;
	s->fail_logged = now;
	return true;
}

/*
 * A peer interrupted mid-apply holds some of the replayed records'
 * effects already, in no order the records can be replayed over: a later
 * rename can have moved the folder an earlier record names, an offline
 * edit's scan can have pruned it. Repairing path by path then fails on one
 * path after another, a reconnect (and soon a backoff) each, and does not
 * converge in any useful time. A baseline covers every record of the
 * window in one pass (its walk sends the store's state and prunes what the
 * peer alone has), so the next connection sends one. Once until the peer
 * acks past the window (sender_flush_ack): the failures after it (in the
 * baseline, or a replay of it cut short) are repaired path by path, or a
 * path the peer can never take would cost a whole-store walk on every
 * other connection. True if a baseline was asked for.
 */
bool sender_rebaseline_dirty(struct sender *s, const char *text)
{
	if (!s->dirty_replay || s->dirty_rebaselined)
		return false;
	log_notice("the peer, interrupted mid-apply, could not replay a change; "
		   "sending a baseline of the whole store", "peer=%s text=\"%s\" "
		   "window_end=%llu", s->peer, text, (unsigned long long)s->repair_until);
	s->rebaseline = true;
	s->rebaseline_why = "the peer, interrupted mid-apply, failed to replay a change";
	s->dirty_replay = false;
	s->dirty_rebaselined = true;
	return true;
}

/*
 * A walk reads directories while names change (readdir may miss a renamed
 * entry or return it under both names), so the peer can fail to replay a
 * rename that ran during the walk. Replaying it again would fail again:
 * instead the next connection sends a new baseline, which covers those
 * records.
 */
void sender_rebaseline_walk(struct sender *s)
{
	if (!s->walk_window_end)
		return;
	log_notice("the peer could not apply a change made while a subtree was being "
		   "sent; sending a baseline of the whole store again", "peer=%s "
		   "window_end=%llu", s->peer, (unsigned long long)s->walk_window_end);
	s->rebaseline = true;
	s->rebaseline_why = "the peer failed to replay a change made during a walk";
}
