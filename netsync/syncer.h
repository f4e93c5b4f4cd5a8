/*
 * syncer — makes the store durable off the event loop: one thread that
 * runs syncfs() on request and reports, through an eventfd watched by the
 * loop, the highest seq whose data is now durable. Requests coalesce: many
 * BATCH_ENDs during one syncfs cost one more syncfs, not many.
 * syncer_request/syncer_stop: loop thread only; the callback runs on the
 * loop.
 */
#ifndef TWINFS_SYNCER_H
#define TWINFS_SYNCER_H

#include <stdint.h>

#include <event2/event.h>

struct syncer;

/* done(seq, err, arg): everything written before syncer_request(seq)
 * returned is durable (err == 0), or syncfs failed with -err. */
typedef void (*syncer_done_fn)(uint64_t seq, int err, void *arg);

/* fd: any fd on the filesystem to sync (dup'ed). Returns 0 or -errno. */
int syncer_start(struct event_base *base, int fd, syncer_done_fn done, void *arg,
		 struct syncer **out);
void syncer_request(struct syncer *s, uint64_t seq);
/* Finishes the outstanding requests, stops the thread and returns the
 * last seq made durable (and its error in *err) without calling done.
 * Safe with NULL (returns 0). */
uint64_t syncer_stop(struct syncer *s, int *err);

#endif
