/*
 * proto_gen — the messages of generations and split brain (docs/protocol.md,
 * "Generations"): TAIL (the paths a demoted primary changed that its old
 * peer may lack), TAIL_ACK, and DIVERGED (a split brain's paths with each
 * side's version). Encoders append whole frames; decoders check every
 * field and hand out pointers into the frame. Pure; any thread.
 */
#ifndef TWINFS_PROTO_GEN_H
#define TWINFS_PROTO_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/wire/proto.h"
#include "netsync/wire/wire.h"

/* TAIL: flags u32, paths blob (NUL-terminated store paths back to back,
 * at most PROTO_TAIL_CHUNK bytes); the last frame is flagged. */
#define PROTO_TAIL_F_LAST (1u << 0)
#define PROTO_TAIL_CHUNK (192u << 10)
struct proto_tail {
	uint32_t flags;
	const char *paths;
	size_t len;		/* bytes of paths, every NUL included */
};
int proto_encode_tail(struct evbuffer *out, const struct proto_tail *m);
/* Checks each path (path_check, the root not allowed). 0 or -EBADMSG. */
int proto_decode_tail(const struct proto_frame *f, struct proto_tail *m);
int proto_encode_tail_ack(struct evbuffer *out, uint64_t seq);
int proto_decode_tail_ack(const struct proto_frame *f, uint64_t *seq);

/* One side's version of a path: mode 0 means absent. */
struct proto_version {
	const char *path;
	uint32_t mode;
	uint64_t size;
	int64_t mtime_ns;
	uint8_t hash[16];	/* XXH3-128 of the content (regular files),
				 * of the target (symlinks), else zeros */
	uint32_t uid, gid;
	uint8_t xattrs[16];	/* digest of the replicated xattrs (ENTRY's) */
	uint32_t nlink;		/* link count (ENTRY's: 1 for a folder) */
};

/* DIVERGED: flags u32, count u32, then per entry path str, mode u32,
 * size u64, mtime_ns i64, hash u8[16], uid u32, gid u32, xattrs u8[16],
 * nlink u32. LAST ends one side's list; ANSWER
 * marks the versions of the peer's paths (the exchange's second round). */
#define PROTO_DIV_F_LAST (1u << 0)
#define PROTO_DIV_F_ANSWER (1u << 1)
/* HELD: paths the secondary held back from the split brain's stream,
 * sent after the exchange (the primary answers with ANSWER|HELD). */
#define PROTO_DIV_F_HELD (1u << 2)
/* REFRESH: the primary's versions of every listed path as they are when
 * `resolve` begins (its store changed during the stream), sent just
 * before RESOLVE BEGIN, so that both plans use the same versions. */
#define PROTO_DIV_F_REFRESH (1u << 3)
/* In a version's mode: the path is a folder that moved on one node (it
 * stands for everything in it: divergence.h, whole). Above every S_IF*
 * and permission bit. */
#define PROTO_DIV_MODE_WHOLE (1u << 24)
/* Encoded bytes of one entry. */
size_t proto_version_size(const struct proto_version *v);
/* Entries of at most this many bytes go in one frame. */
#define PROTO_DIV_CHUNK (192u << 10)
int proto_encode_diverged(struct evbuffer *out, uint32_t flags,
			  const struct proto_version *v, size_t n);
/* Decodes the header and checks every entry; then proto_diverged_next
 * hands them out one by one. 0 or -EBADMSG. */
struct proto_diverged {
	uint32_t flags, count;
	struct wire_reader r;	/* at the entries */
};
int proto_decode_diverged(const struct proto_frame *f, struct proto_diverged *m);
/* 1 and *v, or 0 at the end. */
int proto_diverged_next(struct proto_diverged *m, struct proto_version *v);

/*
 * RESOLVE: step u8, keep u8, pad u16, seq u64, stamp str, name str.
 * The steps of `twinfs resolve` over a split-brain connection:
 * REQUEST (S -> P: the secondary's command; the primary leads),
 * BEGIN (P -> S: the secondary keeps its losing versions aside and sends
 * the versions the primary takes, as ENTRY + DATA frames, then FILES),
 * RESTORE (S -> P: ENTRY + DATA of a conflict folder follow, then FILES),
 * FILES (S -> P: the last version is sent), DONE (P -> S: the primary's
 * state of every diverged path is queued up to seq; the secondary takes
 * the primary's history and resumes at the common point), FAILED (either
 * way: the text in name).
 */
enum proto_resolve_step {
	PROTO_RS_REQUEST = 1,
	PROTO_RS_BEGIN = 2,
	PROTO_RS_FILES = 3,
	PROTO_RS_DONE = 4,
	PROTO_RS_FAILED = 5,
	PROTO_RS_RESTORE = 6,
};
/* Whose versions win, as the primary sees it. */
enum proto_keep {
	PROTO_KEEP_PRIMARY = 1,
	PROTO_KEEP_SECONDARY = 2,
	PROTO_KEEP_BOTH = 3,
};
struct proto_resolve {
	uint8_t step, keep;
	uint64_t seq;
	const char *stamp;	/* UTC time of the resolution, for names */
	const char *name;	/* a node's name (conflict names), or a reason */
};
int proto_encode_resolve(struct evbuffer *out, const struct proto_resolve *m);
int proto_decode_resolve(const struct proto_frame *f, struct proto_resolve *m);

#endif
