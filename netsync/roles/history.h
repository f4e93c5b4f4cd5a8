/*
 * history — a node's generation history (STATE/history) and the decision
 * two histories make when a primary meets a secondary (docs/protocol.md,
 * "Generations"). Like DRBD's generation UUIDs and redis's replication
 * id + offset: a generation names one line of changes; an entry says at
 * which seq it began. Pure functions plus blocking file IO on the state
 * directory; callers decide the thread.
 */
#ifndef TWINFS_HISTORY_H
#define TWINFS_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Entries kept: the newest; older ones only matter to a peer that has
 * been away for that many promotions or outages. */
#define HISTORY_MAX 16

struct history_gen {
	uint64_t num;		/* 1, 2, ... along one line (for people) */
	uint64_t id;		/* random: the generation's identity */
	uint64_t start;		/* its first change has seq start + 1 */
	uint8_t node[16];	/* the node that began it */
};

enum history_role {
	HISTORY_NONE,		/* a new state directory: no role yet */
	HISTORY_PRIMARY,	/* mounts: its journal makes the changes */
	HISTORY_SECONDARY,	/* serves: applies a primary's changes */
};

struct history {
	enum history_role role;
	size_t n;			/* entries, oldest first */
	struct history_gen g[HISTORY_MAX];
};

/* Reads STATE/history. A missing file is an empty history with no role
 * (0). Returns 0, -EBADMSG (a corrupt file) or -errno. */
int history_load(const char *dir, struct history *h);
/* Writes STATE/history (and STATE/generation, the current number)
 * atomically and durably. Returns 0 or -errno. */
int history_save(const char *dir, const struct history *h);
/*
 * For `mount` (WANT primary) and `serve` (WANT secondary), before anything
 * is created: refuses a state directory of the other role, printing
 * "twinfs CMD: refusing ..." with what to run (-EPERM: exit 78), or an
 * unreadable history (-EBADMSG: 65). 0 otherwise; writes nothing.
 */
int history_check_role(const char *cmd, const char *state, enum history_role want);
/* For `mount` once its checks passed: a state directory with no role
 * becomes a primary's, with its first generation. 0 or -errno. */
int history_make_primary(const char *state, const uint8_t node[16]);

/* Begins a new generation at START (its changes have seq > START), by
 * NODE; the oldest entry goes when HISTORY_MAX are kept. In memory only.
 * Returns 0 or -EIO (no randomness). */
int history_begin(struct history *h, uint64_t start, const uint8_t node[16]);
/* The current (newest) entry, or NULL for an empty history. */
const struct history_gen *history_cur(const struct history *h);
const char *history_role_name(enum history_role r);
/* "g3/1a2b3c4d" for messages: the number and the id's first 8 digits. */
void history_gen_str(const struct history_gen *g, char *buf, size_t len);

/*
 * What a primary (history P, data up to seq P_HEAD) and a secondary
 * (history S, data up to seq S_SEQ; S_TAIL: it keeps a list of paths it
 * changed past the point its old peer confirmed, see `twinfs demote`)
 * do about each other. Both ends compute it from the two HELLOs and get
 * the same answer.
 */
enum history_verdict {
	HISTORY_NEW,	 /* the secondary holds nothing bound: full state */
	HISTORY_BEHIND,	 /* the secondary's data is a prefix of the primary's:
			  * resume after seq `resume` */
	HISTORY_LAGGED,	 /* the secondary went on in a generation past the
			  * seq where the primary's next one began (an old
			  * primary's writes that never reached its peer): its
			  * tail paths are kept aside and take the primary's
			  * state; resume after `resume` */
	HISTORY_AHEAD,	 /* the secondary holds changes the primary lacks */
	HISTORY_SPLIT,	 /* both went on writing after `common` */
	HISTORY_FOREIGN, /* no generation in common: another node's data */
};

struct history_decision {
	enum history_verdict verdict;
	uint64_t resume;	/* BEHIND, LAGGED: where the stream resumes */
	uint64_t common;	/* SPLIT: the last seq both hold */
	char why[512];		/* one line for a person, saying what to do */
};

void history_decide(const struct history *p, uint64_t p_head, const struct history *s,
		    uint64_t s_seq, bool s_tail, struct history_decision *d);
const char *history_verdict_name(enum history_verdict v);
/* The verdicts under which the secondary takes the primary's stream. */
static inline bool history_accepts(enum history_verdict v)
{
	return v == HISTORY_NEW || v == HISTORY_BEHIND || v == HISTORY_LAGGED;
}

#endif
