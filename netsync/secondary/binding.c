/*
 * binding — the secondary's side of generations (binding.h): which
 * primary it takes, the tail it hands a new primary, promotion. Runs on
 * serve's loop only; never writes the store (the receiver does), only
 * files of the state directory and its conflict folders.
 */
#include "netsync/secondary/binding.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "netsync/control/ctljson.h"
#include "netsync/delta/inventory.h"
#include "netsync/delta/scan.h"
#include "netsync/roles/conflicts.h"
#include "netsync/wire/proto_gen.h"

int binding_open(struct binding *b, const char *state, const char *store,
		 const uint8_t node[16])
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->state = state;
	b->store = store;
	b->store_fd = -1;
	memcpy(b->node, node, 16);
	rc = history_load(state, &b->hist);
	if (rc < 0) {
		log_error("cannot read STATE/history", "state=%s err=\"%s\"", state,
			  strerror(-rc));
		return rc;
	}
	if (b->hist.role == HISTORY_PRIMARY) {
		/* serve_preflight refuses this; a promote may have raced it */
		log_error("the state directory is a primary's; run `twinfs demote` first",
			  "state=%s", state);
		return -EPERM;
	}
	if (b->hist.role == HISTORY_NONE) {
		b->hist.role = HISTORY_SECONDARY;
		rc = history_save(state, &b->hist);
		if (rc < 0)
			return rc;
	}
	rc = tail_load(state, &b->tail);
	if (rc < 0) {
		log_error("cannot read STATE/tail", "state=%s err=\"%s\"", state, strerror(-rc));
		return rc;
	}
	b->has_tail = rc == 1;
	if (b->has_tail)
		log_notice("this node was a primary: it keeps the paths it changed that its "
			   "peer may lack", "paths=%zu copies=conflicts/%s", b->tail.n,
			   b->tail.id);
	return 0;
}

void binding_close(struct binding *b)
{
	tail_free(&b->tail);
}

static void binding_to_proto(const struct history *h, struct proto_hello *m)
{
	m->hist_n = (uint16_t)(h->n < PROTO_HIST_MAX ? h->n : PROTO_HIST_MAX);
	for (size_t i = 0; i < m->hist_n; i++) {
		const struct history_gen *g = &h->g[h->n - m->hist_n + i];

		m->hist[i].num = g->num;
		m->hist[i].id = g->id;
		m->hist[i].start = g->start;
		memcpy(m->hist[i].node, g->node, 16);
	}
}

static void binding_from_proto(const struct proto_hello *m, struct history *h)
{
	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < m->hist_n && i < HISTORY_MAX; i++) {
		h->g[i].num = m->hist[i].num;
		h->g[i].id = m->hist[i].id;
		h->g[i].start = m->hist[i].start;
		memcpy(h->g[i].node, m->hist[i].node, 16);
	}
	h->n = m->hist_n < HISTORY_MAX ? m->hist_n : HISTORY_MAX;
}

void binding_hello(const struct binding *b, struct proto_hello *h)
{
	binding_to_proto(&b->hist, h);
	if (b->has_tail)
		h->flags |= PROTO_HELLO_F_TAIL;
	if (b->promoted)
		h->flags |= PROTO_HELLO_F_PROMOTED;
}

static uint32_t binding_refusal_code(enum history_verdict v)
{
	switch (v) {
	case HISTORY_SPLIT:
		return PROTO_E_SPLITBRAIN;
	case HISTORY_AHEAD:
		return PROTO_E_AHEAD;
	default:
		return PROTO_E_FOREIGN;
	}
}

static bool binding_same(const struct history *a, const struct history *b)
{
	return a->n == b->n && memcmp(a->g, b->g, a->n * sizeof(a->g[0])) == 0;
}

int binding_on_hello(struct binding *b, const struct proto_hello *h, uint64_t applied,
		     uint64_t *resume)
{
	struct history_decision d;
	struct history ph;

	if (b->promoted) {
		snprintf(b->why, sizeof(b->why), "this node was promoted to primary: it "
			 "takes no primary; mount it, or demote it to serve again");
		return PROTO_E_ROLE;
	}
	binding_from_proto(h, &ph);
	history_decide(&ph, h->head_seq, &b->hist, applied, b->has_tail, &d);
	b->peer_hist = ph;
	b->common = d.common;
	b->decided = true;
	b->verdict = d.verdict;
	snprintf(b->why, sizeof(b->why), "%s", d.why);
	if (!history_accepts(d.verdict)) {
		if (d.verdict != HISTORY_SPLIT || !b->split_logged)
			log_warn(d.verdict == HISTORY_SPLIT ? "SPLIT BRAIN: both nodes changed "
				 "files while apart; nothing is overwritten" :
				 "refusing a primary that would overwrite other data",
				 "verdict=%s why=\"%s\"", history_verdict_name(d.verdict), d.why);
		b->split_logged = d.verdict == HISTORY_SPLIT;
		return (int)binding_refusal_code(d.verdict);
	}
	b->split_logged = false;
	*resume = d.verdict == HISTORY_LAGGED ? d.resume : applied;
	if (d.verdict == HISTORY_LAGGED)
		log_warn("this node holds changes its new primary never got (writes of an old "
			 "primary that did not reach its peer): they are kept as conflict "
			 "copies and the primary's state replaces them", "copies=conflicts/%s "
			 "paths=%zu resume=%" PRIu64, b->tail.id, b->tail.n, *resume);
	b->tail_done_seq = 0;
	return 0;
}

/*
 * Bound: the primary's history becomes ours, durably, before the first
 * change is applied, and after the caller moved the position to where
 * the stream resumes. That order matters: a crash between the two must
 * not leave the primary's history beside a position from our own line,
 * which would read as "behind" and skip the primary's changes up to it.
 */
int binding_commit(struct binding *b)
{
	struct history ph = b->peer_hist;
	int rc;

	ph.role = HISTORY_SECONDARY;
	if (binding_same(&ph, &b->hist) && b->hist.role == HISTORY_SECONDARY)
		return 0;
	rc = history_save(b->state, &ph);
	if (rc < 0) {
		snprintf(b->why, sizeof(b->why), "cannot record the primary's history in the "
			 "state directory: %s", strerror(-rc));
		return rc;
	}
	b->hist = ph;
	return 0;
}

int binding_resolved(struct binding *b, uint64_t done_seq)
{
	int rc = binding_commit(b);

	if (rc < 0)
		return rc;
	/* the copies a demote kept go once the primary's state is here */
	if (b->has_tail)
		b->tail_done_seq = done_seq ? done_seq : 1;
	b->decided = false;
	b->split_logged = false;
	log_warn("RESOLVED the split brain: this node takes the primary's state of every "
		 "diverged path", "resume_seq=%" PRIu64 " up_to_seq=%" PRIu64, b->common, done_seq);
	return 0;
}

/*
 * The tail goes as one ENTRY per path (its state here: type, owner, mode,
 * size, mtime, xattr digest and, within a budget, the content's; mode 0
 * when the path is gone) and an empty TAIL flagged last: the primary
 * resends only the paths whose state differs from its own (lineage.c), so
 * that a failback costs what changed, not what the journal could not rule
 * out. Content is hashed here on serve's loop, so only up to
 * TAIL_HASH_BUDGET bytes per connection (the heartbeats wait meanwhile);
 * a file past it goes unhashed, and the primary's NEEDS_SCAN compares it
 * by block hashes instead (netsync/primary/sender_delta.c).
 */
#define TAIL_HASH_BUDGET (64ull << 20)

int binding_send_tail(struct binding *b, struct evbuffer *out)
{
	struct proto_tail end = { .flags = PROTO_TAIL_F_LAST, .paths = "", .len = 0 };
	uint64_t budget = TAIL_HASH_BUDGET;
	int rc = 0;

	if (!b->has_tail)
		return 0;
	for (size_t off = 0; rc >= 0 && off < b->tail.len;
	     off += strlen(b->tail.paths + off) + 1) {
		const char *path = b->tail.paths + off;
		struct inventory inv = { 0 };
		struct proto_entry gone = { .path = path };

		if (tail_moved(path))
			continue;
		rc = inventory_add_path(&inv, b->store_fd, path, false);
		if (rc == 1 && S_ISREG(inv.e[0].mode) && inv.e[0].size <= budget) {
			budget -= inv.e[0].size;
			inventory_free(&inv);
			rc = inventory_add_path(&inv, b->store_fd, path, true);
		}
		if (rc >= 0)
			rc = proto_encode_entry(out, rc == 1 ? &inv.e[0] : &gone);
		inventory_free(&inv);
	}
	return rc < 0 ? rc : proto_encode_tail(out, &end);
}

void binding_on_tail_ack(struct binding *b, uint64_t seq, uint64_t applied)
{
	b->tail_done_seq = seq ? seq : 1;
	binding_applied(b, applied);
}

void binding_applied(struct binding *b, uint64_t applied)
{
	size_t kept = 0;
	int left, rc;

	if (!b->has_tail || !b->tail_done_seq || applied < b->tail_done_seq)
		return;
	/* a TAIL_ACK of 0: the primary had every path as this node has it */
	for (size_t off = 0; off < b->tail.len; off += strlen(b->tail.paths + off) + 1) {
		if (tail_moved(b->tail.paths + off))
			continue;
		rc = conflicts_drop_same(b->state, b->tail.id, b->store_fd, b->tail.paths + off);
		if (rc > 0)
			kept++;
	}
	left = conflicts_finish(b->state, b->tail.id);
	rc = tail_remove(b->state);
	if (rc < 0) {
		log_error("cannot remove STATE/tail", "err=\"%s\"", strerror(-rc));
		return;
	}
	if (left > 0)
		log_warn("the primary's state replaced files this node had changed; its "
			 "versions are kept", "copies=%d folder=conflicts/%s hint=\"twinfs "
			 "status lists them; twinfs resolve --restore %s puts them back\"", left,
			 b->tail.id, b->tail.id);
	else
		log_notice("the primary had every change this node kept aside",
			   "paths=%zu", b->tail.n);
	(void)kept;
	tail_free(&b->tail);
	b->has_tail = false;
}

int binding_promote(struct binding *b, uint64_t applied, bool dirty)
{
	struct history h = b->hist;
	int rc;

	if (b->promoted)
		return 0;
	rc = history_begin(&h, applied, b->node);
	if (rc < 0)
		return rc;
	h.role = HISTORY_PRIMARY;
	/* the mount compares the store with this (scan_mount): nothing changed */
	rc = scan_unmount(b->store, b->state);
	if (rc < 0)
		log_warn("cannot write STATE/manifest; the first mount resends the whole "
			 "store to a returning peer", "err=\"%s\"", strerror(-rc));
	rc = history_save(b->state, &h);
	if (rc < 0)
		return rc;
	b->hist = h;
	b->promoted = true;
	log_warn("PROMOTED: this node is now a primary; serve takes no primary any more",
		 "generation=%" PRIu64 " start_seq=%" PRIu64 "%s", h.g[h.n - 1].num, applied,
		 dirty ? " note=\"a batch was half applied: its paths are resent when the "
		 "old primary returns\"" : "");
	return 0;
}

void binding_status(const struct binding *b, struct ctljson *j)
{
	const struct history_gen *g = history_cur(&b->hist);
	char gs[32];

	history_gen_str(g, gs, sizeof(gs));
	ctljson_str(j, "generation_id", g ? gs : NULL);
	ctljson_str(j, "state_role", history_role_name(b->hist.role));
	ctljson_bool(j, "promoted", b->promoted);
	ctljson_str(j, "verdict", b->decided ? history_verdict_name(b->verdict) : NULL);
	ctljson_str(j, "verdict_why", b->decided ? b->why : NULL);
	ctljson_bool(j, "split_brain", b->decided && b->verdict == HISTORY_SPLIT);
	ctljson_u64(j, "tail_paths", b->has_tail ? b->tail.n : 0);
}
