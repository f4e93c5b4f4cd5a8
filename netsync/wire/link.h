/*
 * link — a framed connection driven with blocking calls and poll(): the
 * transport of the convergence engine's client (`twinfs mirror`, `twinfs
 * verify`) and of serve's mirror sessions, each on a thread of its own.
 * Plaintext or TLS (an SSL object on the same fd). Sending never
 * deadlocks against a peer that sends too: while the socket is full,
 * whatever arrives is read into the input buffer. Optional rate limit on
 * sending; and a send stops when the peer's ERROR has arrived (it stopped
 * reading). One thread owns a link.
 *
 * Input lands in slabs, large flat buffers, and a frame is always whole
 * in one slab: link_recv hands out a pointer into it and never copies a
 * frame to make it contiguous (a frame that does not fit where it began
 * is moved once, with only the bytes of it read so far). link_hold keeps
 * a frame's slab alive past the next call, for a consumer on another
 * thread.
 */
#ifndef TWINFS_LINK_H
#define TWINFS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <openssl/ssl.h>

#include "netsync/wire/proto.h"

struct tls_ctx;
struct link_slab;

struct link {
	int fd;			/* -1: none */
	SSL *ssl;		/* NULL: plaintext */
	struct link_slab *slab;	/* input; bytes from `head` not yet consumed */
	size_t head;
	struct proto_frame cur;	/* the frame link_recv returned */
	bool have;		/* cur is valid (consumed by the next call) */
	int timeout_ms;		/* silence before -ETIMEDOUT */
	int wake_fd;		/* readable: a wait for input ends (-1: none) */
	uint64_t bwlimit;	/* bytes/s sent at most (0: no limit) */
	uint64_t tx_bytes, rx_bytes;
	uint64_t t0_ns;		/* first send, for the rate limit */
	uint64_t tx_base;	/* tx_bytes at t0's average start */
};

/* An empty link (fd -1); 0 or -ENOMEM. */
int link_init(struct link *l, int timeout_ms);
/* The rate limit's average starts again at the next send: a run measured
 * from now gets no credit for the time the link sat idle before it. */
void link_rate_restart(struct link *l);

/*
 * Connects to HOSTPORT (refusing a non-loopback address without TLS) and
 * does the TLS handshake when TLS is set. Returns 0, or -errno with a
 * one-line reason in WHY: -EPERM (keys needed), -EACCES (handshake),
 * -ECONNREFUSED/-EHOSTUNREACH/... (connect), -ENOENT (cannot resolve).
 */
int link_connect(struct link *l, const char *hostport, struct tls_ctx *tls, char *why,
		 size_t len);
/* Takes over a connected FD (and SSL, may be NULL) plus bytes already
 * read (IN, may be NULL; its content is moved). The fd is made
 * non-blocking. 0 or -ENOMEM. */
int link_adopt(struct link *l, int fd, SSL *ssl, struct evbuffer *in);

/* Sends everything in OUT (drained). 0 or -errno (-ETIMEDOUT, -EPIPE...;
 * -ECONNABORTED: an ERROR from the peer arrived meanwhile, link_recv
 * returns it). */
int link_send(struct link *l, struct evbuffer *out);
/*
 * The next frame: 1 and *F (valid until the next call on L: copy what is
 * kept), -EBADMSG for a bad frame, -ECONNRESET at the end of the stream,
 * -ETIMEDOUT after timeout_ms of silence, -ECANCELED when wake_fd became
 * readable while it waited, or -errno. With WAIT false it returns 0 at
 * once when no whole frame is there.
 */
int link_recv(struct link *l, struct proto_frame *f, bool wait);
/* A reference to the memory of the frame link_recv returned last, valid
 * until link_slab_put (any thread may call it). NULL: out of memory. */
struct link_slab *link_hold(struct link *l);
/* Another reference to S (held by the caller); returns S. */
struct link_slab *link_slab_get(struct link_slab *s);
void link_slab_put(struct link_slab *s);
/* Sends HELLO and reads the peer's (or its ERROR). Returns 0 with the
 * peer's HELLO fields (name not kept) in *PEER, or -errno with WHY:
 * -ECONNREFUSED (the peer refused: its text), -EPROTO (not a twinfs serve,
 * another protocol version). */
int link_hello(struct link *l, const struct proto_hello *ours, struct proto_hello *peer,
	       char *why, size_t len);
/* Closes the connection (a TLS close_notify first). */
void link_close(struct link *l);

#endif
