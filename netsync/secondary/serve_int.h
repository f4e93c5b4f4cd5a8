/*
 * serve_int — what serve.c, serve_intake.c and serve_split.c share:
 * the one primary connection's state machine and struct serve, and the
 * functions each calls in the other. Private to netsync/secondary/serve*.c; serve's loop
 * thread only (the syncer reaches it through its eventfd).
 */
#ifndef TWINFS_SERVE_INT_H
#define TWINFS_SERVE_INT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "netsync/control/statusinfo.h"
#include "netsync/roles/conflicts.h"
#include "netsync/roles/divergence.h"
#include "netsync/roles/state.h"
#include "netsync/secondary/binding.h"
#include "netsync/secondary/hold.h"
#include "netsync/secondary/serve.h"
#include "netsync/wire/limits.h"
#include "netsync/wire/proto.h"

/*
 * The connection is read here, not by the bufferevent: libevent 2.1's
 * evbuffer_read reads at most 4096 bytes per call, so a bufferevent
 * would deliver a 1 MiB DATA frame in 256 trips through the loop, each an
 * epoll_wait, a FIONREAD ioctl and a readv (docs/benchmarks.md, "serve's
 * reads"). serve_sock_read_cb reads into space reserved in the
 * input evbuffer, SERVE_READ_CHUNK per readv and up to SERVE_READ_MAX per
 * wakeup, into its own evbuffer (a bufferevent's input buffer is frozen
 * for appends from outside), then applies every complete frame. The
 * bufferevent still does the writing (ACKs, HELLO, ERROR).
 * Over TLS serve reads the SSL object the same way (serve_tls_sock_read_cb,
 * serve_intake.c); the OpenSSL bufferevent only writes.
 */
#define SERVE_READ_CHUNK (8 << 20)
#define SERVE_READ_MAX (8 << 20)
/* Why 8 MiB per readv: a DATA frame is a 1 MiB block plus a header, and
 * one that ends up split over two evbuffer chains is copied once more by
 * evbuffer_pullup before it is hashed and written. A reservation makes a
 * new chain of about its size, so a reservation of many frames splits few
 * of them (counts in docs/benchmarks.md, "serve's reads"). */

enum peer_state {
	PEER_NONE,		/* no primary connected */
	PEER_HELLO,		/* accepted, our HELLO sent, waiting for theirs */
	PEER_STREAMING,		/* applying the stream */
	PEER_CLOSING,		/* ERROR/GOODBYE queued; closing once written */
	PEER_SPLIT,		/* split brain: paths exchanged, then what does not conflict */
};

struct serve {
	const struct serve_opts *o;
	struct event_base *base;
	struct evconnlistener *lis;
	struct control_server *ctl;
	struct event *tick, *sigterm, *sigint;
	struct receiver *recv;
	struct gate *gate;	/* connections not yet admitted */
	struct verifier *verifier;	/* a `twinfs verify` being answered */
	struct mirrorsess *mirror;	/* a `twinfs mirror` being served */
	struct hashcache *cache;	/* STATE/hashcache (deltas) */
	uint64_t hashed_bytes;		/* read to answer a primary's HASH_REQs */
	struct hashjob *hashjob;	/* large files' answers, off the loop */
	bool hashing;			/* the connection's frames wait for one */
	struct metrics *metrics;	/* /metrics, when asked for */
	struct syncer *syncer;	/* syncfs off the loop */
	uint64_t commit_seq;	/* sync thread only: last seq recorded */
	struct state_node node;
	char node_name[256];
	struct binding bind;	/* whose data the store holds (binding.h) */
	struct divergence div;	/* the last split brain, path by path */
	bool div_logged;
	bool split_stream;	/* the split brain's stream is being applied */
	char res_error[PROTO_TEXT_MAX + 40];	/* why the last resolve failed ("") */
	struct hold hold;	/* what it leaves alone (hold.h) */
	char restoring[CONFLICTS_ID_MAX];	/* a folder being restored ("": none) */

	/* the connection (one at a time) */
	enum peer_state state;
	struct bufferevent *bev;
	struct event *rev;	/* reads the socket (see SERVE_READ_CHUNK) */
	struct evbuffer *in;	/* what rev read, not yet applied */
	struct event *cont;	/* applies the rest of `in` on the next pass */
	bool reading;		/* rev is on (plaintext and TLS alike) */
	enum limits_over paused;	/* reading stopped over a cap (limits.h) */
	uint64_t paused_since_ns;
	bool stall_now;		/* the frame just applied waits to be retried */
	bool full_told;		/* this primary was told the store is full */
	uint64_t full_since_ns;	/* the store refuses writes since (0: no) */
	uint64_t full_logged_ns, full_retries;
	char peer[INET6_ADDRSTRLEN + 8];
	char peer_name[PROTO_TEXT_MAX + 1];
	char peer_auth[128];	/* who TLS authenticated ("" plaintext) */
	uint64_t peer_generation;
	uint64_t state_since_ns, last_rx_ns, last_tx_ns;
	uint64_t conn_rx;	/* frame bytes received on this connection */

	/* status */
	uint64_t bytes_received;
	uint64_t connections;
	uint64_t read_pauses;	/* times reading stopped over a cap */
	char last_error[512];
	bool stopping;
	struct statusinfo si;	/* version, uptime, last ack sent */
};

/* ---- serve.c ---- */

void serve_set_error(struct serve *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Drops the connection now (whatever is unsent is lost). */
void serve_conn_free(struct serve *s);
/* Queues ERROR{code,text} and closes once it is written. */
void serve_conn_fail(struct serve *s, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Applies one checked frame of the primary's. */
void serve_on_frame(struct serve *s, const struct proto_frame *f);
void serve_set_state(struct serve *s, enum peer_state st);
/* A frame the receiver failed on: ERROR to the primary, or held (full). */
void serve_apply_failed(struct serve *s, const char *what, int rc);
/* A HASH_REQ answered. 0, -EBADMSG (malformed), or -errno after the
 * connection was failed. */
int serve_hash_req(struct serve *s, const struct proto_frame *f);
/* The connection ended: EOF (the primary closed it) or an error WHY. */
void serve_conn_lost(struct serve *s, bool eof, const char *why);
void serve_event_cb(struct bufferevent *bev, short what, void *arg);

/* ---- serve_split.c: a split brain ---- */
/* The HELLO's verdict is a split brain: the exchange begins. */
void serve_split_begin(struct serve *s);
/* Every frame of a connection in PEER_SPLIT. */
void serve_on_split_frame(struct serve *s, const struct proto_frame *f);
/* The connection ends: the split brain's stream, if any, is over. */
void serve_split_reset(struct serve *s);
/* ---- serve_intake.c: reading and applying the primary's stream ---- */

/* Reading from the primary on or off. */
void serve_reading(struct serve *s, bool on);
/* Reading stopped over a cap resumes once it is under its low mark. */
void serve_maybe_resume(struct serve *s);
/* Applies the complete frames in s->in, a slice at a time, under the caps. */
void serve_apply(struct serve *s);
void serve_cont_cb(evutil_socket_t fd, short what, void *arg);
/* The socket is readable: plaintext, or TLS (serve reads the SSL itself). */
void serve_sock_read_cb(evutil_socket_t fd, short what, void *arg);
void serve_tls_sock_read_cb(evutil_socket_t fd, short what, void *arg);
/* A write the store refused for want of room (or read-only): the frame
 * is held and retried; true if RC was taken so. */
bool serve_store_full(struct serve *s, const char *what, const char *path, int rc);
/* A PSK file that changed is read again; a primary whose key left it goes. */
void serve_tls_reload(struct serve *s);

#endif
