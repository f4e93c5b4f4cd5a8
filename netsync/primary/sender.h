/*
 * sender — the primary's connection to its peer: an explicit state machine
 * (backoff -> connecting -> hello -> streaming) that takes batches from the
 * journal and streams them, pipelined, over one TCP connection.
 * Runs entirely on the primary thread's event_base; nothing here may be
 * called from another thread (the FUSE threads talk to the journal only).
 */
#ifndef TWINFS_SENDER_H
#define TWINFS_SENDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct journal;
struct sender;

enum peer_state {
	PEER_IDLE,		/* no peer configured, or stopped */
	PEER_BACKOFF,		/* waiting before the next connect attempt */
	PEER_CONNECTING,	/* TCP connect in progress */
	PEER_HELLO,		/* our HELLO sent, waiting for the peer's */
	PEER_STREAMING,		/* sending batches, receiving ACKs */
	PEER_REFUSED,		/* configuration forbids this peer (no retry) */
	PEER_SPLIT,		/* split brain: paths being exchanged (sender_split.c) */
};

struct tls_ctx;

struct sender_opts {
	const char *peer;	/* HOST:PORT, NULL: no peer */
	const char *state_dir;	/* node id and generation live here */
	const char *store_dir;	/* files the journal names by path only */
	bool insecure;		/* allow a non-loopback peer without TLS keys */
	struct tls_ctx *tls;	/* TLS 1.3 to the peer; NULL: plaintext. The
				 * caller owns it and keeps it past sender_free */
	uint32_t heartbeat_s;	/* send a heartbeat after this much silence */
	/* Threads waiting for the peer (sync-mode fsync, `twinfs sync`); while
	 * it is non-zero batches are taken at once instead of paced. Owned by
	 * the caller, read atomically, may be NULL. */
	const atomic_int *waiters;
	uint32_t delta_block_size;	/* delta.block_size (0: 128 KiB) */
	const char *mountpoint;	/* where `twinfs resolve` writes a secondary's
				 * versions (resolver.h); NULL: not mounted */
};

struct sender_stats {
	enum peer_state state;
	bool connected;		/* HELLO exchanged, streaming */
	uint64_t bytes_sent;	/* file data bytes put on the wire, ever */
	/* data marked changed but left off the wire because the peer already
	 * held those blocks (netsync/sentmap.c), ever */
	uint64_t bytes_held;
	uint64_t send_rate;	/* data bytes/s over the last 5 s */
	uint64_t inflight_bytes;	/* data sent, not yet acked */
	uint64_t inflight_batches;
	uint64_t generation;	/* this node's generation */
	uint64_t peer_generation;
	uint64_t reconnects;
	uint64_t apply_errors;	/* paths the peer reported it could not apply, ever */
	bool resync;		/* a baseline (full-state send) is in progress */
	uint64_t resync_files;	/* files whose content it has sent so far */
	uint64_t resync_bytes;	/* data bytes it has sent so far */
	/* Block-hash deltas (sender_delta.c), ever: files and bytes a resync
	 * read, bytes the peer had; asked for and not yet sent */
	uint64_t resync_files_read, resync_bytes_read, resync_bytes_matched;
	uint64_t resync_files_left, resync_bytes_left;
	char last_error[256];	/* the peer's ERROR text or our last failure */
	char peer_stalled[256];	/* why the peer holds the stream ("" if not) */
	/* Paths the peer failed to apply and not yet repaired (sender.c,
	 * "Apply errors"); those that failed again after a repair are stuck. */
	uint64_t repairs_pending;
	uint64_t stuck_paths;
	char stuck_path[256];	/* the first stuck path ("" if none) */
	char stuck_reason[200];	/* what the peer said about it */
	/* The peer's last HELLO decided (lineage.h): accepted this node's
	 * history, or refused it (split brain, ahead, another node's data);
	 * `twinfs sync` succeeds only with an accepting peer. */
	bool decided, refused;
};

struct ctljson;
struct evbuffer;
/* `resolve WORD [dry]` on the control socket (WORD: local, peer, both):
 * the plan as one JSON reply into OUT; unless DRY, the resolution starts
 * (it ends with the split, see status). */
void sender_resolve_cmd(struct sender *s, const char *word, bool dry, struct evbuffer *out);
/* Generation keys of the status reply (lineage.h). */
void sender_status_lineage(struct sender *s, struct ctljson *j);

/* Creates the sender on BASE (the caller's loop thread). With o->peer set it
 * starts connecting at once. Returns 0 or -errno. */
int sender_new(struct event_base *base, struct journal *j,
	       const struct sender_opts *o, struct sender **out);
/* Closes the connection (GOODBYE if connected), hands every unacked batch
 * back to the journal, frees. Safe with NULL. */
void sender_free(struct sender *s);

/* Connects at once if waiting out a reconnect backoff (a `twinfs sync`
 * is waiting for the peer). */
void sender_kick(struct sender *s);
/* The periodic (1 s) work: heartbeats, timeouts, send-rate samples. */
void sender_tick(struct sender *s);
/* The journal has something to take (or the output drained): send more. */
void sender_pump(struct sender *s);

const char *peer_state_name(enum peer_state st);
void sender_get_stats(struct sender *s, struct sender_stats *st);

#endif
