/*
 * journal_int — the journal's private state, shared by its own sources
 * (journal.c: append, marks, commit; jopen.c: open, recovery, close;
 * jbatch.c: batches, acks; jpending.c: recovery of marks, offline
 * listing) and its unit tests.
 * Nothing outside journal/ and tests/unit/journal/ includes it.
 */
#ifndef TWINFS_JOURNAL_INT_H
#define TWINFS_JOURNAL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "journal/jage.h"
#include "journal/jhandle.h"
#include "journal/journal.h"
#include "journal/jseg.h"
#include "common/pathset.h"
#include "journal/rangeset.h"

/* Segment size at which the committer starts a new segment file. 64 MiB;
 * unit tests lower it to exercise rotation and trimming. */
extern uint64_t journal_segment_bytes;
/* Above this many disjoint dirty ranges an inode is sent whole (its ranges
 * are dropped), which bounds memory for random writers. */
#define JOURNAL_RANGES_MAX 1024
/* Most files one batch takes (and so most fds it opens); the rest stay
 * dirty for the next batch. Unit tests lower it. */
extern size_t journal_batch_files;
/* Without file handles (a filesystem that has none): most dup'd fds the
 * journal keeps for dirty inodes; beyond it files are named by path
 * (NEEDS_SCAN). Unit tests lower it. */
extern size_t journal_fds_max;
/* Tests: behave as if the store had no file handles. */
extern bool journal_no_handles;
/* Tests of mark resolution: pretend no record was lost (no walks). */
extern bool journal_no_lost_window;
/* Tests of failure paths: journal_append_locked, and tracking a taken
 * batch as in flight, fail with this -errno (0: they do not). */
extern int journal_fail_append;
extern int journal_fail_inflight;
/* Marks record a time this long before now: the kernel stamps ctime from
 * a coarse clock that can lag CLOCK_REALTIME. 1 s; unit tests lower it so
 * that files made just before count as older than a mark, with no wait. */
extern uint64_t journal_mark_slack_ns;

/* One inode the fs has written or created. Protected by journal.mu. */
struct jinode {
	struct jinode *hnext;		/* inode hash chain */
	struct jinode *dnext, *dprev;	/* dirty list, when on_dirty */
	bool on_dirty;
	bool whole;			/* send the whole file */
	bool recovered;			/* marked by crash recovery (journal.h) */
	uint64_t ino;
	int fd;				/* the journal's dup while dirty, or -1
					 * (only without a handle) */
	struct file_handle *fh;		/* names the inode without an fd, or
					 * NULL; kept until the inode is dropped */
	uint64_t mark_epoch;		/* epoch in which it is covered: created
					 * in it, or its MARK_FILE appended */
	uint64_t mark_seq;		/* that MARK_FILE's seq (0: created) */
	struct rangeset ranges;
	bool pinned;			/* journal_pin: keeps the epoch open */
};

/* Encoded records not yet written, with the offsets where a new segment
 * starts. Protected by journal.mu; the committer swaps it out. */
struct jbuf {
	uint8_t *p;
	size_t len, cap;
	struct jbuf_break { size_t off; uint64_t first_seq; } *brk;
	size_t nbrk, capbrk;
	uint64_t last_seq;
};

/* A batch handed to the sender, with the memory its records point into. */
struct jbatch {
	struct journal_batch b;
	uint8_t *raw;
	bool barrier;	/* taken while a barrier was owed */
	uint64_t since_ns;	/* its oldest change (jage.c), for a requeue */
};

/* An outstanding (taken, not yet acked) batch, for requeue and stats. */
struct jinflight {
	uint64_t end_seq, bytes;
};

struct journal {
	char *dir;			/* STATE/journal */
	char *store;			/* realpath of the store root */
	size_t store_len;
	int dirfd;			/* STATE/journal */
	int lockfd;			/* STATE/journal/lock, flock'd: one owner */
	uint64_t size_limit;
	uint32_t commit_ms;
	uint64_t base_seq;	/* journal_opts.base_seq */

	pthread_mutex_t ns_mu;		/* journal_ns_lock; also held by take_batch */
	pthread_mutex_t ack_mu;		/* serialises ack file writers */
	pthread_mutex_t scan_mu;	/* scan_fn/scan_arg, held across a scan */
	journal_scan_fn scan_fn;
	void *scan_arg;
	pthread_mutex_t mu;		/* everything below */
	pthread_cond_t commit_cv;	/* committer: there is work / a waiter */
	pthread_cond_t durable_cv;	/* durable_seq moved, or an I/O error */
	pthread_cond_t acked_cv;	/* acked_seq moved, or closing */

	uint64_t head_seq, durable_seq, acked_seq, sent_seq, epoch;
	uint64_t batch_rec_seq;	/* the last BATCH record a take appended (jbatch.c) */
	uint64_t barrier_seq;		/* a batch ending at >= this is owed */
	uint64_t barrier_floor;		/* lowest seq handed out by a barrier
					 * not yet answered by a complete take */
	uint64_t ack_hold;		/* acks are held below this (0: none):
					 * a barrier take left files behind */
	uint64_t ack_release;		/* acking this releases ack_hold */
	uint64_t taking_end;		/* end_seq of a take not yet collected */
	struct jbuf buf;
	uint64_t first_buffered_ns;	/* when buf became non-empty */
	uint32_t commit_waiters;
	int io_error;			/* sticky -errno from the committer */
	bool closing;
	bool overflow;			/* size limit hit: ops become needs-scan */
	bool rotate_next;		/* next record starts a new segment */
	/* A NEEDS_SCAN of the whole store is owed and not appended yet
	 * (recovery dropped segments after a hole, or a NEEDS_SCAN failed to
	 * append): the only memory of it (journal_rescan_locked). */
	bool rescan_owed;

	struct jseg_info *segs;		/* live segments, including buffered bytes */
	size_t nsegs, capsegs;
	uint64_t disk_bytes;		/* sum of segs[].bytes */

	struct pathset marked_dirs;	/* MARK_DIR this epoch; value = seq */
	/* Directories made by MKDIR this epoch, covered by an ancestor's
	 * durable mark instead of their own (value = dir_gen then; an entry
	 * from an older generation no longer counts). */
	struct pathset covered_dirs;
	uint64_t dir_gen;		/* bumped by every directory rename */
	/* The ack file never passes the current epoch's first mark (seq
	 * first_mark, 0: none yet) until the epoch ends: a mark must survive
	 * on disk as long as the changes it covers may be unsent, or a crash
	 * forgets them (jbatch.c, journal_ack). file_acked is what the ack
	 * file holds (<= acked_seq); segments after it are kept. */
	uint64_t first_mark;
	uint64_t file_acked;
	size_t recover_walks;		/* NEEDS_SCAN walks journal_open queued */
	uint64_t covered_gen;		/* dir_gen when covered_dirs last grew */
	struct pathset needs_scan;	/* NEEDS_SCAN this epoch; value = seq */
	struct pathset lost_paths;	/* recovered dirty paths (no fd) */
	/* Regular files whose data marks crash recovery found (and marked
	 * dirty whole), by path (journal_recovered_path); set at open,
	 * read-only after. */
	struct pathset recovered_paths;
	struct jinode **itab;
	size_t itab_nb, itab_n;
	struct jinode *dirty_head, *dirty_tail;	/* newest first */
	uint64_t n_dirty;
	uint64_t n_pins;		/* inodes with pinned set */
	int rootfd;			/* the store root, O_RDONLY (handles) */
	struct jhandle_caps hcaps;	/* file handles usable on the store? */
	size_t n_fds;			/* dup'd fds held by inodes */

	/* The age of changes the peer lacks (jage.c): the wall-clock ns of
	 * the first change since the last take (0: none), and the taken,
	 * unacked batches with their oldest change's time. */
	uint64_t pend_since_ns;
	struct jage *ages;
	size_t n_ages, cap_ages;
	uint64_t age_last_batch, age_last_taken_ns;	/* recovery only */

	struct jinflight *inflight;	/* sorted by end_seq */
	size_t n_inflight, cap_inflight;

	int evfd;
	bool notified;			/* evfd written since the last take */

	/* Read cursor of take_batch (ns_mu): where next_seq starts on disk. */
	uint64_t rd_seq, rd_seg, rd_off;

	uint64_t n_commits;		/* group commits done (for tests/stats) */
	uint64_t commit_ns;		/* time spent writing + syncing them */

	int seg_fd;			/* active segment (committer only) */
	pthread_t committer;
	bool committer_started;

	/* The ack file's writer (jackfile.c): it moves the ack file to
	 * ackfile_want after a syncfs of the store. */
	pthread_cond_t ackfile_cv;	/* ackfile_want or file_acked moved, stop */
	pthread_t ackfile_thr;
	bool ackfile_started, ackfile_stop, ackfile_done;
	uint64_t ackfile_want;
	uint64_t ackfile_done_seq;	/* written, and its segments deleted */
	uint64_t n_store_syncs;		/* syncfs of the store before an ack file write */
};

/* journal.c: the committer thread's body, started by journal_open (jopen.c). */
void *journal_committer(void *arg);
/* jackfile.c: the ack file writer's body, started by journal_open. */
void *journal_ackfile_main(void *arg);
/* journal.c: TS = the CLOCK_MONOTONIC deadline for timed waits on the
 * journal's condition variables. */
void journal_timeout_at(struct timespec *ts, uint64_t mono_deadline_ns);

/* journal.c helpers used by jbatch.c, jopen.c and jpending.c (mu held). */
int64_t journal_append_locked(struct journal *j, const struct journal_op *op,
			      bool bypass_limit);
int journal_wait_durable_locked(struct journal *j, uint64_t seq);
void journal_notify_locked(struct journal *j);
struct jinode *journal_inode_find(struct journal *j, uint64_t ino);
struct jinode *journal_inode_get(struct journal *j, uint64_t ino);
void journal_inode_dirty(struct journal *j, struct jinode *e);
void journal_inode_clean(struct journal *j, struct jinode *e);
void journal_inode_drop(struct journal *j, struct jinode *e);
/* Makes e able to find its inode later from fd: a file handle, or (no
 * handles, or none for this inode) a dup of fd while under journal_fds_max.
 * -EMFILE when neither can be had (the caller names it by path). mu held. */
int journal_inode_track(struct journal *j, struct jinode *e, int fd);
/* Sets op->mtime to the mark time (the wall clock, less the ctime slack). */
void journal_mark_time(struct journal_op *op);
/* Store-relative: no leading '/', no empty, "." or ".." component. */
bool journal_path_ok(const char *p);
/* Records that path must be rescanned (see overflow). Returns a seq. */
int64_t journal_needs_scan_locked(struct journal *j, const char *path);
/* Appends the rescan of the whole store if rescan_owed; clears it once
 * appended. Returns 0 or -errno (still owed). mu held. */
int journal_rescan_locked(struct journal *j);
/* Relative path of the inode behind fd ("" = root), malloc'd; -ENOENT if
 * it is unlinked or outside the store. Any thread, no lock needed. */
int journal_fd_path(struct journal *j, int fd, char **out);

/* jpending.c: turns the marks after the ack into paths. Calls fn(path,
 * why) for the file of each MARK_FILE, and for each entry of each
 * MARK_DIR directory (and the directory) whose ctime >= the mark time. */
struct jpending_mark {
	enum journal_op_type type;
	char *path;
	struct timespec when;
};
/* LOST_SINCE (NULL: unknown) is when records may have started to be lost
 * (just before the last group commit): a directory whose entries changed
 * since is reported as "needs-walk" (names may have gone that only a walk
 * of it can tell), with nothing under it listed separately. */
int jpending_resolve_marks(const char *store, const struct jpending_mark *m, size_t n,
			   const struct timespec *lost_since,
			   void (*fn)(const char *path, const char *why, void *arg),
			   void *arg);
/* A RENAME record (FROM to TO, EXCHANGE: both ways) met after the marks
 * *M[0..*N): each mark at or below a moved path is added again under its
 * new path, with its time (the old path stays marked: what is made there
 * later has no mark of its own). 0 or -ENOMEM. */
int jpending_marks_rename(struct jpending_mark **m, size_t *n, size_t *cap,
			  const char *from, const char *to, bool exchange);
/* LOST_SINCE for the journal in DIRFD, not closed cleanly, of the store
 * in STOREFD: the newest segment's mtime less a slack for the commit
 * window and the coarse ctime clock; 0 (everything) if the store's file
 * system was mounted again since (jseg_storefs_changed). Returns 0 or
 * -ENOENT (no segment). Call before anything rewrites a segment. */
int jpending_lost_since(int dirfd, int storefd, struct timespec *out);

#endif
