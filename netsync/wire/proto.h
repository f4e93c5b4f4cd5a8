/*
 * proto — the replication protocol's frames and messages (docs/protocol.md
 * is the normative description; this header is its C form). Encoders append
 * whole frames to a libevent evbuffer; decoders parse a contiguous payload
 * and hand out pointers into it (no copies, valid until the frame is
 * consumed). Pure functions on caller objects; any thread, but one evbuffer
 * is used by one thread at a time.
 */
#ifndef TWINFS_PROTO_H
#define TWINFS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/buffer.h>

#include "journal/op.h"

#define PROTO_VERSION 10u	/* 2: PRUNE; 3: OP results (mtimes after the op);
				 * 4: ENTRY flags and nlink, the delta frames;
				 * 5: generation histories, TAIL, DIVERGED, RESOLVE;
				 * 6: HASH_REQ ONE_NAME, no quick check;
				 * 7: a split brain's stream, DIVERGED HELD;
				 * 8: DIVERGED's whole folders;
				 * 9: DIVERGED's link counts;
				 * 10: a whole tree's root ENTRY (F_ROOT) */
#define PROTO_MAGIC 0x31465754u	/* "TWF1" on the wire */
#define PROTO_HDR_LEN 24u
#define PROTO_MAX_BLOCK (16u << 20)	/* DATA block bytes */
#define PROTO_MAX_DATA_PAYLOAD (PROTO_MAX_BLOCK + 8192u)
#define PROTO_MAX_META_PAYLOAD (256u << 10)	/* every other type */
#define PROTO_BLOCK_SIZE (1u << 20)	/* what senders should use */
#define PROTO_PATH_MAX 4095u
#define PROTO_NAME_MAX 255u	/* one path component */
#define PROTO_XNAME_MAX 255u
#define PROTO_XVALUE_MAX 65536u
#define PROTO_TEXT_MAX 1024u	/* GOODBYE reason, ERROR text, node name */
/* An apply ERROR's text may end in PROTO_NO_FOLDER "'<folder>']": the
 * highest folder on the failed path's way that the secondary lacks. */
#define PROTO_NO_FOLDER "[no folder: "

enum proto_type {
	PROTO_HELLO = 1,
	PROTO_OP = 2,
	PROTO_DATA = 3,
	PROTO_ATTR = 4,
	PROTO_BATCH_END = 5,
	PROTO_ACK = 6,
	PROTO_HEARTBEAT = 7,
	PROTO_GOODBYE = 8,
	PROTO_ERROR = 9,
	PROTO_PRUNE = 10,
	PROTO_ENTRY = 11,	/* verify: one entry of the secondary's store */
	PROTO_ENTRIES_END = 12,	/* verify: the walk's end, count and outcome */
	/* 13-16: generations and split brain (proto_gen.c) */
	PROTO_TAIL = 13,	/* S -> P: paths the secondary changed that its
				 * old peer may lack (proto_gen.h) */
	PROTO_TAIL_ACK = 14,	/* P -> S: the tail is queued up to this seq */
	PROTO_DIVERGED = 15,	/* both, in a split brain: paths and versions */
	PROTO_RESOLVE = 16,	/* both, in a split brain: `twinfs resolve` */
	PROTO_GEN_MAX = 16,
	/* 32-63: the convergence engine (netsync/delta/, proto_delta.c) */
	PROTO_TREE_REQ = 32,	/* send me your entries of a subtree */
	PROTO_HASH_REQ = 33,	/* send me the block hashes of a file */
	PROTO_HASHES = 34,	/* block hashes of a file, in chunks */
	PROTO_FILE_CHECK = 35,	/* check a file's digest after a delta */
};

enum proto_role {
	PROTO_ROLE_PRIMARY = 1,
	PROTO_ROLE_SECONDARY = 2,
	PROTO_ROLE_MIRROR = 3,
	PROTO_ROLE_VERIFIER = 4,	/* reads the secondary's inventory, writes nothing */
};

/* Frame header flags. RETRY, on an ERROR: the sender keeps the connection
 * and retries what failed; no close follows (docs/protocol.md, "ERROR
 * codes"). A receiver that does not know it reads a plain ERROR. */
#define PROTO_F_RETRY (1u << 0)

/* HELLO flags. */
#define PROTO_HELLO_F_DIRTY (1u << 0)	/* secondary: a batch was half applied */
#define PROTO_HELLO_F_FORCE (1u << 1)	/* mirror client: write even into the
					 * replication target of a mount */
#define PROTO_HELLO_F_TAIL (1u << 2)	/* secondary: it sends TAIL after HELLO */
#define PROTO_HELLO_F_PROMOTED (1u << 3) /* secondary: promoted, takes no primary */

/* ERROR codes. */
enum proto_err {
	PROTO_E_VERSION = 1,
	PROTO_E_BUSY = 2,
	PROTO_E_BADFRAME = 3,
	PROTO_E_BADHASH = 4,
	PROTO_E_APPLY = 5,
	PROTO_E_PATH = 6,
	PROTO_E_ROLE = 7,
	PROTO_E_SPLITBRAIN = 8,
	PROTO_E_SHUTDOWN = 9,
	PROTO_E_AHEAD = 10,	/* the secondary holds changes the primary lacks */
	PROTO_E_FOREIGN = 11,	/* the secondary holds another node's data */
};

struct proto_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t len;	/* payload bytes */
	uint32_t clen;	/* payload bytes covered by check */
	uint64_t check;
};

/* A complete, checked frame inside an evbuffer (see proto_frame_next). */
struct proto_frame {
	struct proto_hdr h;
	const uint8_t *payload;	/* h.len contiguous bytes, owned by the evbuffer */
};

/* One entry of a generation history (netsync/roles/history.h). */
#define PROTO_HIST_MAX 16
struct proto_gen {
	uint64_t num, id, start;
	uint8_t node[16];
};

struct proto_hello {
	uint32_t version;
	uint8_t role;		/* enum proto_role */
	uint32_t flags;		/* PROTO_HELLO_F_* */
	uint8_t node_id[16];
	uint64_t generation;
	uint64_t applied_seq;
	const char *name;	/* may be NULL when encoding */
	uint64_t head_seq;	/* primary: its journal's last seq */
	uint16_t hist_n;	/* entries in hist, oldest first */
	struct proto_gen hist[PROTO_HIST_MAX];
};

/* OP: a journal record. Decoded string pointers point into the payload;
 * empty path2/xname decode as NULL, an empty xvalue as NULL/0. */
struct proto_op {
	uint64_t seq;
	struct journal_op op;
};

struct proto_data {
	const char *path;
	uint64_t offset;
	uint32_t len;		/* block bytes */
	uint64_t xxh3;		/* XXH3-64 of the block, as sent */
	const uint8_t *bytes;	/* the block (decode only) */
};

/* In ATTR's mask, beside the JATTR_* bits: the receiver skips the ATTR if
 * PATH is not there (the sender read a folder's times from its store as it
 * is now, which may be ahead of the stream; docs/protocol.md, ATTR). */
#define PROTO_ATTR_IF_PRESENT (1u << 31)
struct proto_attr {
	const char *path;
	uint32_t mask;		/* JATTR_* */
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime;
};

/* PRUNE: the names a directory holds on the sender, for a baseline walk
 * leaving it; the receiver removes every other entry of that directory.
 * Long lists come in several frames, the last one flagged. */
#define PROTO_PRUNE_F_LAST (1u << 0)
#define PROTO_PRUNE_CHUNK (192u << 10)	/* names bytes per frame, senders */
struct proto_prune {
	uint64_t seq;
	uint32_t flags;		/* PROTO_PRUNE_F_* */
	const char *path;	/* the directory, store-relative ("" = root) */
	const char *names;	/* NUL-terminated names back to back */
	size_t names_len;	/* bytes of names, every NUL included */
};

struct proto_error {
	uint32_t code;		/* enum proto_err */
	const char *text;
};

/* ENTRY: one entry of a tree, as `twinfs verify` compares them
 * (netsync/delta/inventory.h): every attribute the stores must agree on,
 * read fresh, with content and xattrs as XXH3-128 digests. */
struct proto_entry {
	const char *path;	/* tree-relative, never "" (the root itself is
				 * "." with PROTO_ENTRY_F_ROOT) */
	uint32_t mode, uid, gid;	/* st_mode: type and permission bits */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t rdev;		/* devices */
	const char *target;	/* symlinks; NULL otherwise */
	const char *link;	/* a further name of an inode: its first name in
				 * tree order; NULL for the first, or nlink 1 */
	uint32_t n_xattrs;
	uint8_t xattrs[16];	/* digest of the sorted names and values */
	uint8_t hash[16];	/* content digest (regular files), if HASHED */
	uint32_t err;		/* errno reading it on the sender's side, 0 */
	uint32_t flags;		/* PROTO_ENTRY_F_* */
	uint32_t nlink;		/* link count (non-directories) */
};
#define PROTO_ENTRY_F_HASHED (1u << 0)	/* hash holds the content digest */
#define PROTO_ENTRY_F_ROOT (1u << 1)	/* the tree's root (path "."): first of
					 * a whole tree's entries, not counted
					 * by ENTRIES_END */

const char *proto_type_name(unsigned type);
const char *proto_err_name(unsigned code);
/* "create", "rename", ... for an enum journal_op_type sent in OP frames. */
const char *proto_op_name(unsigned op);

/* Parses and validates a 24-byte header (magic, type, length limits, clen
 * rule) without the check. Returns 0 or -EBADMSG. */
int proto_hdr_parse(const uint8_t *buf, struct proto_hdr *h);
/* Writes a header (check as given) into buf[24]. */
void proto_hdr_write(uint8_t *buf, const struct proto_hdr *h);

/*
 * Looks at the front of IN. Returns 1 and fills *f when a whole frame is
 * there and its header and check are valid (the frame is made contiguous
 * with evbuffer_pullup; f->payload is valid until proto_frame_consume or
 * any other change to IN); 0 when more bytes are needed; -EBADMSG for a
 * bad frame (IN is left as it is). The magic is checked from the first
 * byte and the header as soon as it is complete, so garbage is rejected
 * without waiting for 24 or len bytes.
 */
int proto_frame_next(struct evbuffer *in, struct proto_frame *f);
/*
 * proto_frame_next on flat memory: BUF holds HAVE bytes from a frame's
 * start. Returns 1 with *F (payload inside BUF) for a whole valid frame,
 * 0 when more bytes are needed (f->h is set once the header is complete,
 * so the caller knows how many: PROTO_HDR_LEN + f->h.len), -EBADMSG.
 */
int proto_frame_parse(uint8_t *buf, size_t have, struct proto_frame *f);
/* Drains the frame returned by proto_frame_next. */
void proto_frame_consume(struct evbuffer *in, const struct proto_frame *f);

/* Decoders: the payload must decode exactly (no trailing bytes). Return 0
 * or -EBADMSG. proto_decode_data does not hash the block: call
 * proto_data_verify before using the bytes. */
int proto_decode_hello(const struct proto_frame *f, struct proto_hello *m);
int proto_decode_op(const struct proto_frame *f, struct proto_op *m);
int proto_decode_data(const struct proto_frame *f, struct proto_data *m);
int proto_decode_attr(const struct proto_frame *f, struct proto_attr *m);
/* Checks every name (non-empty, no '/', not "." or "..", at most
 * PROTO_NAME_MAX bytes). */
int proto_decode_prune(const struct proto_frame *f, struct proto_prune *m);
/* BATCH_END and ACK: one seq. */
int proto_decode_seq(const struct proto_frame *f, uint64_t *seq);
int proto_decode_heartbeat(const struct proto_frame *f, uint64_t *now_ms);

/* The dead-link rule, the same on both ends (docs/protocol.md, HEARTBEAT):
 * each end sends a HEARTBEAT after a heartbeat interval without sending,
 * and declares the link dead after PROTO_DEAD_BEATS intervals in which
 * nothing arrived. */
#define PROTO_DEAD_BEATS 5
int proto_decode_goodbye(const struct proto_frame *f, const char **reason);
int proto_decode_error(const struct proto_frame *f, struct proto_error *m);
/* 0 if XXH3-64(m->bytes) == m->xxh3, else -EBADMSG. */
int proto_data_verify(const struct proto_data *m);

/* A frame of TYPE whose payload LEN bytes are already encoded (the
 * messages of proto_gen.c). 0, -EINVAL or -ENOMEM. */
int proto_encode_raw(struct evbuffer *out, uint16_t type, const void *payload, size_t len);

/* Encoders: append one whole frame to OUT. Return 0, -EINVAL (a field over
 * its limit; nothing appended) or -ENOMEM. */
int proto_encode_hello(struct evbuffer *out, const struct proto_hello *m);
int proto_encode_entry(struct evbuffer *out, const struct proto_entry *m);
int proto_decode_entry(const struct proto_frame *f, struct proto_entry *m);
/* ENTRIES_END: COUNT entries were sent; ERR is 0, or the errno that
 * stopped the walk (the inventory is then incomplete). */
int proto_encode_entries_end(struct evbuffer *out, uint64_t count, uint32_t err);
int proto_decode_entries_end(const struct proto_frame *f, uint64_t *count, uint32_t *err);
int proto_encode_op(struct evbuffer *out, uint64_t seq, const struct journal_op *op);
int proto_encode_attr(struct evbuffer *out, const struct proto_attr *m);
int proto_encode_prune(struct evbuffer *out, const struct proto_prune *m);
int proto_encode_batch_end(struct evbuffer *out, uint64_t seq);
int proto_encode_ack(struct evbuffer *out, uint64_t seq);
int proto_encode_heartbeat(struct evbuffer *out, uint64_t now_ms);
int proto_encode_goodbye(struct evbuffer *out, const char *reason);
int proto_encode_error(struct evbuffer *out, uint32_t code, const char *text);
/* ERROR with PROTO_F_RETRY: the connection stays up. */
int proto_encode_error_retry(struct evbuffer *out, uint32_t code, const char *text);

/*
 * DATA: hashes the block (XXH3-64, the only time the send path hashes it),
 * copies the header and fixed fields into OUT and adds the block by
 * reference (evbuffer_add_reference: no copy). cleanup(block, len, arg) is
 * called by libevent once the block has been written out or OUT is freed;
 * cleanup may be NULL for memory that outlives OUT. On -EINVAL nothing was
 * appended and cleanup is not called. On -ENOMEM OUT may hold a partial
 * frame: the connection must be dropped. *xxh3_out (may be NULL) gets the
 * block's hash.
 */
int proto_encode_data(struct evbuffer *out, const char *path, uint64_t offset,
		      const void *block, uint32_t len,
		      evbuffer_ref_cleanup_cb cleanup, void *cleanup_arg,
		      uint64_t *xxh3_out);
/* DATA with the block's XXH3-64 computed by the caller (the sender hashes
 * a block once, to compare it with what the peer holds, and sends that
 * hash). Otherwise as proto_encode_data. */
int proto_encode_data_hashed(struct evbuffer *out, const char *path, uint64_t offset,
			     const void *block, uint32_t len, uint64_t xxh3,
			     evbuffer_ref_cleanup_cb cleanup, void *cleanup_arg);

/* ---- the convergence engine's frames (proto_delta.c; docs/protocol.md,
 * "Delta: trees and block hashes") ---- */

/* Delta block sizes: a power of two in [MIN, MAX]; MAX keeps one delta
 * block within one DATA frame. */
#define PROTO_DELTA_BLOCK_MIN (4u << 10)
#define PROTO_DELTA_BLOCK_MAX PROTO_BLOCK_SIZE
#define PROTO_HASHES_CHUNK 8192u	/* hashes per HASHES frame (128 KiB) */

/* TREE_REQ flags */
#define PROTO_TREE_F_CHECKSUM (1u << 0)	/* hash every file's content, fresh */
#define PROTO_TREE_F_SUBTREE (1u << 1)	/* include the root entry of PATH itself */

struct proto_tree_req {
	uint32_t flags;
	const char *path;	/* the subtree ("" = the whole store) */
};

/* HASH_REQ flags (any other bit: a bad frame) */
#define PROTO_HASH_F_ONE_NAME (1u << 0)	/* a file with other names gets err
					 * EMLINK, no list (a repair must not
					 * write into an inode others share) */
struct proto_hash_req {
	uint32_t block_size;
	uint32_t flags;		/* PROTO_HASH_F_* */
	const char *path;
};

#define PROTO_HASHES_F_LAST (1u << 0)	/* the only flag */
struct proto_hashes {
	const char *path;
	uint64_t size;		/* the file's size when hashed */
	uint32_t block_size;
	uint32_t first;		/* index of hashes[0] */
	uint32_t count;		/* hashes in this frame */
	uint32_t flags;		/* PROTO_HASHES_F_* */
	uint32_t err;		/* errno: no hashes (missing, not a file) */
	const uint8_t *hashes;	/* count * 16 bytes (XXH3-128, canonical) */
};

struct proto_file_check {
	const char *path;
	uint64_t size;
	uint32_t block_size;
	uint8_t digest[16];	/* XXH3-128 of the block hashes back to back */
};

/* Blocks of a file of SIZE bytes at BS (a valid block size). */
static inline uint64_t proto_blocks(uint64_t size, uint32_t bs)
{
	return (size + bs - 1) / bs;
}
/* True if BS is a valid delta block size. */
bool proto_block_size_ok(uint32_t bs);

int proto_encode_tree_req(struct evbuffer *out, const struct proto_tree_req *m);
int proto_decode_tree_req(const struct proto_frame *f, struct proto_tree_req *m);
int proto_encode_hash_req(struct evbuffer *out, const struct proto_hash_req *m);
int proto_decode_hash_req(const struct proto_frame *f, struct proto_hash_req *m);
/* A HASHES frame must be consistent in itself: a valid block size,
 * first + count within the file's blocks, count <= PROTO_HASHES_CHUNK,
 * the blob exactly count * 16 bytes, no hashes with err set. */
int proto_encode_hashes(struct evbuffer *out, const struct proto_hashes *m);
int proto_decode_hashes(const struct proto_frame *f, struct proto_hashes *m);
int proto_encode_file_check(struct evbuffer *out, const struct proto_file_check *m);
int proto_decode_file_check(const struct proto_frame *f, struct proto_file_check *m);

#endif
