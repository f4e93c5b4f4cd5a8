/*
 * applypool — a mirror session's parallel apply. A whole file arrives as a
 * run of frames naming one path (CREATE, its xattrs, DATA, ATTR, and for a
 * replacement the RENAME onto its real name); runs for distinct paths
 * commute, so each goes to one of a few worker threads, each with a
 * receiver of its own, while the session thread reads on. Every other
 * frame is a barrier: the session drains the pool, then applies it itself.
 * A flusher thread starts the writeback of what the workers wrote in
 * steps, so that the session's final syncfs is short.
 * The session thread calls everything here; the workers touch only their
 * own receiver, queue and the pool's error.
 */
#ifndef TWINFS_APPLYPOOL_H
#define TWINFS_APPLYPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netsync/wire/link.h"
#include "netsync/wire/proto.h"

struct applypool;

/* Starts the workers on STORE. 0 or -errno. */
int applypool_start(const char *store, struct applypool **out);
/*
 * Offers F, whose slab S the caller holds a reference to. 1: taken (the
 * pool owns S now). 0: not part of a file's run (or its path is already
 * in one since the last drain): the caller keeps S, drains, and applies F
 * itself, then calls applypool_forget. -EIO: a run failed (applypool_error).
 */
int applypool_offer(struct applypool *p, const struct proto_frame *f, struct link_slab *s);
/* Lets idle workers start on what is queued (before the caller waits
 * for input: it need not wait for them). */
void applypool_kick(struct applypool *p);
/* An fd that becomes readable when a run fails (poll it beside the
 * input, then drain to report the failure). */
int applypool_fd(const struct applypool *p);
/* Waits until everything offered is applied. 1 if runs were applied since
 * the last drain (the caller's own receiver must then forget its cached
 * names, receiver_forget), 0 if none, -EIO if one failed. */
int applypool_drain(struct applypool *p);
/* The caller changed the store's names: the workers forget theirs. */
void applypool_forget(struct applypool *p);
/* The first failure: its ERROR code and text. */
uint32_t applypool_error(const struct applypool *p, const char **text);
/* Content bytes and ops the workers applied. */
void applypool_counts(const struct applypool *p, uint64_t *ops, uint64_t *data_bytes);
/* Stops the workers (dropping what is queued) and frees the pool. */
void applypool_stop(struct applypool *p);

#endif
