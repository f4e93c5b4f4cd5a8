/*
 * gate — the secondary's connections that are accepted but not yet
 * admitted: the TLS handshake (with keys) and the primary's HELLO. Only a
 * connection that has passed both may take serve's one primary slot, so a
 * client that never finishes (silent, trickling a byte at a time, garbage,
 * no key) holds nothing but one of a few capped places here, and only
 * until its deadline. Runs on serve's loop thread; no locking.
 */
#ifndef TWINFS_GATE_H
#define TWINFS_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "netsync/wire/proto.h"

#define GATE_MAX_TOTAL	 16	/* connections waiting at once */
#define GATE_MAX_PER_ADDR 4	/* of them from one address */
#define GATE_DEADLINE_NS (5ull * 1000000000ull)	/* handshake + HELLO */
#define GATE_HELLO_MAX	 (64u << 10)	/* bytes before a complete HELLO */

struct tls_ctx;
struct gate;

/* A connection that passed the gate, handed to serve with its HELLO. */
struct gate_conn {
	struct bufferevent *bev;	/* TLS: an OpenSSL bufferevent; else a
					 * socket bufferevent with reading off */
	struct evbuffer *in;		/* bytes read so far, the HELLO first */
	evutil_socket_t fd;
	bool tls;
	char peer[64];			/* "ADDR:PORT" */
	char auth[128];			/* who TLS authenticated ("" plaintext) */
};

struct gate_ops {
	/* Writes this node's HELLO into OUT (sent as soon as the connection
	 * is up, or authenticated). */
	void (*hello)(void *arg, struct evbuffer *out);
	/* A connection with a complete HELLO frame (the first frame of C->in).
	 * Return 0 to take C (its buffers are then the caller's), or
	 * -EBUSY to have the gate refuse it with ERROR{BUSY}, or -EAGAIN
	 * when the slot frees soon: the gate holds C (reading nothing) and
	 * offers it again each tick until its deadline, then refuses it. */
	int (*admit)(void *arg, struct gate_conn *c, const struct proto_frame *hello);
};

/* TLS may be NULL (plaintext). 0 or -ENOMEM. */
int gate_new(struct event_base *base, struct tls_ctx *tls, const struct gate_ops *ops,
	     void *arg, struct gate **out);
/* Refuses every waiting connection and frees the gate. NULL is fine. */
void gate_free(struct gate *g);

/* Takes FD (just accepted from WHO); over the caps it is closed at once. */
void gate_accept(struct gate *g, evutil_socket_t fd, const char *who);

/* Once a second: drops connections past their deadline. */
void gate_tick(struct gate *g, uint64_t now_ns);

/* Connections waiting, and how many the gate has refused since it started. */
unsigned gate_waiting(const struct gate *g);
uint64_t gate_refused(const struct gate *g);

#endif
