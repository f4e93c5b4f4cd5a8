/*
 * jopen — opening the journal (its directory and lock, the recovery scan
 * of the segments after the ack, the marks turned back into dirty files,
 * the committer thread) and closing it. journal_open and journal_close run
 * on the thread that owns the mount, before any other thread uses the
 * journal and after every other has stopped; shares struct journal with
 * journal.c through journal_int.h. The design is in journal.c.
 */
#include "journal/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "journal/journal_int.h"
#include "journal/jrec.h"

/* ---- open / close ---- */

struct journal_recover {
	struct journal *j;
	struct jpending_mark *marks;
	size_t n, cap;
	uint64_t first_seq;	/* of the first mark found */
	uint64_t oldest_mark_ns;	/* wall-clock time of the oldest mark */
};

static uint64_t journal_ts_ns(const struct timespec *ts)
{
	return ts->tv_sec > 0 ? (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec : 0;
}

static int journal_recover_rec(const uint8_t *rec, size_t len, uint64_t seq, void *arg)
{
	struct journal_recover *r = arg;
	struct journal_rec jr;
	uint64_t t;

	if (jrec_decode(rec, len, &jr) < 0)
		return 0;	/* checksummed but undecodable: skip it, say so */
	if (jr.op.type == JOP_BATCH)	/* the age of its changes (jage.c) */
		return jage_recover_batch_locked(r->j, seq, journal_ts_ns(&jr.op.mtime),
						 journal_ts_ns(&jr.op.atime));
	if (jr.op.type == JOP_RENAME && jr.op.path2)	/* marks follow it */
		return jpending_marks_rename(&r->marks, &r->n, &r->cap, jr.op.path,
					     jr.op.path2, jr.op.flags & RENAME_EXCHANGE);
	if (jr.op.type != JOP_MARK_DIR && jr.op.type != JOP_MARK_FILE)
		return 0;
	t = journal_ts_ns(&jr.op.mtime);
	if (t && (!r->oldest_mark_ns || t < r->oldest_mark_ns))
		r->oldest_mark_ns = t;
	if (!r->first_seq)
		r->first_seq = seq;
	if (ARRAY_GROW(r->marks, r->cap, r->n + 1, 64) < 0)
		return -ENOMEM;
	r->marks[r->n].type = jr.op.type;
	r->marks[r->n].when = jr.op.mtime;
	r->marks[r->n].path = strdup(jr.op.path);
	if (!r->marks[r->n].path)
		return -ENOMEM;
	r->n++;
	return 0;
}

/*
 * A recovered path becomes an ordinary dirty inode (sent whole) holding a
 * file handle (or, without handles, an O_PATH fd while under
 * journal_fds_max), so it follows later renames like any other dirty
 * file. A path that is gone needs nothing here (its directory is listed
 * too). Otherwise the path is kept as a name (fd -1 in the batch).
 * journal_open only.
 */
static void journal_recover_lost(const char *path, const char *why, void *arg)
{
	struct journal *j = arg;
	struct file_handle *fh = NULL;
	char full[PATH_MAX];
	struct jinode *e;
	struct stat st;
	int fd = -1, err;

	if (strcmp(why, "needs-walk") == 0) {
		/* A directory whose entries changed in the window whose records
		 * may be lost: the sender walks it (creates it, sends all it
		 * holds, removes names only the peer has), after every record
		 * kept from before and before any new one. */
		if (journal_needs_scan_locked(j, path) < 0) {
			/* A rescan of the whole store covers the walk. */
			log_warn("journal cannot record a walk after recovery; the whole "
				 "store will be rescanned", "path=%s", path);
			j->rescan_owed = true;
		} else {
			j->recover_walks++;
		}
		return;
	}
	snprintf(full, sizeof full, "%s%s%s", j->store, path[0] ? "/" : "", path);
	if (lstat(full, &st) < 0) {
		if (errno == ENOENT)
			return;
		goto out_lost;
	}
	if (strcmp(why, "marked-file") == 0 && S_ISREG(st.st_mode) &&
	    pathset_add(&j->recovered_paths, path, 0) < 0)
		log_warn("journal out of memory while recovering marks; the mount-time "
			 "scan may resend a file twice", "path=%s", path);
	if (!journal_no_handles)
		fh = jhandle_from_path(&j->hcaps, full, &err);
	if (!fh && j->n_fds < journal_fds_max) {
		fd = open(full, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return;
		if (fd >= 0 && fstat(fd, &st) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if ((fh || fd >= 0) && (e = journal_inode_get(j, st.st_ino)) != NULL) {
		if (!e->fh && e->fd < 0) {
			e->fh = fh;
			fh = NULL;
			if (fd >= 0) {
				e->fd = fd;
				fd = -1;
				j->n_fds++;
			}
		}
		free(fh);
		e->whole = true;
		e->recovered = true;
		rangeset_clear(&e->ranges);
		journal_inode_dirty(j, e);
		if (fd >= 0)
			close(fd);
		return;
	}
	free(fh);
	if (fd >= 0)
		close(fd);
out_lost:
	if (pathset_add(&j->lost_paths, path, 0) < 0)
		log_error("journal out of memory while recovering marks", "path=%s", path);
}

bool journal_recovered_path(struct journal *j, const char *path)
{
	return pathset_find(&j->recovered_paths, path) != NULL;
}

/* Without file handles the journal keeps up to journal_fds_max fds for
 * dirty inodes, and a batch opens up to journal_batch_files: let it use
 * the hard limit rather than the default soft 1024. */
static void journal_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_debug("cannot raise the open file limit", "err=%s", strerror(errno));
	}
}

static int journal_mkdir_p(const char *state, const char *dir)
{
	if (mkdir(state, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Open, phase 1: the journal's memory, locks and defaults. NULL: no memory. */
static struct journal *journal_alloc(const struct journal_opts *o)
{
	pthread_condattr_t ca;
	struct journal *j;

	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->dirfd = j->evfd = j->seg_fd = j->lockfd = j->rootfd = -1;
	pthread_mutex_init(&j->ns_mu, NULL);
	pthread_mutex_init(&j->ack_mu, NULL);
	pthread_mutex_init(&j->mu, NULL);
	pthread_mutex_init(&j->scan_mu, NULL);
	pthread_cond_init(&j->durable_cv, NULL);
	/* Timed waits count on the monotonic clock (journal_timeout_at). */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->commit_cv, &ca);
	pthread_cond_init(&j->acked_cv, &ca);
	pthread_cond_init(&j->ackfile_cv, &ca);
	pthread_condattr_destroy(&ca);
	pathset_init(&j->marked_dirs);
	pathset_init(&j->covered_dirs);
	pathset_init(&j->needs_scan);
	pathset_init(&j->lost_paths);
	pathset_init(&j->recovered_paths);
	j->size_limit = o->size_limit ? o->size_limit : (1ull << 30);
	j->commit_ms = o->commit_ms ? o->commit_ms : 5;
	j->base_seq = o->base_seq;
	j->epoch = 1;
	return j;
}

/* Open, phase 2: the store, STATE/journal and its lock (one owner), file
 * handle support. Returns 0 or -errno, logged. */
static int journal_open_dirs(struct journal *j, const struct journal_opts *o)
{
	char *store;
	int rc;

	store = realpath(o->store_dir, NULL);
	if (!store) {
		rc = -errno;
		log_error("cannot open the store for the journal; check that it exists",
			  "store=%s err=%s", o->store_dir, strerror(-rc));
		return rc;
	}
	j->store = store;
	j->store_len = strcmp(store, "/") == 0 ? 0 : strlen(store);
	if (asprintf(&j->dir, "%s/journal", o->state_dir) < 0) {
		j->dir = NULL;
		return -ENOMEM;
	}
	rc = journal_mkdir_p(o->state_dir, j->dir);
	if (rc == 0) {
		j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (j->dirfd < 0)
			rc = -errno;
	}
	if (rc < 0) {
		log_error("cannot create the journal directory; check the state dir",
			  "dir=%s err=%s", j->dir, strerror(-rc));
		return rc;
	}
	/* One process owns a journal. list_pending only reads, without it. */
	j->lockfd = openat(j->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (j->lockfd < 0 || flock(j->lockfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		log_error("journal is in use by another twinfs process; stop it first",
			  "dir=%s err=%s", j->dir, strerror(-rc));
		return rc;
	}
	journal_raise_nofile();
	/* O_RDONLY: open_by_handle_at refuses an O_PATH mount fd (EBADF). */
	j->rootfd = open(j->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->rootfd < 0) {
		rc = -errno;
		log_error("cannot open the store for the journal; check that it exists",
			  "store=%s err=%s", j->store, strerror(-rc));
		return rc;
	}
	jhandle_probe(j->rootfd, &j->hcaps);
	if (j->hcaps.usable && !journal_no_handles)
		log_notice("journal tracks dirty files by file handle (no fd per file)",
			   "store=%s connectable=%d batch_files=%zu", j->store,
			   j->hcaps.connectable, journal_batch_files);
	else
		log_notice("journal tracks dirty files by fd: the store has no usable "
			   "file handles; past the fd cap files are recorded by path "
			   "for rescan", "store=%s err=%s fd_cap=%zu", j->store,
			   journal_no_handles ? "disabled" : strerror(-j->hcaps.err),
			   journal_fds_max);
	return 0;
}

/* Open, phase 3: the ack file and the segments after it (a torn tail is
 * cut, segments after a hole are dropped: scan->lost), collecting the
 * marks into REC. *LOST is set when records may have been lost after
 * *LOST_SINCE. Returns 0 or -errno, logged. */
static int journal_recover_scan(struct journal *j, struct journal_recover *rec,
				struct jseg_scan *scan, bool *lost,
				struct timespec *lost_since)
{
	int rc;

	rc = jseg_ack_read(j->dirfd, &j->acked_seq);
	if (rc < 0) {
		log_error("journal ack file is unreadable; to start over with a full "
			  "resync, remove STATE/journal here and STATE/applied on the "
			  "peer (a peer at seq 0 gets the whole store)", "dir=%s err=%s",
			  j->dir, strerror(-rc));
		return rc;
	}
	/* Before the scan: cutting a torn tail rewrites the last segment. After
	 * a clean close no record was lost. */
	*lost = !jseg_closed_take(j->dirfd) &&
		jpending_lost_since(j->dirfd, j->rootfd, lost_since) == 0;
	if (*lost && lost_since->tv_sec == 0)
		log_notice("the store's file system was mounted again since the journal was "
			   "last open, without a clean close (a reboot or a power cut): every "
			   "directory marked since the last ack is walked, since the store "
			   "may have lost changes the peer holds", "dir=%s", j->dir);
	rc = jseg_scan(j->dirfd, j->acked_seq, true, journal_recover_rec, rec, scan);
	if (rc < 0) {
		log_error("cannot read the journal", "dir=%s err=%s", j->dir, strerror(-rc));
		return rc;
	}
	if (j->acked_seq == 0 && scan->nsegs == 0 && j->base_seq > 0) {
		rc = jseg_ack_write(j->dirfd, j->base_seq);
		if (rc < 0) {
			log_error("cannot write the journal's ack file", "dir=%s err=%s", j->dir,
				  strerror(-rc));
			return rc;
		}
		j->acked_seq = j->base_seq;
		log_notice("new journal continues the seqs of the data it holds",
			   "dir=%s first_seq=%" PRIu64, j->dir, j->base_seq + 1);
	}
	j->segs = scan->segs;
	j->nsegs = j->capsegs = scan->nsegs;
	for (size_t i = 0; i < scan->nsegs; i++)
		j->disk_bytes += scan->segs[i].bytes;
	j->head_seq = scan->head_seq > j->acked_seq ? scan->head_seq : j->acked_seq;
	j->durable_seq = j->head_seq;
	j->sent_seq = j->acked_seq;
	j->file_acked = j->acked_seq;
	j->ackfile_want = j->ackfile_done_seq = j->file_acked;
	/* What the recovered marks cover is pending again: they hold the ack
	 * file back until it has all been acked (the epoch ends). */
	j->first_mark = rec->first_seq;
	j->rotate_next = true;	/* never append after a cut tail */
	return 0;
}

/* Open, phase 4: the committer runs; what recovery found is owed to the
 * peer. Returns 0 or -errno. */
static int journal_start(struct journal *j, const struct jseg_scan *scan,
			 uint64_t oldest_mark_ns)
{
	int rc;

	rc = -pthread_create(&j->committer, NULL, journal_committer, j);
	if (rc < 0)
		return rc;
	j->committer_started = true;
	rc = -pthread_create(&j->ackfile_thr, NULL, journal_ackfile_main, j);
	if (rc < 0)
		return rc;
	j->ackfile_started = true;
	/* After recovery read the old one (journal_recover_scan). */
	rc = jseg_storefs_write(j->dirfd, j->rootfd);
	if (rc < 0)
		log_warn("journal cannot note the store's file system; after a crash the "
			 "next open walks every marked directory", "dir=%s err=%s", j->dir,
			 strerror(-rc));
	rc = 0;

	pthread_mutex_lock(&j->mu);
	/* Records were lost in the middle: only a full rescan is safe. */
	if (scan->lost)
		j->rescan_owed = true;
	rc = journal_rescan_locked(j);
	if (rc < 0)
		log_warn("journal cannot record the rescan that lost records need yet; "
			 "the next batch records it", "dir=%s err=%s", j->dir, strerror(-rc));
	jage_recover_end_locked(j, oldest_mark_ns);
	if (j->head_seq > j->sent_seq || j->lost_paths.n || j->dirty_head || j->rescan_owed)
		journal_notify_locked(j);
	pthread_mutex_unlock(&j->mu);
	return 0;
}

int journal_open(const struct journal_opts *o, struct journal **out)
{
	struct journal_recover rec = { 0 };
	struct jseg_scan scan = { 0 };
	struct timespec lost;
	struct journal *j;
	bool have_lost = false;
	int rc;

	if (!o->state_dir || !o->store_dir)
		return -EINVAL;
	j = journal_alloc(o);
	if (!j)
		return -ENOMEM;
	rc = journal_open_dirs(j, o);
	if (rc < 0)
		goto out_free;
	rec.j = j;
	rc = journal_recover_scan(j, &rec, &scan, &have_lost, &lost);
	if (rc < 0)
		goto out_marks;
	j->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (j->evfd < 0) {
		rc = -errno;
		goto out_marks;
	}
	rc = jpending_resolve_marks(j->store, rec.marks, rec.n, have_lost ? &lost : NULL,
				    journal_recover_lost, j);
	if (rc < 0)
		goto out_marks;
	rc = journal_start(j, &scan, rec.oldest_mark_ns);
	if (rc < 0)
		goto out_marks;
	if (scan.cut || rec.n)
		log_notice("journal recovered", "dir=%s acked=%" PRIu64 " head=%" PRIu64
			   " marks=%zu dirty_files=%" PRIu64 " walks=%zu cut=%d", j->dir,
			   j->acked_seq, j->head_seq, rec.n, j->n_dirty + j->lost_paths.n,
			   j->recover_walks, scan.cut);
	for (size_t i = 0; i < rec.n; i++)
		free(rec.marks[i].path);
	free(rec.marks);
	*out = j;
	return 0;

out_marks:
	for (size_t i = 0; i < rec.n; i++)
		free(rec.marks[i].path);
	free(rec.marks);
out_free:
	journal_close(j);
	return rc;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	if (j->ackfile_started) {
		/* It writes what the last ack allowed before it stops. */
		pthread_mutex_lock(&j->mu);
		j->ackfile_stop = true;
		pthread_cond_broadcast(&j->ackfile_cv);
		pthread_mutex_unlock(&j->mu);
		pthread_join(j->ackfile_thr, NULL);
	}
	if (j->committer_started) {
		pthread_mutex_lock(&j->mu);
		if (journal_rescan_locked(j) < 0)
			log_error("journal cannot record that records were lost; resync the "
				  "peer (remove STATE/applied there) before trusting it",
				  "dir=%s", j->dir);
		j->closing = true;
		pthread_cond_broadcast(&j->commit_cv);
		pthread_cond_broadcast(&j->acked_cv);
		pthread_mutex_unlock(&j->mu);
		pthread_join(j->committer, NULL);
		/* "closed" says the next open needs no recovery, so the store
		 * must be durable too: a power cut after the close would
		 * otherwise lose what the ack file says the peer holds. */
		if (!j->io_error && syncfs(j->rootfd) < 0)
			log_warn("cannot make the store durable at close; the next open "
				 "treats this as a crash", "store=%s err=%s", j->store,
				 strerror(errno));
		else if (!j->io_error)
			jseg_closed_write(j->dirfd);	/* everything is committed */
	}
	if (j->seg_fd >= 0)
		close(j->seg_fd);
	for (size_t i = 0; i < j->itab_nb; i++) {
		struct jinode *e = j->itab[i], *n;

		for (; e; e = n) {
			n = e->hnext;
			if (e->fd >= 0)
				close(e->fd);
			free(e->fh);
			rangeset_free(&e->ranges);
			free(e);
		}
	}
	free(j->itab);
	pathset_clear(&j->marked_dirs);
	pathset_clear(&j->needs_scan);
	pathset_clear(&j->lost_paths);
	pathset_clear(&j->recovered_paths);
	pathset_clear(&j->covered_dirs);
	free(j->buf.p);
	free(j->buf.brk);
	free(j->segs);
	free(j->inflight);
	jage_free(j);
	if (j->evfd >= 0)
		close(j->evfd);
	if (j->dirfd >= 0)
		close(j->dirfd);
	if (j->lockfd >= 0)
		close(j->lockfd);
	if (j->rootfd >= 0)
		close(j->rootfd);
	free(j->dir);
	free(j->store);
	pthread_cond_destroy(&j->commit_cv);
	pthread_cond_destroy(&j->durable_cv);
	pthread_cond_destroy(&j->acked_cv);
	pthread_cond_destroy(&j->ackfile_cv);
	pthread_mutex_destroy(&j->mu);
	pthread_mutex_destroy(&j->scan_mu);
	pthread_mutex_destroy(&j->ack_mu);
	pthread_mutex_destroy(&j->ns_mu);
	free(j);
}
