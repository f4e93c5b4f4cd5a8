/*
 * lineage — the primary's generations (lineage.h): its history, the
 * generation it begins when writing apart, the verdict on a secondary's
 * HELLO, a demoted peer's tail turned into NEEDS_SCANs. Primary thread's
 * loop only; small state files written with blocking IO.
 */
#include "netsync/primary/lineage.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "journal/journal.h"
#include "netsync/control/ctljson.h"
#include "netsync/delta/inventory.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto_gen.h"

/*
 * Why a primary begins a generation when it writes while apart: those
 * changes were made without the peer's knowledge, and if the peer was
 * promoted meanwhile, both lines went on after a common point — a split
 * brain the next meeting must see, not a lag it would quietly repair.
 * Changes made while still connected that never arrived (async lag at a
 * crash) stay in the old generation: the peer's new one began after its
 * last applied seq, so they show up as a lagged tail, kept as conflict
 * copies.
 */
int lineage_open(struct lineage *l, const char *state, const uint8_t node[16],
		 uint64_t head, uint64_t acked)
{
	int rc;

	memset(l, 0, sizeof(*l));
	l->state = strdup(state);
	if (!l->state)
		return -ENOMEM;
	memcpy(l->node, node, 16);
	rc = history_load(state, &l->hist);
	if (rc < 0)
		return rc;
	if (l->hist.role != HISTORY_PRIMARY || !l->hist.n)
		return -EINVAL;	/* mount_cmd makes it a primary's first */
	l->apart = true;
	l->apart_head = head;
	l->shared = acked > history_cur(&l->hist)->start;
	return 0;
}

void lineage_close(struct lineage *l)
{
	free(l->state);
	l->state = NULL;
}

void lineage_apart(struct lineage *l, uint64_t head)
{
	if (l->apart)
		return;
	l->apart = true;
	l->begun = false;
	l->apart_head = head;
}

void lineage_check(struct lineage *l, uint64_t head)
{
	struct history h;
	int rc;

	if (!l->apart || l->begun || !l->shared || head <= l->apart_head)
		return;
	h = l->hist;
	rc = history_begin(&h, l->apart_head, l->node);
	if (rc == 0)
		rc = history_save(l->state, &h);
	if (rc < 0) {
		log_error("cannot record a new generation", "state=%s err=%s", l->state,
			  strerror(-rc));
		return;
	}
	l->hist = h;
	l->begun = true;
	l->shared = false;	/* no peer has seen this one yet */
	log_notice("writing while the peer is unreachable: a new generation begins",
		   "generation=%" PRIu64 " from_seq=%" PRIu64, h.g[h.n - 1].num,
		   l->apart_head);
}

void lineage_hello(const struct lineage *l, struct proto_hello *h)
{
	const struct history *hi = &l->hist;

	h->hist_n = (uint16_t)(hi->n < PROTO_HIST_MAX ? hi->n : PROTO_HIST_MAX);
	for (size_t i = 0; i < h->hist_n; i++) {
		const struct history_gen *g = &hi->g[hi->n - h->hist_n + i];

		h->hist[i].num = g->num;
		h->hist[i].id = g->id;
		h->hist[i].start = g->start;
		memcpy(h->hist[i].node, g->node, 16);
	}
}

int lineage_on_hello(struct lineage *l, const struct proto_hello *h, uint64_t head,
		     uint64_t *resume)
{
	struct history_decision d;
	struct history sh = { .role = HISTORY_SECONDARY };

	for (size_t i = 0; i < h->hist_n && i < HISTORY_MAX; i++) {
		sh.g[i].num = h->hist[i].num;
		sh.g[i].id = h->hist[i].id;
		sh.g[i].start = h->hist[i].start;
		memcpy(sh.g[i].node, h->hist[i].node, 16);
		sh.n++;
	}
	l->decided = true;
	l->tail_paths = l->tail_seq = l->tail_same = 0;
	if (h->flags & PROTO_HELLO_F_PROMOTED) {
		l->verdict = HISTORY_AHEAD;
		snprintf(l->why, sizeof(l->why), "the peer was promoted to primary: it takes "
			 "no primary; demote this node (`twinfs demote`) and serve it from there");
	} else {
		history_decide(&l->hist, head, &sh, h->applied_seq,
			       (h->flags & PROTO_HELLO_F_TAIL) != 0, &d);
		l->verdict = d.verdict;
		l->common = d.common;
		snprintf(l->why, sizeof(l->why), "%s", d.why);
		*resume = d.verdict == HISTORY_LAGGED ? d.resume : h->applied_seq;
	}
	if (!history_accepts(l->verdict) || (h->flags & PROTO_HELLO_F_PROMOTED)) {
		if (!l->logged)
			log_warn(l->verdict == HISTORY_SPLIT ? "SPLIT BRAIN: both nodes changed "
				 "files while apart; nothing is overwritten" :
				 "not replicating to this peer", "verdict=%s why=\"%s\"",
				 history_verdict_name(l->verdict), l->why);
		l->logged = true;
		return -EPROTO;
	}
	l->logged = false;
	l->apart = false;
	l->begun = false;
	l->shared = true;
	return 0;
}

int lineage_on_tail_entry(struct lineage *l, struct journal *j, int store_fd,
			  const struct proto_entry *e)
{
	struct inventory inv = { 0 };
	uint32_t flags = 0;
	int64_t seq;
	int rc;

	if (path_check(e->path, false) < 0)
		return -EBADMSG;
	/* the content is read (on this loop) only when the peer hashed its
	 * own and everything else already matches; a file it left unhashed
	 * (past its budget) is compared by the NEEDS_SCAN's block hashes */
	rc = inventory_add_path(&inv, store_fd, e->path, false);
	if (rc == 1 && S_ISREG(e->mode) && (e->flags & PROTO_ENTRY_F_HASHED) &&
	    inv.e[0].mode == e->mode && inv.e[0].size == e->size &&
	    inv.e[0].mtime_ns == e->mtime_ns) {
		inventory_free(&inv);
		rc = inventory_add_path(&inv, store_fd, e->path, true);
	}
	if ((rc == 1 && e->mode && inventory_entry_same(&inv.e[0], e)) || (rc == 0 && !e->mode)) {
		inventory_free(&inv);
		l->tail_same++;
		return 0;
	}
	/* both folders: their entry and names; what changed below them is
	 * in the tail on its own, or in this node's records */
	if (rc == 1 && S_ISDIR(inv.e[0].mode) && S_ISDIR(e->mode))
		flags = JSCAN_NAMES;
	inventory_free(&inv);
	seq = journal_needs_scan(j, e->path, flags);
	if (seq < 0)
		return (int)seq;
	if ((uint64_t)seq > l->tail_seq)
		l->tail_seq = (uint64_t)seq;
	l->tail_paths++;
	return 0;
}

int lineage_on_tail(struct lineage *l, struct journal *j, const struct proto_frame *f,
		    struct evbuffer *out)
{
	struct proto_tail t;
	int rc;

	rc = proto_decode_tail(f, &t);
	if (rc < 0)
		return rc;
	if (!(t.flags & PROTO_TAIL_F_LAST))
		return 0;
	rc = journal_commit(j);
	if (rc < 0)
		return rc;
	log_notice("the peer was a primary: resending this store's state of the paths it "
		   "changed that differ here", "differ=%" PRIu64 " same=%" PRIu64
		   " up_to_seq=%" PRIu64, l->tail_paths, l->tail_same, l->tail_seq);
	return proto_encode_tail_ack(out, l->tail_seq);
}

bool lineage_refused(const struct lineage *l)
{
	return l->decided && !history_accepts(l->verdict);
}

void lineage_status(const struct lineage *l, struct ctljson *j)
{
	const struct history_gen *g = history_cur(&l->hist);
	char gs[32];

	history_gen_str(g, gs, sizeof(gs));
	ctljson_u64(j, "generation", g ? g->num : 0);
	ctljson_str(j, "generation_id", g ? gs : NULL);
	ctljson_str(j, "verdict", l->decided ? history_verdict_name(l->verdict) : NULL);
	ctljson_str(j, "verdict_why", l->decided ? l->why : NULL);
	ctljson_bool(j, "split_brain", l->decided && l->verdict == HISTORY_SPLIT);
}
