/*
 * verifier — answers a `twinfs verify` connection on the secondary: builds
 * the inventory of the store (netsync/delta/inventory.h) on a thread of its
 * own, so the primary's stream is not held up, then streams it back as
 * ENTRY frames and one ENTRIES_END on serve's loop. It only reads the
 * store. One at a time; serve's loop owns it.
 */
#ifndef TWINFS_VERIFIER_H
#define TWINFS_VERIFIER_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "netsync/secondary/gate.h"

struct verifier;

/* Takes C (its bufferevent and buffered input) and starts the walk of
 * STORE. 0, or -errno (C is then closed). */
int verifier_start(struct event_base *base, const char *store, struct gate_conn *c,
		   struct verifier **out);
/* Once a second (serve's tick): a verifier that has read nothing of its
 * inventory for STALL_NS since the walk ended is dropped, so that one
 * that never reads holds neither its connection nor the inventory. */
void verifier_tick(struct verifier *v, uint64_t now_ns, uint64_t stall_ns);
/* True once everything is written (or the connection failed). */
bool verifier_done(const struct verifier *v);
/* Waits for the walk to end, closes, frees. NULL is fine. */
void verifier_free(struct verifier *v);

#endif
