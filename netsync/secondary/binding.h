/*
 * binding — what ties a secondary's store to one primary's line of
 * changes: its generation history (netsync/roles/history.h), the tail of
 * a demoted primary (netsync/roles/tail.h), the promoted state, and the
 * verdict of the last HELLO (docs/protocol.md, "Generations"). Serve's
 * loop thread only; state files are written with blocking IO there.
 */
#ifndef TWINFS_BINDING_H
#define TWINFS_BINDING_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/roles/history.h"
#include "netsync/roles/tail.h"
#include "netsync/wire/proto.h"

struct ctljson;

struct binding {
	const char *state;
	const char *store;
	int store_fd;		/* the receiver's; not owned */
	uint8_t node[16];
	struct history hist;	/* the bound primary's (or, demoted, our own) */
	bool has_tail;
	struct tail tail;
	uint64_t tail_done_seq;	/* TAIL_ACK: applied past it, the tail is done */
	bool promoted;		/* takes no primary any more */
	/* the last HELLO's primary history and decision (a split brain
	 * resolves to it, resuming at common) */
	struct history peer_hist;
	uint64_t common;
	bool decided;
	enum history_verdict verdict;
	char why[512];
	bool split_logged;
};

/* Loads STATE/history (a new state directory becomes a secondary's) and
 * STATE/tail. 0 or -errno (logged). */
int binding_open(struct binding *b, const char *state, const char *store,
		 const uint8_t node[16]);
void binding_close(struct binding *b);
/* Our history and flags into the HELLO the gate sends. */
void binding_hello(const struct binding *b, struct proto_hello *h);
/*
 * The primary's HELLO against ours, with our durable position APPLIED.
 * Accepted: *RESUME is where the stream resumes (below APPLIED only for a
 * lagged tail); the caller moves the position there, then binding_commit
 * saves the primary's history as ours, before anything is applied.
 * Returns 0, or the ERROR code to refuse with (b->why says why).
 */
int binding_on_hello(struct binding *b, const struct proto_hello *h, uint64_t applied,
		     uint64_t *resume);
int binding_commit(struct binding *b);
/* `twinfs resolve` is done (RESOLVE DONE up to DONE_SEQ): once the caller
 * moved the position to b->common, where the primary's stream resumes,
 * the primary's history becomes ours. 0 or -errno. */
int binding_resolved(struct binding *b, uint64_t done_seq);
/* TAIL frames for an accepted primary, if we have a tail. 0 or -errno. */
int binding_send_tail(struct binding *b, struct evbuffer *out);
/* The primary queued what differs up to SEQ (0: nothing differed);
 * APPLIED: our durable position now. */
void binding_on_tail_ack(struct binding *b, uint64_t seq, uint64_t applied);
/* APPLIED became durable: once it covers the tail, the copies that equal
 * the store are dropped and STATE/tail goes. */
void binding_applied(struct binding *b, uint64_t applied);
/* `promote`: a new generation from APPLIED, role primary, no primary
 * taken any more. Writes STATE/manifest of the store for the mount. 0 or
 * -errno. */
int binding_promote(struct binding *b, uint64_t applied, bool dirty);
/* Status keys: generation_id, history, verdict, split_brain, tail. */
void binding_status(const struct binding *b, struct ctljson *j);

#endif
