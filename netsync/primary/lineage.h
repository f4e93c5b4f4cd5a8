/*
 * lineage — the primary's side of generations (docs/protocol.md,
 * "Generations"): its history (STATE/history), the new generation it
 * begins when it goes on writing while its peer is unreachable, the
 * decision on the secondary's HELLO, and the TAIL a demoted old primary
 * sends (each path becomes a NEEDS_SCAN in the journal). Runs on the
 * primary thread's loop only (the sender calls it); blocking writes of
 * small state files.
 */
#ifndef TWINFS_LINEAGE_H
#define TWINFS_LINEAGE_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/roles/history.h"
#include "netsync/wire/proto.h"

struct ctljson;
struct journal;

struct lineage {
	char *state;
	uint8_t node[16];
	struct history hist;
	/* apart: not streaming to an accepting peer since the journal head
	 * was at apart_head; begun: a generation began for this time apart */
	bool apart, begun;
	uint64_t apart_head;
	/* a peer has seen the current generation (accepted it, or acked a
	 * change of it): only then does writing apart begin a new one */
	bool shared;
	/* the last HELLO's decision */
	bool decided;
	enum history_verdict verdict;
	uint64_t common;	/* a split brain's: the last seq both nodes hold */
	char why[512];
	bool logged;		/* the refusal was logged at warning */
	uint64_t tail_paths, tail_seq;	/* the tail of this connection: paths */
	uint64_t tail_same;		/* resent up to tail_seq, and left alone */
};

/* Loads STATE/history (mount_cmd made it a primary's). HEAD, ACKED: the
 * journal's now (apart from the start). 0 or -errno. */
int lineage_open(struct lineage *l, const char *state, const uint8_t node[16],
		 uint64_t head, uint64_t acked);
void lineage_close(struct lineage *l);
/* The connection that was streaming is gone (HEAD: the journal's head). */
void lineage_apart(struct lineage *l, uint64_t head);
/* Changes after the head at parting, and no peer: a new generation
 * begins there (saved before the next HELLO). */
void lineage_check(struct lineage *l, uint64_t head);
/* Whether lineage_check could begin one now (apart, a peer saw the current
 * generation, none begun yet): the caller skips reading the journal's
 * head otherwise. */
static inline bool lineage_may_begin(const struct lineage *l)
{
	return l->apart && l->shared && !l->begun;
}
void lineage_hello(const struct lineage *l, struct proto_hello *h);
/* The secondary's HELLO against our history and HEAD. 0 and *RESUME
 * (where its stream resumes), or -EPROTO (refused: l->why). */
int lineage_on_hello(struct lineage *l, const struct proto_hello *h, uint64_t head,
		     uint64_t *resume);
/* One ENTRY of the peer's tail: unless our store holds the same there,
 * the path's state is owed (a NEEDS_SCAN in the journal). Reads and
 * hashes the path here. 0 or -errno (drop the connection). */
struct proto_entry;
int lineage_on_tail_entry(struct lineage *l, struct journal *j, int store_fd,
			  const struct proto_entry *e);
/* The TAIL frame ends the tail: TAIL_ACK with the last NEEDS_SCAN's seq
 * (0: none). 0 or -errno. */
int lineage_on_tail(struct lineage *l, struct journal *j, const struct proto_frame *f,
		    struct evbuffer *out);
/* The last verdict refuses the peer (sync must not succeed). */
bool lineage_refused(const struct lineage *l);
void lineage_status(const struct lineage *l, struct ctljson *j);

#endif
