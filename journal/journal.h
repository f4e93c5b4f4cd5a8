/*
 * journal — the crash-safe change journal of a twinfs primary.
 *
 * Owns the files under STATE/journal/. The FUSE worker threads append to it
 * (through this header only) and the sender thread takes batches from it;
 * every function here is thread-safe unless it says otherwise.
 *
 * Model
 *   - Namespace operations (create, mkdir, mknod, symlink, link, rename,
 *     unlink, rmdir, setattr incl. truncate, setxattr, removexattr) are
 *     records with a sequence number, appended in the order they were
 *     applied to the store. The fs brackets "apply to the store + append"
 *     with journal_ns_lock()/journal_ns_unlock() so that store order and
 *     journal order agree.
 *   - Data writes are not copied into the journal. journal_mark_dirty()
 *     records the inode and byte range in memory (ranges merged); the
 *     sender later reads the bytes from the store through the fd the
 *     journal keeps for the inode.
 *   - Durability marks (DRBD's activity log, at file level): before the
 *     first change of an epoch to a directory's entries or to a file that
 *     existed before the epoch, a MARK record naming it is made durable
 *     (group commit: one fdatasync serves every waiting thread). After a
 *     crash only marked directories (entries with ctime >= mark) and marked
 *     files are re-checked, never the whole tree. Files created in the
 *     epoch are covered by their directory's mark, so a copy of 10,000
 *     small files into 50 folders waits for ~50 commits, not 10,000.
 *   - Records carry an XXH3 checksum; a torn tail is detected and cut on
 *     open. Other records are group-committed every commit_ms.
 *   - At the size limit the journal stops storing records for the affected
 *     files and records "needs scan" for them instead; writers never block
 *     on space and no change is forgotten.
 *   - The peer acknowledges cumulative sequence numbers (journal_ack); acked
 *     segments are deleted; when everything is acked the epoch ends and the
 *     in-memory marks are forgotten.
 */
#ifndef TWINFS_JOURNAL_H
#define TWINFS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "journal/op.h"

struct journal;

/* A decoded record as handed to the sender; owned by its batch. */
struct journal_rec {
	uint64_t seq;
	struct journal_op op;	/* pointers point into the batch's memory */
};

struct journal_range {
	uint64_t off, len;
};

/* A file whose data must be sent. */
struct journal_dirty {
	char *path;		/* relative path as of the batch's end_seq */
	int fd;			/* O_PATH or O_RDONLY fd on the store inode, owned by
				 * the batch (-1 after crash recovery: open by path) */
	uint64_t ino;
	bool whole;		/* send the whole file (or block-hash delta) */
	/* Marked by crash recovery (or a bare path that lost its inode): the
	 * peer may hold any part of it, so the sender compares block hashes
	 * instead of sending it whole (netsync/primary/sender_delta.c). */
	bool recovered;
	struct journal_range *ranges;	/* sorted, disjoint, merged */
	size_t n_ranges;
	uint64_t bytes;		/* sum of range lengths (or file size if whole) */
};

struct journal_batch {
	uint64_t first_seq;	/* first record in this batch (0 if none) */
	uint64_t end_seq;	/* the JOP_BATCH seq: acking it acks the batch */
	struct journal_rec *recs;
	size_t n_recs;
	struct journal_dirty *files;
	size_t n_files;
	uint64_t data_bytes;	/* sum of files[].bytes */
};

struct journal_opts {
	const char *state_dir;	/* journal lives in STATE/journal/ */
	const char *store_dir;	/* the store root (for paths and recovery) */
	uint64_t size_limit;	/* bytes of unacked records kept on disk */
	uint32_t commit_ms;	/* group-commit window, default 5 */
	/* A journal with no ack file and no segment yet starts after this
	 * seq (a promoted node continues the seqs of the data it holds). */
	uint64_t base_seq;
};

struct journal_stats {
	uint64_t head_seq;	/* last seq appended */
	uint64_t durable_seq;	/* last seq known durable on local disk */
	uint64_t acked_seq;	/* last seq the peer acknowledged */
	uint64_t sent_seq;	/* end_seq of the last batch taken */
	uint64_t pending_ops;	/* records after acked_seq */
	uint64_t pending_bytes;	/* dirty data bytes not yet acked (estimate) */
	uint64_t dirty_files;	/* files with unsent data */
	uint64_t unmarked_files; /* pinned: written behind the fs (passthrough),
				  * not yet queued (journal_pin) */
	uint64_t needs_scan;	/* paths recorded as needing a scan */
	uint64_t disk_bytes;	/* size of journal files on disk */
	uint64_t segments;	/* segment files on disk */
	uint64_t epoch;
	uint64_t store_syncs;	/* syncfs of the store before the ack file moved */
	/* The ack file's seq: every change up to it is durable on the peer
	 * and in this node's store; recovery re-checks what follows. */
	uint64_t acked_durable_seq;
	/* Wall-clock ns (CLOCK_REALTIME, kernel-tick resolution) of the
	 * oldest change the peer does not hold durably; 0 when it holds
	 * everything. now - this is the recovery point: what would be lost
	 * if this node died now. */
	uint64_t oldest_change_ns;
};

/* Opens (creating if needed) STATE/journal, recovers after a crash: cuts a
 * torn tail, loads unacked records, and turns marks after the last ack into
 * dirty files (whole) by scanning marked directories. Returns 0 or -errno. */
int journal_open(const struct journal_opts *o, struct journal **out);
/* Commits and closes. Not concurrently with any other call. */
void journal_close(struct journal *j);

/* Serialises namespace changes: the fs holds this lock across applying an
 * operation to the store and journal_append(). */
void journal_ns_lock(struct journal *j);
void journal_ns_unlock(struct journal *j);

/* Added by the fs: makes durable, before the fs applies OP to the store,
 * the marks that journal_append(OP) would otherwise write after it (the
 * directory marks of op->path and, for rename/link, op->path2), so that a
 * crash between the store change and the append still leaves the change
 * covered by a durable mark. Caller holds the ns lock. Returns 0 or
 * -errno (the fs then still applies and appends the op). */
int journal_prepare(struct journal *j, const struct journal_op *op);

/* Appends a namespace op (caller holds the ns lock). May wait for a group
 * commit if the op's directory has no durable mark in this epoch. Returns
 * the record's seq (> 0) or -errno (the store op already happened: the fs
 * logs it and still replies success; the journal records needs-scan). */
int64_t journal_append(struct journal *j, const struct journal_op *op);

/* Records that [off, off+len) of inode INO changed. fd is any fd on the
 * inode (the journal dups it on first use). Called after a successful
 * write to the store; cheap (a hash lookup and range merge) except for the
 * first change in an epoch of a file created before the epoch, which waits
 * for its durable mark. Returns 0 or -errno. */
int journal_mark_dirty(struct journal *j, uint64_t ino, int fd,
		       uint64_t off, uint64_t len);
/* A file that something outside the fs writes (FUSE passthrough) was
 * written and its ranges are not marked yet: makes its mark durable in
 * this epoch, as journal_mark_dirty(len 0), and keeps the epoch from
 * ending (so that the ack file stays below the mark and a restart after a
 * crash sends the file) until ranges of it are marked, journal_unpin, or
 * the inode is forgotten; the epoch then ends at the next ack that leaves
 * nothing pending. 0 or -errno. */
int journal_pin(struct journal *j, uint64_t ino, int fd);
void journal_unpin(struct journal *j, uint64_t ino);
/* The inode was truncated to SIZE (ranges beyond are dropped); the
 * setattr itself is journalled with journal_append. */
void journal_truncate(struct journal *j, uint64_t ino, uint64_t size);
/* The inode is gone (last link removed and forgotten): drop its dirty
 * state and close the journal's fd. */
void journal_forget(struct journal *j, uint64_t ino);

/*
 * Writes the fs cannot see (FUSE passthrough: the kernel writes the store
 * file itself) are marked dirty by a scan the fs provides: it marks each
 * such file that is open for writing and changed since its last mark
 * (with force, also every one open read-write, which a shared mapping
 * can change without a trace). The primary runs it with force before a
 * `twinfs sync` barrier, and without on its 1 s tick (the fs then spaces
 * the marks of a big file).
 * The fs sets it once mounted and clears it (NULL) before it goes away;
 * journal_scan waits for a running scan before a clear returns.
 */
typedef void (*journal_scan_fn)(void *arg, bool force);
void journal_set_scan(struct journal *j, journal_scan_fn fn, void *arg);
void journal_scan(struct journal *j, bool force);

/*
 * Records that PATH ("" = the whole store) changed in a way the journal
 * did not see (the mount-time store scan, netsync/delta/scan.h): a durable
 * NEEDS_SCAN the sender resyncs from the store, before any later record.
 * Without flags the path's whole state is sent (a directory's subtree);
 * JSCAN_NAMES asks, for a directory, for its entry and its list of names
 * only (the peer removes the names it lacks). A path already covered by a
 * whole scan of itself or an ancestor in this epoch is not recorded
 * again. Returns the record's seq (> 0) or -errno; journal_commit makes
 * it durable. Takes mu; any thread.
 */
#define JSCAN_NAMES (1u << 0)
int64_t journal_needs_scan(struct journal *j, const char *path, uint32_t flags);
/* True while the journal records paths for rescan instead of ops. */
bool journal_overflowed(struct journal *j);

/* True if crash recovery at journal_open marked the regular file at PATH
 * dirty whole: its content, attributes and xattrs go to the peer anyway,
 * so the mount-time scan need not send it again. Read-only after open. */
bool journal_recovered_path(struct journal *j, const char *path);

/* Makes every record appended so far durable (fsync path). 0 or -errno. */
int journal_commit(struct journal *j);

/* Returns a seq S such that once acked_seq >= S, every change made before
 * this call is on the peer; wakes the sender so that a batch covering it
 * is taken promptly. Returns acked_seq if nothing is pending. */
uint64_t journal_barrier(struct journal *j);
/* Blocks until acked_seq >= seq or timeout_ms passes (-1: forever).
 * Returns 0, -ETIMEDOUT, or -ESHUTDOWN if the journal is closing. */
int journal_wait_acked(struct journal *j, uint64_t seq, int timeout_ms);

/* For the sender. An eventfd readable whenever there is something to take
 * (new records, dirty data, a barrier). The sender reads it to clear it. */
int journal_notify_fd(struct journal *j);
/* Takes everything pending as one batch: records after the last batch in
 * order, then the dirty files with paths resolved as of the batch end.
 * max_bytes bounds the data (files beyond stay dirty; 0: no bound).
 * Returns 0 and *out, or -EAGAIN when there is nothing to take. */
int journal_take_batch(struct journal *j, uint64_t max_bytes,
		       struct journal_batch **out);
/* Puts a batch that was sent but not acked back (on disconnect), so the
 * next take re-sends it. Takes ownership. */
void journal_requeue(struct journal *j, struct journal_batch *b);
/* For a baseline (full-state) send: the next journal_take_batch returns a
 * batch, with a BATCH record appended now or later, even if nothing else
 * is pending, so that the baseline has a fresh seq the peer can ack. */
void journal_owe_batch(struct journal *j);
void journal_batch_free(struct journal_batch *b);
/* The peer has applied (and, if durable, synced) everything up to seq. */
int journal_ack(struct journal *j, uint64_t seq);
/* Waits until the ack file holds what journal_ack allowed it (it moves
 * after a syncfs of the store, on the journal's own thread: jackfile.c).
 * 0, -ETIMEDOUT, or -EIO if the writer stopped short (it logged why). */
int journal_ackfile_flush(struct journal *j, int timeout_ms);
/* Rewinds so that the next batch starts after SEQ (the peer's applied seq
 * from its hello); batches after it are re-sent. */
int journal_rewind(struct journal *j, uint64_t peer_seq);

void journal_get_stats(struct journal *j, struct journal_stats *st);

/* Offline: lists the paths with changes not acknowledged by the peer
 * (records after the ack, marks resolved by scanning), one per call of
 * fn, with the first reason; a path renamed after another change comes
 * once more with why "renamed". Used by `twinfs status --pending` when
 * the mount is not running.
 * Returns 0 or -errno. */
int journal_list_pending(const char *state_dir, const char *store_dir,
			 void (*fn)(const char *path, const char *why, void *arg),
			 void *arg);
/* The same, and below each directory listed as "needs-walk" (a crash may
 * have lost records of changes in it) every entry changed in the crash
 * window, as "window-entry": each path that may hold a change the peer
 * lacks is named, for `twinfs demote` to keep a copy of it. */
int journal_list_pending_deep(const char *state_dir, const char *store_dir,
			      void (*fn)(const char *path, const char *why, void *arg),
			      void *arg);

#endif
