/*
 * hashjob — answers to HASH_REQ that need a large file read, computed on
 * a thread of their own (tw-hash) so that serve's loop keeps serving (its
 * heartbeats, the control socket, other connections) while the disk is
 * read: hashing runs at 0.3-0.5 s per GiB uncached, and a 10 GiB file
 * used to hold the loop past the peer's dead-link timeout. Jobs run one at
 * a time in the order given; each result comes back on the loop through
 * an eventfd, to the callback, with the job's tag.
 */
#ifndef TWINFS_HASHJOB_H
#define TWINFS_HASHJOB_H

#include <stdint.h>
#include <sys/stat.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "netsync/wire/proto.h"

struct hashcache;
struct hashjob;

/* On the loop: ANSWER (HASHES frames, the callee's to move or drop; NULL
 * when none could be encoded), READ bytes read, for the job tagged TAG. */
typedef void (*hashjob_done_fn)(struct evbuffer *answer, uint64_t read, uint64_t tag,
				void *arg);

/* 0 or -errno. CACHE (may be NULL) must be thread-safe (hashcache is). */
int hashjob_new(struct event_base *base, struct hashcache *cache, hashjob_done_fn done,
		void *arg, struct hashjob **out);
/* Queues the answer to Q for the regular file open on FD (fstat ST),
 * taken by peerhash_begin; FD is the job's (closed when done). 0 or
 * -errno (FD closed). */
int hashjob_start(struct hashjob *j, int fd, const struct stat *st,
		  const struct proto_hash_req *q, uint64_t tag);
/* Waits for the running job, drops queued ones (their fds closed, no
 * callback), stops the thread. NULL is fine. */
void hashjob_free(struct hashjob *j);

#endif
