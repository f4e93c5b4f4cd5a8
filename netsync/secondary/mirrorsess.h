/*
 * mirrorsess — the peer's side of the convergence engine: one `twinfs
 * mirror` client (or a local destination's engine, in-process) served on
 * a thread of its own with blocking IO: it walks the store for TREE_REQ,
 * answers HASH_REQ with block hashes (from the hash cache when it still
 * matches), applies OP/DATA/ATTR/PRUNE through a receiver of its own
 * (receiver.h, no STATE/applied: the same confinement of every path),
 * checks FILE_CHECK digests, and at BATCH_END makes the store durable
 * (syncfs) and ACKs. Never touches serve's receiver or STATE/applied.
 */
#ifndef TWINFS_MIRRORSESS_H
#define TWINFS_MIRRORSESS_H

#include <stdbool.h>

#include <event2/event.h>

#include "netsync/secondary/gate.h"

struct hashcache;
struct link;
struct mirrorsess;

struct mirrorsess_opts {
	const char *store;
	struct hashcache *cache;	/* may be NULL */
	/* Refuse the client with ERROR{ROLE} and this reason (NULL: serve). */
	const char *refuse;
	bool send_hello;	/* send our HELLO first (no gate sent it) */
	const char *name;	/* node name in that HELLO */
};

/* Serves the client on L until it leaves. 0 when it ended cleanly, or
 * -errno (logged). Blocking; the caller's thread. */
int mirrorsess_run(struct link *l, const struct mirrorsess_opts *o);

/* serve: takes C (admitted by the gate, its HELLO consumed from C->in)
 * and serves it on a new thread. 0 or -errno (C is then closed). */
int mirrorsess_start(struct event_base *base, struct gate_conn *c,
		     const struct mirrorsess_opts *o, struct mirrorsess **out);
bool mirrorsess_done(const struct mirrorsess *m);
/* Ends the session (its socket is shut down) and joins its thread. */
void mirrorsess_free(struct mirrorsess *m);

#endif
