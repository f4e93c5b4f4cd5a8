/*
 * relay — joins a connection that serve's loop must keep (a TLS
 * bufferevent: its SSL object lives on the loop) to one end of a
 * socketpair, so that a thread can speak plaintext frames on the other
 * end with blocking calls (a mirror session, mirrorsess.h). Bytes are
 * moved, not parsed, with back-pressure both ways; either side closing
 * ends both. Runs on serve's loop thread.
 */
#ifndef TWINFS_RELAY_H
#define TWINFS_RELAY_H

#include <stdbool.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

struct relay;

/* Takes BEV (and IN: bytes already read from it, moved to the pair) and
 * returns in *THREAD_FD the socketpair end for the thread (which closes
 * it). 0 or -errno (BEV and IN are then freed). */
int relay_start(struct event_base *base, struct bufferevent *bev, struct evbuffer *in,
		int *thread_fd, struct relay **out);
/* True once both sides are closed. */
bool relay_done(const struct relay *r);
void relay_free(struct relay *r);	/* NULL is fine */

#endif
