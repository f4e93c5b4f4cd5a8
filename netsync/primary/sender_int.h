/*
 * sender_int — the sender's private state, shared by its three sources
 * (sender.c: the connection state machine, the take of batches, the pump;
 * sender_data.c: the cursor, file data blocks and their buffer pool;
 * sender_walk.c: repairs, NEEDS_SCAN paths and the baseline walk).
 * Everything here runs on the primary thread's event_base only.
 * Nothing outside netsync/primary/sender*.c includes it.
 */
#ifndef TWINFS_SENDER_INT_H
#define TWINFS_SENDER_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/pathset.h"
#include "journal/journal.h"
#include "netsync/delta/blockhash.h"
#include "netsync/primary/sender.h"
#include "netsync/primary/lineage.h"
#include "netsync/roles/divergence.h"
#include "netsync/primary/repairs.h"
#include "netsync/primary/resolver.h"
#include "netsync/roles/state.h"
#include "netsync/wire/proto.h"

struct bufferevent;
struct event;
struct evbuffer;
struct sentmap;
struct treewalk;

/*
 * Flow control — why three limits and not one.
 *
 * The sender never waits for a round trip per file or per block: it keeps
 * taking batches and putting frames on the wire while two things hold:
 *   - the bufferevent's output buffer holds less than OUT_HIGH_WM bytes
 *     (more would only pile up in our memory, the socket is the bottleneck;
 *     the write callback fires when it drains below OUT_LOW_WM and we
 *     continue where we stopped), and fewer than POOL_MAX data blocks
 *     are lent to it (small files make small blocks), and
 *   - less than WINDOW_BYTES of file data is unacknowledged (the peer
 *     applies and syncs in batches; the window lets many batches be in
 *     flight so that the peer's fsync of batch N overlaps the transfer of
 *     batch N+1, yet bounds what must be re-sent after a disconnect).
 * Within a batch, data is produced block by block from a cursor (file,
 * range, offset), so a 10 GiB batch costs no more memory than a small one:
 * at most OUT_HIGH_WM plus one block of buffers exist at any time. Each
 * block is pread into a pooled buffer once, hashed once with XXH3, and
 * handed to the output evbuffer by reference; the buffer returns to the
 * pool when libevent has written it to the socket.
 */
#define BLOCK_SIZE	PROTO_BLOCK_SIZE
#define OUT_HIGH_WM	(8u << 20)
#define OUT_LOW_WM	(4u << 20)
#define WINDOW_BYTES	(64ull << 20)
#define SEND_MAX_WRITE	(4u << 20)
/* TLS: records encrypted ahead of the socket at most (the filter's
 * output into the socket bufferevent). */
#define TLS_SEND_AHEAD	(1u << 20)
/* Blocks lent to the output at once, and kept for reuse: a small file's
 * block is small, so OUT_HIGH_WM alone would let hundreds be out, and a
 * fresh block faults its pages in during pread where a reused one does
 * not. */
#define POOL_MAX	64
#define RATE_SLOTS	5
/*
 * Sends of files of at least HELD_MIN_SIZE skip the blocks the peer holds
 * (netsync/sentmap.c); smaller files cost little to send again and would
 * only crowd the map. It pays for files written through passthrough,
 * which are marked from offset 0 to their end each time they change.
 * Skipping puts nothing on the wire, so a pump that has skipped
 * HELD_PER_PUMP bytes (read and hashed them) yields to the loop (ACKs,
 * heartbeats, status) and continues from cont_ev.
 */
#define HELD_MIN_SIZE	(4u << 20)
#define HELD_PER_PUMP	(64u << 20)

/* A batch sent (or being sent) and not yet acknowledged. */
struct inflight {
	struct journal_batch *b;
	uint64_t data_bytes;	/* data bytes sent for it so far */
	struct inflight *next;
};

/* Where streaming of the current batch stands. */
struct cursor {
	struct inflight *cur;	/* batch being streamed, NULL: take one */
	size_t rec;		/* next record to send */
	size_t file;		/* current file */
	size_t range;		/* current range of that file */
	uint64_t off;		/* next offset within that range */
	int fd;			/* readable fd of the current file, -1: none */
	bool own_fd;		/* fd was opened here (close it) */
	struct stat st;		/* fstat at file start (size bound, ATTR) */
	bool held;		/* this file's send consults s->held */
	/* Paths whose whole state is sent after the batch's dirty files (or,
	 * if the batch walks subtrees, before the walks): NEEDS_SCAN records, and every path named by a replayed batch when
	 * the peer said its last apply was interrupted (HELLO_F_DIRTY). */
	struct journal_dirty *repair;
	size_t n_repair, cap_repair;
	/* Subtrees whose whole current state is sent before the batch's
	 * dirty files (see "Baseline" below): the whole store for a baseline batch, a
	 * directory for a NEEDS_SCAN record naming one. */
	char **walk_roots;
	size_t n_roots, cap_roots, next_root;
	struct treewalk *walk;	/* the walk in progress, NULL: none */
	/* The directories the walk is in, innermost last, each with the
	 * names found in it so far, for the PRUNE sent when the walk leaves
	 * it (see "Baseline" below). */
	struct walk_dir {
		char *path;
		char *names;	/* NUL-terminated names back to back */
		size_t len, cap;
	} *dirs;
	size_t n_dirs, cap_dirs;
	/* A baseline batch: its own records and files are covered by the
	 * walk of the whole store and are not sent. */
	bool baseline;
	/* Folders whose names this batch sent for gone NEEDS_SCAN paths: an
	 * rm -rf while the journal is full makes one NEEDS_SCAN per name, all
	 * answered by the same folder's names (sender_scan.c). */
	struct pathset pruned;
	/* Paths whose nearest folder's names go once the batch's records are
	 * sent (gone NEEDS_SCAN paths, folders scanned for names; see
	 * sender_scan.c, "Names sent from the store go after the batch's
	 * records"). */
	struct pathset names_after;
	/* Paths whose whole state goes at the BATCH record: those records
	 * after an answered NEEDS_SCAN name (sender_scan_cover). */
	struct pathset paths_after;
	/* Of those, the paths of attribute changes, with the inode they
	 * changed: gone from the path by the BATCH record, the inode's
	 * other names go instead (sender_scan.c, scan_inode_names). */
	struct pathset inodes_after;
	/* Files with several names sent whole in this batch (by a walk or as
	 * a scan's entry), by inode: a later name of one, met by another walk
	 * or entry, goes as LINK to the first (cursor_link_first). */
	struct pathset blink_ids;	/* "dev:ino" -> index in blinks */
	char **blinks;
	size_t *blink_names_n;		/* names of blinks[i] sent */
	size_t n_blinks, cap_blinks, cap_blink_names_n;
	struct pathset blink_names;	/* every name sent of them -> index */
	/* Folders a NEEDS_SCAN or a repair changes on the peer (their names
	 * sent, an entry created in them): their times go once the walks are
	 * done, since what the walks create there changes their mtime on the
	 * peer (sender_put_attrs_after). */
	struct pathset attrs_after;
	/* Block-hash deltas (sender_delta.c): every HASH_REQ of this batch in
	 * the order asked (the peer answers in that order), the next to
	 * answer, and the next walk file to send once answered. */
	struct sdelta **dq;
	size_t dq_n, dq_cap, dq_head, dq_next;
	struct sdelta **fdelta;	/* per batch file, NULL: sent as marked */
	bool fasked;		/* the batch's recovered files were asked for */
	struct sdelta **rdelta;	/* per repair (repair[i]), NULL: whole */
	size_t cap_rdelta;
	struct sdelta *dl;	/* the current file's, when it has an answer */
	/* A repair record waiting for the peer to say whether it holds each
	 * path as a file of one name (sender_delta_replace): the record's
	 * seq (0: none), one question per path (NULL: not a file here). */
	uint64_t rq_seq;
	struct sdelta **rq;
	size_t rq_n;
	/* The current delta file's own block hashes: from the sender's hash
	 * cache while the file's (dev, inode, size, mtime, ctime) match
	 * (mine_cached: a block whose hash equals the peer's is skipped
	 * unread), else filled as its blocks are read, and cached once all
	 * are (sender_put_data). */
	struct blockhash mine;
	struct stat mine_st;	/* the file's fstat when its reading began */
	bool mine_cached;
	uint32_t mine_hashed;	/* blocks hashed into mine as read */
	bool count_read;	/* a resync's file: counted at its first read */
};

/* A file whose content goes as a block-hash delta (sender_delta.c). */
struct sdelta {
	char *path;
	int fd;			/* a walk file's fd until it is queued */
	bool walk;		/* queued as a repair when answered */
	bool ready;		/* answered */
	int rc;			/* the answer: 1 a list, 2 SAME, -errno none */
	uint64_t size;		/* when asked */
	struct blockhash peer;
};

/* ---- data buffer pool (loop thread only) ----
 * Blocks handed to libevent by reference come back through pool_put_cb
 * when written, possibly after the sender is gone (libevent finalizes a
 * freed bufferevent on a later loop pass), so the pool is its own object,
 * freed by whichever of sender_free and the last returned block is last. */

struct pool {
	struct pool_buf *free_list;
	int n_free;
	int outstanding;	/* blocks lent to evbuffers */
	bool closed;		/* the sender is gone */
};

struct sender {
	struct event_base *base;
	struct journal *j;
	char *peer;
	char *state_dir;
	char *store_dir;
	bool insecure;
	struct tls_ctx *tls;	/* NULL: plaintext */
	char peer_auth[128];	/* who TLS authenticated, "" before/without */
	uint32_t heartbeat_s;
	const atomic_int *waiters;
	int store_fd;

	enum peer_state state;
	struct bufferevent *bev;
	struct event *retry_ev;
	struct event *take_ev;	/* next journal_take_batch allowed */
	double last_take;	/* clock_mono_s() of the last take */
	uint32_t backoff_ms;
	/* Repeated failures of one kind (sender_note_failure): the last
	 * ERROR's code and reason, how often in a row, the ack seq when it
	 * came (an ack past it is progress), when it was last logged loud. */
	char fail_kind[96];
	unsigned fail_count;
	uint64_t fail_acked;
	double fail_logged;
	double state_since;	/* clock_mono_s() of the last transition */
	double last_rx, last_tx;

	struct state_node id;
	uint64_t hello_gen;	/* id of the generation our last HELLO named */
	struct lineage lin;	/* generations, the peer's verdict (lineage.h) */
	struct divergence div;	/* the last split brain, path by path */
	bool split_stream;	/* streaming what does not conflict (sender_split.c) */
	bool div_stale;		/* a HELD list change was left out during a resolve */
	struct pathset split_aliased;	/* listed paths whose other names went */
	char res_error[PROTO_TEXT_MAX + 40];	/* why the last resolve failed ("") */
	struct resolver res;	/* `twinfs resolve`, `--restore` (resolver.h) */
	char peer_name[64];	/* the secondary's HELLO name (conflict names) */
	char name[64];		/* host name, sent in HELLO */
	uint64_t peer_generation;
	/* The peer was interrupted mid-apply: records up to this seq are
	 * replayed with the whole state of every path they name. */
	uint64_t repair_until;
	/* The journal head at the last HELLO: records up to it are replayed
	 * over what the peer acked (sender_put_rec, exchanges and whiteouts). */
	uint64_t resume_until;
	/* The journal head when this process began or last lost a peer: what
	 * it sent the peer was read from the store before then, so the peer's
	 * store can reflect records up to here that it has not acked (a
	 * NEEDS_SCAN answered, a file's data, a batch applied but not yet
	 * durable); records after it were never seen there. */
	uint64_t seen_until;
	/* This connection replays records (no baseline) over a peer that was
	 * interrupted mid-apply, until it acks repair_until: an apply error
	 * then asks for a baseline (sender_on_frame). */
	bool dirty_replay;
	/* ... and one was asked for since the peer last acked past the
	 * window: a path that fails in the baseline too goes to the repairs,
	 * not to a baseline on every other connection */
	bool dirty_rebaselined;
	uint64_t ack_pending;	/* highest ACK seen in this read, not yet recorded */

	/* Unacked batches, oldest first; the cursor's batch is the tail. */
	struct inflight *head, *tail;
	uint64_t inflight_bytes;
	uint64_t inflight_batches;
	uint64_t inflight_files;	/* files of those batches: an fd each */
	struct cursor c;

	struct pool *pool;
	/* What the peer holds of large files sent, and whose it is. */
	struct sentmap *held;
	uint8_t held_node[16];
	uint64_t held_generation;
	uint64_t bytes_held;	/* data not re-sent because the peer held it */
	int64_t held_budget;	/* bytes this pump may still skip */
	struct event *cont_ev;	/* continue a pump that yielded */

	uint64_t bytes_sent;
	uint64_t rate_slot[RATE_SLOTS];
	uint64_t rate_mark;	/* bytes_sent at the last tick */
	int rate_i;
	uint64_t reconnects;
	uint64_t apply_errors;	/* ERRORs naming a path the peer could not apply */
	/* Warnings about a link that is down (sender_warn_down): since when
	 * (clock_mono_s, 0: up), the last warning, events since it. */
	double down_since, warned_at;
	uint64_t down_events;
	char last_error[256];
	/* The peer cannot apply for now and holds the stream (ERROR with
	 * RETRY: its store is full); "" when it applies. */
	char stalled[256];
	double stalled_since;
	bool pumping;		/* re-entrancy guard for sender_pump */

	/* Baseline (full-state send), see "Baseline" below. */
	bool baseline_pending;	/* the next batch taken is a baseline */
	bool resync;		/* a baseline is sent and not yet acked */
	uint64_t baseline_end;	/* its batch's end seq (0: not taken yet) */
	double baseline_t0;
	uint64_t resync_files, resync_bytes;
	int walk_budget;	/* walk steps left in this pump */
	/* The journal head when the last walk ended: records up to it ran
	 * concurrently with the walk (0: none unacked). */
	uint64_t walk_window_end;
	bool rebaseline;	/* send a baseline on the next HELLO */
	const char *rebaseline_why;	/* why, for the log (a literal) */
	bool rebaseline_head;	/* that baseline resumes the journal at its head */
	/* Paths the peer failed to apply, repaired from the store (see
	 * "Apply errors" in sender.c). */
	struct repairs repairs;
	/* Answered NEEDS_SCAN paths and the journal head when each was
	 * answered (see "Scanned paths and the records after them",
	 * sender_scan.c). */
	struct scan_move {
		char *path;
		uint64_t until;
		bool open;	/* answered in the batch being sent */
	} *moves;
	size_t n_moves, cap_moves;
	/* Block-hash deltas of resyncs (sender_delta.c) */
	uint32_t delta_bs;		/* delta.block_size */
	/* STATE/hashcache: the block lists of this store's files, so that a
	 * resync reads only what changed since it last hashed them (the key
	 * includes ctime, which no write can keep). Loaded at start, saved
	 * when a baseline completes and at the end. */
	struct hashcache *hcache;
	uint64_t resync_files_read;	/* files whose content a resync read */
	uint64_t resync_bytes_read;
	uint64_t resync_bytes_matched;	/* read, and the peer had them */
	uint64_t resync_left_files, resync_left_bytes;	/* asked, not sent */
};

/* ---- sender.c ---- */

/* Sets the text sender_get_stats reports as last_error. */
void sender_set_error(struct sender *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sender_set_state(struct sender *s, enum peer_state st, const char *why);
/* Drops the connection (if any), requeues, schedules a reconnect. */
void sender_disconnect(struct sender *s, const char *why);

/* ---- sender_split.c ---- */

/* The HELLO's verdict is a split brain: this node's list goes out. 0 or
 * -errno. */
int sender_split(struct sender *s);
/* DIVERGED and RESOLVE frames. 0, or -errno to drop the connection. */
int sender_split_frame(struct sender *s, const struct proto_frame *fr);
/* The resolver's worker is done (resolver.h's callback). */
void sender_resolved(struct resolver *r, int rc, void *arg);

/* ---- sender_fail.c ---- */

#define BACKOFF_MIN_MS	200	/* the first wait before reconnecting */
#define BACKOFF_FAIL_MAX_MS 30000	/* repeated failures of one kind */

/* An APPLY error naming a path: noted for repair (0), or -EINVAL when
 * TEXT names no path (the connection is dropped as for any error). */
int sender_on_apply_error(struct sender *s, const char *text);
/* ERROR with RETRY: the peer holds the stream ("" ends it). */
void sender_on_peer_stalled(struct sender *s, const char *text);
/* Counts an ERROR of CODE/TEXT in a series of one kind and raises the
 * backoff; true when it is to be logged loud. */
bool sender_note_failure(struct sender *s, uint32_t code, const char *text);
/* An apply error of a replay over a peer interrupted mid-apply: true if
 * the next connection sends a baseline instead of a repair. */
bool sender_rebaseline_dirty(struct sender *s, const char *text);
/* An apply error while a walk's window is unacked: the next connection
 * sends a baseline. */
void sender_rebaseline_walk(struct sender *s);

/* ---- sender_data.c ---- */

/* The sender is gone: the pool frees itself once every lent block is back. */
void pool_close(struct pool *p);
size_t cursor_n_files(const struct cursor *c);
/* Closes the cursor's file, frees its repairs, walks and directories. */
void cursor_reset(struct cursor *c);
int sender_put_data(struct sender *s, struct evbuffer *out);

/* ---- sender_links.c ---- */

/* ST is a non-directory with several names, sent whole (or linked) as
 * PATH: the path this batch sent the same inode under before (not PATH),
 * or NULL after recording PATH as its first (also on no memory: then it
 * goes whole). Counts PATH among the names of the inode sent. */
const char *cursor_link_first(struct cursor *c, const struct stat *st, const char *path);
/* The same path, for an entry whose state a walk sends later: PATH is
 * neither recorded nor counted. */
const char *cursor_link_known(const struct cursor *c, const struct stat *st,
			      const char *path);
void cursor_forget_links(struct cursor *c);
/* Once the walks are done: every other name in the store of a linked file
 * this batch sent fewer names of than it has goes as LINK to its first
 * name. 1 if something went on the wire, 0, or -errno. */
int sender_put_link_groups(struct sender *s, struct evbuffer *out);

/* ---- sender_walk.c ---- */

void cursor_pop_dirs(struct cursor *c, size_t n);
int cursor_add_walk(struct cursor *c, const char *root);
/* True if a walk queued in this batch covers PATH (it or an ancestor). */
bool cursor_walks(const struct cursor *c, const char *path);
/* Queues PATH's whole state to be sent after the batch's dirty files. */
int cursor_add_repair(struct cursor *c, const char *path);
int sender_put_walk(struct sender *s, struct evbuffer *out);
struct treewalk_item;
/* The entry's user/trusted xattrs as SETXATTR ops with SEQ. */
/* The whole xattr state (user.*, trusted.*) of PATH, read through FD (>= 0)
 * or LPATH with the l* calls: REMOVEXATTR without a name listing the names
 * it keeps (docs/protocol.md), then a SETXATTR per name. 0 or -errno. */
int sender_put_xattr_state(struct evbuffer *out, uint64_t seq, const char *path, int fd,
			   const char *lpath);
int sender_put_xattrs(struct sender *s, struct evbuffer *out, uint64_t seq,
		      const struct treewalk_item *it);
void sender_baseline_start(struct sender *s, const char *why);

/* ---- sender_delta.c ---- */

/* At most this many HASH_REQs of a walk wait for their answers. */
#define DELTA_OUT_MAX 256
/* A walk file (FD, its lstat ST, taken) is asked for and sent when
 * answered (sender_delta_next). 0 or -errno. */
int sender_delta_walk(struct sender *s, struct evbuffer *out, const char *path, int fd,
		      const struct stat *st);
/* Once per batch, after its records: the recovered files and the repairs
 * without an answer yet are asked for. */
int sender_delta_files(struct sender *s, struct evbuffer *out);
/*
 * The repair of record SEQ replaces the peer's copy of each of the N
 * SCOPES (sender_put_replace). A regular file the peer holds as a file of
 * one name is not removed first: its blocks are compared and only those
 * that differ go. Returns 3 while the peer's answers are out (call again
 * with the same arguments), 0 once done, or -errno.
 */
int sender_delta_replace(struct sender *s, struct evbuffer *out, uint64_t seq,
			 const char *const *scopes, size_t n);
/* A HASHES frame: the answer of the oldest question. 0 or -errno. */
int sender_delta_on_hashes(struct sender *s, const struct proto_frame *fr);
/* Queues the next answered walk file as a repair: 1, or 0 if none. */
int sender_delta_next(struct sender *s);
/* Walk files asked for and not yet queued; questions unanswered. */
size_t sender_delta_pending(const struct cursor *c);
size_t sender_delta_unanswered(const struct cursor *c);
/* The delta of cursor file I (NULL: none). */
struct sdelta *cursor_sdelta(const struct cursor *c, size_t i);
/* Attaches D to repair I. 0 or -ENOMEM. */
int cursor_attach_rdelta(struct cursor *c, size_t i, struct sdelta *d);
void cursor_free_deltas(struct cursor *c);

/* ---- sender_scan.c ---- */

/* A NEEDS_SCAN record: the path's current state (or, gone, the names of
 * its nearest existing ancestor). 0 or -errno to drop the connection. */
int sender_put_scan(struct sender *s, struct evbuffer *out,
		    const struct journal_rec *r);
/* PATH's current state with SEQ: its entry now, its whole state walked
 * after the batch's records; gone, the names of its nearest ancestor. */
int sender_put_path(struct sender *s, struct evbuffer *out, uint64_t seq,
		    const char *path);
/* Record R names a path the peer failed to apply (see "Apply errors" in
 * sender.c): replaced by the current state of each path it names; UNTIL:
 * the covering repair's. 0, 3 while the peer's answers are out (called
 * again), or -errno. */
int sender_put_repair_rec(struct sender *s, struct evbuffer *out,
			  const struct journal_rec *r, uint64_t until);
/* The batch's BATCH record: repairs no record carried go now. Returns as
 * sender_put_repair_rec. */
int sender_put_open_repairs(struct sender *s, struct evbuffer *out, uint64_t seq);
/* PATH the peer failed to apply: the peer's copy removed and sent anew. */
int sender_put_replace(struct sender *s, struct evbuffer *out, uint64_t seq,
		       const char *path);
/* A NEEDS_SCAN record of PATH was answered: records up to the journal
 * head may still move it. 0 or -ENOMEM. */
int sender_scan_note(struct sender *s, const char *path);
/* Record R against the answered NEEDS_SCAN paths (sender_scan.c,
 * "Scanned paths and the records after them"): 1 if it is replaced by the
 * state of the paths it names (it must not be sent), 0 to send it, or
 * -errno. Called for a RENAME too while c->paths_after holds paths (they
 * follow it), kept paths or none. */
int sender_scan_cover(struct sender *s, const struct journal_rec *r);
/* The batch is sent whole (its walks done): the paths it answered were
 * read from the store until now, so records up to the journal head may
 * have moved them (sender_scan.c). */
void sender_scan_batch_end(struct sender *s);
void sender_scan_forget(struct sender *s);
/* R, sent as it is, is a RENAME the peer may hold the result of already
 * (sender_scan.c): both its names go whole at the BATCH record. 0 or
 * -ENOMEM. */
int sender_scan_replayed(struct sender *s, const struct journal_rec *r);
/* The batch's records are sent (its BATCH record): the names of the folder
 * of each path in c->names_after, as the store has them now, with SEQ.
 * 0 or -errno to drop the connection. */
int sender_put_names_after(struct sender *s, struct evbuffer *out, uint64_t seq);
/* The walks are done: the ATTR of each folder in c->attrs_after, as it is
 * now. 1 if it sent any, 0 if none were due. */
int sender_put_attrs_after(struct sender *s, struct evbuffer *out);
/* PRUNE frames listing NAMES (LEN bytes, NUL-terminated names) of PATH. */
int sender_put_names(struct sender *s, struct evbuffer *out, uint64_t seq,
		     const char *path, const char *names, size_t len);

#endif
