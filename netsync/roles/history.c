/*
 * history — STATE/history (role + generation entries) and the decision
 * two histories make on connect. The decision is a pure function so that
 * both ends, and the unit tests, compute it alike. File IO is blocking;
 * callers decide the thread. Must not touch the journal or the store.
 */
#include "netsync/roles/history.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "netsync/roles/state.h"

#define HISTORY_MAGIC "twinfs history 1"

const char *history_role_name(enum history_role r)
{
	switch (r) {
	case HISTORY_PRIMARY:
		return "primary";
	case HISTORY_SECONDARY:
		return "secondary";
	default:
		return "none";
	}
}

const char *history_verdict_name(enum history_verdict v)
{
	static const char *const names[] = {
		[HISTORY_NEW] = "new", [HISTORY_BEHIND] = "behind",
		[HISTORY_LAGGED] = "lagged", [HISTORY_AHEAD] = "ahead",
		[HISTORY_SPLIT] = "split-brain", [HISTORY_FOREIGN] = "foreign",
	};

	return (size_t)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

const struct history_gen *history_cur(const struct history *h)
{
	return h->n ? &h->g[h->n - 1] : NULL;
}

void history_gen_str(const struct history_gen *g, char *buf, size_t len)
{
	if (!g)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "g%" PRIu64 "/%08" PRIx64, g->num, g->id >> 32);
}

static void history_hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int history_unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n || strspn(s, "0123456789abcdef") != 2 * n)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EBADMSG;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int history_parse_line(struct history *h, char *line)
{
	char role[16], id[32], node[40];
	unsigned long long num, start;
	struct history_gen *g;

	if (sscanf(line, "role %15s", role) == 1) {
		if (strcmp(role, "primary") == 0)
			h->role = HISTORY_PRIMARY;
		else if (strcmp(role, "secondary") == 0)
			h->role = HISTORY_SECONDARY;
		else if (strcmp(role, "none") == 0)
			h->role = HISTORY_NONE;
		else
			return -EBADMSG;
		return 0;
	}
	if (sscanf(line, "gen %llu %31s %llu %39s", &num, id, &start, node) != 4 ||
	    h->n >= HISTORY_MAX || strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16)
		return -EBADMSG;
	g = &h->g[h->n];
	g->num = num;
	g->id = strtoull(id, NULL, 16);
	g->start = start;
	if (history_unhex(node, g->node, 16) < 0)
		return -EBADMSG;
	if (h->n && g->start < h->g[h->n - 1].start)
		return -EBADMSG;	/* entries go forward */
	h->n++;
	return 0;
}

int history_load(const char *dir, struct history *h)
{
	char path[4096], line[256];
	FILE *f;
	int rc = 0;

	memset(h, 0, sizeof(*h));
	if (snprintf(path, sizeof(path), "%s/history", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (!fgets(line, sizeof(line), f) || strncmp(line, HISTORY_MAGIC, strlen(HISTORY_MAGIC)))
		rc = -EBADMSG;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		rc = history_parse_line(h, line);
	}
	fclose(f);
	return rc;
}

int history_save(const char *dir, const struct history *h)
{
	char buf[HISTORY_MAX * 128 + 128], gen[32];
	size_t off;
	int rc;

	off = (size_t)snprintf(buf, sizeof(buf), HISTORY_MAGIC "\nrole %s\n",
			       history_role_name(h->role));
	for (size_t i = 0; i < h->n; i++) {
		char node[33];

		history_hex(h->g[i].node, 16, node);
		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
					"gen %" PRIu64 " %016" PRIx64 " %" PRIu64 " %s\n",
					h->g[i].num, h->g[i].id, h->g[i].start, node);
	}
	rc = state_write_atomic(dir, "history", buf, off);
	if (rc < 0 || !h->n)
		return rc;
	snprintf(gen, sizeof(gen), "%" PRIu64 "\n", h->g[h->n - 1].num);
	return state_write_atomic(dir, "generation", gen, strlen(gen));
}

int history_begin(struct history *h, uint64_t start, const uint8_t node[16])
{
	struct history_gen g = { 0 };

	if (getrandom(&g.id, sizeof(g.id), 0) != (ssize_t)sizeof(g.id))
		return -EIO;
	g.num = h->n ? h->g[h->n - 1].num + 1 : 1;
	g.start = start;
	memcpy(g.node, node, 16);
	if (h->n == HISTORY_MAX) {
		memmove(&h->g[0], &h->g[1], (HISTORY_MAX - 1) * sizeof(h->g[0]));
		h->n--;
	}
	h->g[h->n++] = g;
	return 0;
}

int history_check_role(const char *cmd, const char *state, enum history_role want)
{
	struct history h;
	const struct history_gen *g;
	char gs[32];
	int rc = history_load(state, &h);

	if (rc < 0) {
		fprintf(stderr, "twinfs %s: cannot read %s/history: %s\n", cmd, state,
			strerror(-rc));
		return rc == -EBADMSG ? -EBADMSG : rc;
	}
	if (h.role == HISTORY_NONE || h.role == want)
		return 0;
	g = history_cur(&h);
	history_gen_str(g, gs, sizeof(gs));
	if (want == HISTORY_PRIMARY)
		fprintf(stderr, "twinfs %s: refusing: the state directory %s is a secondary's "
			"(a copy of a primary's data, generation %s); make it the primary "
			"first: twinfs promote --state %s\n", cmd, state, gs, state);
	else
		fprintf(stderr, "twinfs %s: refusing: the state directory %s is a primary's "
			"(generation %s; its journal may hold changes the peer lacks); make "
			"it a secondary first: twinfs demote --state %s\n", cmd, state, gs,
			state);
	return -EPERM;
}

int history_make_primary(const char *state, const uint8_t node[16])
{
	struct history h;
	int rc = history_load(state, &h);

	if (rc < 0)
		return rc;
	if (h.role == HISTORY_PRIMARY && h.n)
		return 0;
	if (h.role == HISTORY_SECONDARY)
		return -EPERM;
	h.role = HISTORY_PRIMARY;
	if (!h.n) {
		rc = history_begin(&h, 0, node);
		if (rc < 0)
			return rc;
	}
	return history_save(state, &h);
}

static int history_find(const struct history *h, uint64_t id)
{
	for (size_t i = h->n; i-- > 0;)
		if (h->g[i].id == id)
			return (int)i;
	return -1;
}

/* Where generation I of H ends: the next one's start, or HEAD. */
static uint64_t history_end(const struct history *h, size_t i, uint64_t head)
{
	return i + 1 < h->n ? h->g[i + 1].start : head;
}

/* The secondary's generation is in the primary's history at K. */
static void history_decide_known(const struct history *p, uint64_t p_head, size_t k,
				 uint64_t s_seq, bool s_tail, struct history_decision *d)
{
	uint64_t end = history_end(p, k, p_head);
	char gk[32], gn[32];

	history_gen_str(&p->g[k], gk, sizeof(gk));
	if (s_seq <= end) {
		d->verdict = HISTORY_BEHIND;
		d->resume = s_seq;
		snprintf(d->why, sizeof(d->why), "the secondary holds generation %s up to seq "
			 "%" PRIu64 ", which the primary has: it resumes there", gk, s_seq);
		return;
	}
	if (k + 1 == p->n) {
		d->verdict = HISTORY_AHEAD;
		snprintf(d->why, sizeof(d->why), "the secondary holds generation %s up to seq "
			 "%" PRIu64 ", but the primary's journal ends at seq %" PRIu64 ": the "
			 "primary is behind (restored or its journal lost?); demote it and let "
			 "the node with the newer data be the primary", gk, s_seq, p_head);
		return;
	}
	history_gen_str(&p->g[k + 1], gn, sizeof(gn));
	if (s_tail) {
		d->verdict = HISTORY_LAGGED;
		d->resume = end;
		snprintf(d->why, sizeof(d->why), "the secondary holds generation %s up to seq "
			 "%" PRIu64 ", past seq %" PRIu64 " where the primary began %s: its "
			 "changes since are kept as conflict copies and it takes the primary's "
			 "state", gk, s_seq, end, gn);
		return;
	}
	d->verdict = HISTORY_SPLIT;
	d->common = end;
	snprintf(d->why, sizeof(d->why), "split brain: both nodes changed files after seq "
		 "%" PRIu64 " of generation %s (the secondary went on to seq %" PRIu64 ", the "
		 "primary began %s); nothing is overwritten: run `twinfs resolve`", end, gk,
		 s_seq, gn);
}

void history_decide(const struct history *p, uint64_t p_head, const struct history *s,
		    uint64_t s_seq, bool s_tail, struct history_decision *d)
{
	const struct history_gen *sg = history_cur(s), *pg = history_cur(p);
	char a[32], b[32];
	int k, m;

	memset(d, 0, sizeof(*d));
	if (!sg && s_seq == 0) {
		d->verdict = HISTORY_NEW;
		snprintf(d->why, sizeof(d->why), "the secondary holds no one's data yet: it "
			 "gets the primary's whole state");
		return;
	}
	if (!sg) {
		/* a secondary from before generations: sequence numbers only */
		if (s_seq <= p_head) {
			d->verdict = HISTORY_BEHIND;
			d->resume = s_seq;
			snprintf(d->why, sizeof(d->why), "the secondary (no history yet) is at "
				 "seq %" PRIu64 ": it resumes there and is bound to this primary",
				 s_seq);
		} else {
			d->verdict = HISTORY_AHEAD;
			snprintf(d->why, sizeof(d->why), "the secondary has applied seq %" PRIu64
				 ", beyond the primary's journal (seq %" PRIu64 "): it holds "
				 "changes the primary does not have", s_seq, p_head);
		}
		return;
	}
	if (!pg) {
		d->verdict = HISTORY_FOREIGN;
		snprintf(d->why, sizeof(d->why), "the primary has no history");
		return;
	}
	k = history_find(p, sg->id);
	if (k >= 0) {
		history_decide_known(p, p_head, (size_t)k, s_seq, s_tail, d);
		return;
	}
	history_gen_str(sg, a, sizeof(a));
	history_gen_str(pg, b, sizeof(b));
	m = history_find(s, pg->id);
	if (m >= 0) {
		d->verdict = HISTORY_AHEAD;
		snprintf(d->why, sizeof(d->why), "the secondary went on to generation %s after "
			 "the primary's %s (it was promoted, or wrote while apart): the primary "
			 "is behind; demote it (`twinfs demote`) and serve it from the other node",
			 a, b);
		return;
	}
	for (size_t i = p->n; i-- > 0;) {
		int j = history_find(s, p->g[i].id);
		uint64_t ep, es;
		char c[32];

		if (j < 0)
			continue;
		/* neither last entry is shared, so both have a next one */
		ep = history_end(p, i, p_head);
		es = history_end(s, (size_t)j, s_seq);
		d->verdict = HISTORY_SPLIT;
		d->common = ep < es ? ep : es;
		history_gen_str(&p->g[i], c, sizeof(c));
		snprintf(d->why, sizeof(d->why), "split brain: both nodes changed files after "
			 "seq %" PRIu64 " of generation %s (the primary is in %s, the secondary "
			 "in %s); nothing is overwritten: run `twinfs resolve`", d->common, c, b, a);
		return;
	}
	d->verdict = HISTORY_FOREIGN;
	snprintf(d->why, sizeof(d->why), "the secondary holds another node's data "
		 "(generation %s, seq %" PRIu64 "), which shares no generation with the "
		 "primary's (%s): refusing to overwrite it; to make it a copy of this primary, "
		 "serve it with an empty --state and store", a, s_seq, b);
}
