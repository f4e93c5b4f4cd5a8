/*
 * syncer — makes the store durable off the event loop: one thread that
 * takes "durable up to seq N" jobs and reports, through an eventfd watched
 * by the loop, the highest seq whose changes are now durable. A job names
 * the files and directories its batch touched (fsync each) or, when there
 * were too many, asks for a syncfs of the whole store filesystem. Jobs
 * queued while the thread is busy are done together.
 * syncer_request/syncer_stop: loop thread only; the callback runs on the
 * loop.
 */
#ifndef TWINFS_SYNCER_H
#define TWINFS_SYNCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

/* A job holds at most this many files/directories to fsync (a batch
 * that touches more hands its set off early: receiver_set_spill). The
 * fds of every job of a round get one writeback kick, then are fsynced
 * together; only a whole_fs job costs a syncfs. See syncer.c. */
#define SYNCER_FSYNC_MAX 4096
/* fsyncs run on up to this many threads at once, at least this many fds
 * each (see syncer.c, "Parallel fsync"). */
#define SYNCER_FSYNC_THREADS 8
#define SYNCER_FDS_PER_THREAD 4

/* What must be synced for one batch. fds are owned (closed when done). */
struct sync_set {
	int *fds;		/* files and directories to fsync */
	size_t n;
	bool whole_fs;		/* syncfs instead (fds may still be listed) */
};

/* Runs SET now and waits for it: fsync each fd (in parallel, see above),
 * or syncfs(fs_fd) when set->whole_fs; closes and frees the fds. Returns 0 or -errno (the first
 * failure; every fd is still tried). */
int sync_set_run(struct sync_set *set, int fs_fd);
/* Closes and frees without syncing. */
void sync_set_free(struct sync_set *set);

struct syncer;

/* done(seq, err, arg): the changes of every job up to seq are durable
 * (err == 0), or a sync failed with -err. */
typedef void (*syncer_done_fn)(uint64_t seq, int err, void *arg);

/* Runs on the syncer thread after a successful sync up to seq (e.g. to
 * record it durably); its -errno becomes the job's error. */
typedef int (*syncer_commit_fn)(uint64_t seq, void *arg);

/* fs_fd: an fd on the store's filesystem for syncfs (dup'ed). commit may
 * be NULL. */
int syncer_start(struct event_base *base, int fs_fd, syncer_done_fn done,
		 syncer_commit_fn commit, void *arg, struct syncer **out);
/* Queues a job; takes the set's fds (SET is left empty). seq 0: a job
 * that makes no batch durable by itself (nothing recorded or reported
 * for it but an error); jobs run in the order queued. */
int syncer_request(struct syncer *s, uint64_t seq, struct sync_set *set);
/* How many fds the queued and running jobs hold, and how many jobs. */
size_t syncer_pending_fds(struct syncer *s);
size_t syncer_pending_jobs(struct syncer *s);
/* Finishes the queued jobs, stops the thread and returns the last seq made
 * durable (its error in *err) without calling done. Safe with NULL. */
uint64_t syncer_stop(struct syncer *s, int *err);

#endif
