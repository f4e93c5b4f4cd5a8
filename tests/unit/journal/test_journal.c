/*
 * Unit tests for journal/ against real files in a mkdtemp dir:
 * record order and seqs, reopen, torn-tail recovery, ack trimming, the size
 * limit, batches (take/requeue/rewind/max_bytes, paths as of the batch),
 * barrier + wait_acked with an acking thread, durability marks per epoch,
 * list_pending after a simulated crash, and the cost of mark_dirty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/clock.h"
#include "journal/journal.h"
#include "journal/journal_int.h"

struct fx {
	char root[64], store[96], state[96], jdir[128];
	struct journal_opts o;
	struct journal *j;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof f->root, "/tmp/twinfs-jtest.XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->store, sizeof f->store, "%s/store", f->root);
	snprintf(f->state, sizeof f->state, "%s/state", f->root);
	snprintf(f->jdir, sizeof f->jdir, "%s/journal", f->state);
	mkdir(f->store, 0755);
	f->o = (struct journal_opts){ .state_dir = f->state, .store_dir = f->store,
				      .size_limit = 64ull << 20, .commit_ms = 2 };
	journal_segment_bytes = 64ull << 20;
	journal_batch_files = 1024;
	journal_fds_max = 4096;
	journal_no_handles = false;
	journal_no_lost_window = true;	/* test_crash_lost_window turns it on */
	journal_fail_append = 0;
	journal_fail_inflight = 0;
	journal_mark_slack_ns = 1000000000ull;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	journal_close(f->j);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void fx_open(struct fx *f)
{
	assert_int_equal(journal_open(&f->o, &f->j), 0);
}

static void fx_reopen(struct fx *f)
{
	journal_close(f->j);
	f->j = NULL;
	fx_open(f);
}

/* Creates a real file in the store; returns an O_RDWR fd and its ino. */
static int fx_file(struct fx *f, const char *rel, const char *content, uint64_t *ino)
{
	char p[256];
	struct stat st;
	int fd;

	snprintf(p, sizeof p, "%s/%s", f->store, rel);
	fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	if (content)
		assert_int_equal(pwrite(fd, content, strlen(content), 0), (ssize_t)strlen(content));
	assert_int_equal(fstat(fd, &st), 0);
	if (ino)
		*ino = st.st_ino;
	return fd;
}

static void fx_mkdir(struct fx *f, const char *rel)
{
	char p[256];

	snprintf(p, sizeof p, "%s/%s", f->store, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int64_t fx_append(struct fx *f, enum journal_op_type t, const char *path,
			 const char *path2, uint64_t ino)
{
	struct journal_op op = { .type = t, .path = path, .path2 = path2, .ino = ino,
				 .mode = 0644 };
	int64_t seq;

	journal_ns_lock(f->j);
	seq = journal_append(f->j, &op);
	journal_ns_unlock(f->j);
	assert_true(seq > 0);
	return seq;
}

static size_t count_type(const struct journal_batch *b, enum journal_op_type t, const char *path)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n_recs; i++)
		if (b->recs[i].op.type == t && (!path || strcmp(b->recs[i].op.path, path) == 0))
			n++;
	return n;
}

static const struct journal_dirty *find_file(const struct journal_batch *b, const char *path)
{
	for (size_t i = 0; i < b->n_files; i++)
		if (strcmp(b->files[i].path, path) == 0)
			return &b->files[i];
	return NULL;
}

static size_t count_segments(struct fx *f)
{
	DIR *d = opendir(f->jdir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "seg-", 4) == 0)
			n++;
	closedir(d);
	return n;
}

/* The path of the only (or last) segment file. */
static void last_segment(struct fx *f, char *out, size_t len)
{
	DIR *d = opendir(f->jdir);
	struct dirent *de;
	char best[256] = "";

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "seg-", 4) == 0 && strcmp(de->d_name, best) > 0)
			snprintf(best, sizeof best, "%s", de->d_name);
	closedir(d);
	assert_true(best[0] != '\0');
	snprintf(out, len, "%s/%s", f->jdir, best);
}

/* The path of the first segment file. */
static void first_segment(struct fx *f, char *out, size_t len)
{
	DIR *d = opendir(f->jdir);
	struct dirent *de;
	char best[256] = "";

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "seg-", 4) == 0 &&
		    (!best[0] || strcmp(de->d_name, best) < 0))
			snprintf(best, sizeof best, "%s", de->d_name);
	closedir(d);
	assert_true(best[0] != '\0');
	snprintf(out, len, "%s/%s", f->jdir, best);
}

/* Waits (polling, 5 s at most) until a mark made now records a time after
 * the ctime of every store path given (NULL-terminated): they then count
 * as changed before the next mark. A test lowers journal_mark_slack_ns
 * first, or this waits over a second. */
static void wait_older_than_marks(struct fx *f, ...)
{
	uint64_t newest = 0, deadline = clock_mono_ns() + 5000000000ull;
	const char *rel;
	va_list ap;

	va_start(ap, f);
	while ((rel = va_arg(ap, const char *)) != NULL) {
		char p[256];
		struct stat st;
		uint64_t ct;

		snprintf(p, sizeof p, "%s/%s", f->store, rel);
		assert_int_equal(lstat(p, &st), 0);
		ct = (uint64_t)st.st_ctim.tv_sec * 1000000000ull + (uint64_t)st.st_ctim.tv_nsec;
		if (ct > newest)
			newest = ct;
	}
	va_end(ap);
	for (;;) {
		struct timespec now;
		uint64_t t;

		clock_gettime(CLOCK_REALTIME, &now);
		t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		if (t > newest + journal_mark_slack_ns)
			return;
		assert_true(clock_mono_ns() < deadline);
		usleep(1000);
	}
}

/* ---- ordering ---- */

static void test_order_and_seqs(void **state)
{
	static const struct { enum journal_op_type t; const char *p, *p2; } ops[] = {
		{ JOP_MKDIR, "d", NULL }, { JOP_CREATE, "d/a", NULL },
		{ JOP_SYMLINK, "d/l", "target" }, { JOP_LINK, "d/a", "d/b" },
		{ JOP_RENAME, "d/b", "c" }, { JOP_SETATTR, "c", NULL },
		{ JOP_UNLINK, "c", NULL }, { JOP_REMOVEXATTR, "d/a", NULL },
		{ JOP_RMDIR, "e", NULL },
	};
	struct fx *f = *state;
	struct journal_batch *b;
	int64_t prev = 0;
	size_t k = 0;

	fx_open(f);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int64_t s = fx_append(f, ops[i].t, ops[i].p, ops[i].p2, 0);

		assert_true(s > prev);
		prev = s;
	}
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	/* Seqs are consecutive from first_seq to end_seq. */
	assert_int_equal(b->first_seq, 1);
	assert_int_equal(b->recs[b->n_recs - 1].seq, b->end_seq);
	assert_int_equal(b->recs[b->n_recs - 1].op.type, JOP_BATCH);
	for (size_t i = 0; i < b->n_recs; i++) {
		assert_int_equal(b->recs[i].seq, b->first_seq + i);
		if (b->recs[i].op.type >= JOP_MARK_DIR)
			continue;
		assert_int_equal(b->recs[i].op.type, ops[k].t);
		assert_string_equal(b->recs[i].op.path, ops[k].p);
		if (ops[k].p2)
			assert_string_equal(b->recs[i].op.path2, ops[k].p2);
		k++;
	}
	assert_int_equal(k, sizeof(ops) / sizeof(ops[0]));
	/* Marks: one per directory whose entries changed, except directories
	 * made in this epoch ("d"), which the root's mark covers. */
	assert_int_equal(count_type(b, JOP_MARK_DIR, ""), 1);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "d"), 0);
	journal_batch_free(b);
	assert_int_equal(journal_take_batch(f->j, 0, &b), -EAGAIN);
}

static void test_reopen_keeps_unacked(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;

	fx_open(f);
	for (int i = 0; i < 5; i++) {
		char p[16];

		snprintf(p, sizeof p, "f%d", i);
		fx_append(f, JOP_CREATE, p, NULL, 0);
	}
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, 6);	/* MARK_DIR "" + 5 */
	fx_reopen(f);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, 6);
	assert_int_equal(st.durable_seq, 6);
	assert_int_equal(st.acked_seq, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, 1);
	assert_int_equal(count_type(b, JOP_CREATE, NULL), 5);
	assert_string_equal(b->recs[5].op.path, "f4");
	/* Ack half, reopen. The epoch's mark (seq 1) is still live, so the
	 * ack file stays below it and everything comes back; the peer's
	 * position (journal_rewind, as the sender does on connecting) skips
	 * what it has, and only the rest is sent. */
	assert_int_equal(journal_ack(f->j, 3), 0);
	journal_batch_free(b);
	fx_reopen(f);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.acked_seq, 0);
	assert_int_equal(journal_rewind(f->j, 3), 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, 4);
	assert_string_equal(b->recs[0].op.path, "f2");
	/* All acked: the epoch ends and the ack file says so. */
	{
		uint64_t end = b->end_seq;

		assert_int_equal(journal_ack(f->j, end), 0);
		journal_batch_free(b);
		fx_reopen(f);
		journal_get_stats(f->j, &st);
		assert_int_equal(st.acked_seq, end);
	}
	assert_int_equal(journal_take_batch(f->j, 0, &b), -EAGAIN);
}

/* ---- torn tail ---- */

enum damage { CUT_MID_RECORD, CUT_HEADER_ONLY, FLIP_LAST_BYTE, FLIP_MIDDLE_OF_LAST };

static void torn_case(struct fx *f, enum damage dmg)
{
	struct journal_batch *b;
	struct journal_stats st;
	char seg[256];
	struct stat sb;
	int fd;

	fx_open(f);
	for (int i = 0; i < 10; i++) {
		char p[16];

		snprintf(p, sizeof p, "t%d", i);
		fx_append(f, JOP_CREATE, p, NULL, 0);
	}
	assert_int_equal(journal_commit(f->j), 0);
	journal_close(f->j);
	f->j = NULL;

	last_segment(f, seg, sizeof seg);
	assert_int_equal(stat(seg, &sb), 0);
	fd = open(seg, O_RDWR);
	assert_true(fd >= 0);
	switch (dmg) {
	case CUT_MID_RECORD:
		assert_int_equal(ftruncate(fd, sb.st_size - 40), 0);
		break;
	case CUT_HEADER_ONLY: {
		/* Leaves 10 bytes of the last record (less than a header). The
		 * last record is "t9": 16 + 104 + 3 + 8 bytes. */
		assert_int_equal(ftruncate(fd, sb.st_size - 131 + 10), 0);
		break;
	}
	case FLIP_LAST_BYTE:
	case FLIP_MIDDLE_OF_LAST: {
		off_t at = dmg == FLIP_LAST_BYTE ? sb.st_size - 1 : sb.st_size - 60;
		uint8_t c;

		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0xff;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
		break;
	}
	}
	close(fd);

	fx_open(f);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, 10);	/* MARK_DIR + t0..t8 */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_CREATE, NULL), 9);
	assert_string_equal(b->recs[9].op.path, "t8");
	assert_int_equal(b->end_seq, 11);	/* the batch record continues the seq */
	journal_batch_free(b);
	/* The cut file is valid now: another reopen finds the same plus the
	 * batch record, and appends continue. */
	fx_reopen(f);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, 11);
	fx_append(f, JOP_CREATE, "after", NULL, 0);	/* + a new MARK_DIR "" */
	fx_reopen(f);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, 13);
	journal_close(f->j);
	f->j = NULL;
}

static void test_torn_tail(void **state)
{
	static const enum damage cases[] = { CUT_MID_RECORD, CUT_HEADER_ONLY, FLIP_LAST_BYTE,
					     FLIP_MIDDLE_OF_LAST };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_teardown(state);
		fx_setup(state);
		torn_case(*state, cases[i]);
	}
}

/* A segment whose only record is torn (or whose header is): the next
 * segment reuses its name; acking must not delete the live one. */
static void test_torn_first_record_of_segment(void **state)
{
	static const off_t keep[] = { 32, 40, 20 };	/* header, header + 8, half a header */
	struct fx *f = *state;

	for (size_t c = 0; c < sizeof(keep) / sizeof(keep[0]); c++) {
		struct journal_batch *b;
		struct journal_stats st;
		char seg[256];

		fx_teardown(state);
		fx_setup(state);
		f = *state;
		fx_open(f);
		fx_append(f, JOP_CREATE, "a", NULL, 0);	/* MARK_DIR "" + create: seq 1, 2 */
		fx_reopen(f);				/* the next record starts seg 3 */
		fx_append(f, JOP_CREATE, "b", NULL, 0);
		journal_close(f->j);
		f->j = NULL;
		last_segment(f, seg, sizeof seg);
		assert_int_equal(truncate(seg, keep[c]), 0);
		fx_open(f);
		journal_get_stats(f->j, &st);
		assert_int_equal(st.head_seq, 2);
		fx_append(f, JOP_CREATE, "c", NULL, 0);
		assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
		assert_int_equal(b->recs[b->n_recs - 2].seq, b->end_seq - 1);
		/* Everything acked: the ack file moves to the end and the
		 * segments before the live one go. */
		assert_int_equal(journal_ack(f->j, b->end_seq), 0);
		journal_batch_free(b);
		fx_reopen(f);
		journal_get_stats(f->j, &st);
		assert_int_equal(st.acked_seq, 5);
		assert_int_equal(st.head_seq, 5);	/* MARK_DIR, create c, batch */
		fx_append(f, JOP_CREATE, "d", NULL, 0);
		fx_reopen(f);
		assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
		assert_int_equal(b->first_seq, 6);
		assert_int_equal(count_type(b, JOP_CREATE, "d"), 1);
		journal_batch_free(b);
	}
}

/* ---- failure paths ---- */

/* Tracking a taken batch as in flight fails: the take fails and the batch
 * goes back whole, never handed out untracked. */
static void test_take_inflight_fails(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t ino;
	int fd;

	fx_open(f);
	fd = fx_file(f, "a", "0123456789", &ino);
	fx_append(f, JOP_CREATE, "a", NULL, ino);
	assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 10), 0);
	journal_fail_inflight = -ENOMEM;
	b = NULL;
	assert_int_equal(journal_take_batch(f->j, 0, &b), -ENOMEM);
	assert_null(b);
	journal_fail_inflight = 0;
	journal_get_stats(f->j, &st);
	assert_int_equal(st.sent_seq, 0);
	assert_int_equal(st.dirty_files, 1);
	assert_int_equal(st.pending_bytes, 10);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, 1);
	assert_int_equal(count_type(b, JOP_CREATE, "a"), 1);
	assert_non_null(find_file(b, "a"));
	assert_int_equal(b->data_bytes, 10);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.dirty_files, 0);
	assert_int_equal(st.pending_bytes, 10);	/* in flight, tracked */
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.pending_bytes, 0);
	journal_batch_free(b);
	close(fd);
}

/* Two segments, the first damaged before its end: recovery drops the
 * second (a hole) and owes a rescan of the whole store. */
static void make_hole(struct fx *f)
{
	char seg[256];
	struct stat sb;
	uint8_t c;
	int fd;

	fx_open(f);
	fx_append(f, JOP_CREATE, "a", NULL, 0);	/* MARK_DIR "" + create: seq 1, 2 */
	fx_reopen(f);				/* the next record starts seg 3 */
	fx_append(f, JOP_CREATE, "b", NULL, 0);
	journal_close(f->j);
	f->j = NULL;
	assert_int_equal(count_segments(f), 2);
	first_segment(f, seg, sizeof seg);
	assert_int_equal(stat(seg, &sb), 0);
	fd = open(seg, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, sb.st_size - 1), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, sb.st_size - 1), 1);
	close(fd);
}

/* The rescan's record cannot be appended at open: the journal still opens,
 * takes fail until the record is appended, and the next batch carries it.
 * A close appends it too, so a reopen still has it. Never dropped. */
static void test_rescan_owed_after_failed_append(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;

	make_hole(f);
	fx_open(f);	/* the append works: the first batch carries it */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, ""), 1);
	assert_int_equal(count_type(b, JOP_CREATE, "b"), 0);	/* lost */
	journal_batch_free(b);
	journal_close(f->j);
	f->j = NULL;

	for (int close_first = 0; close_first < 2; close_first++) {
		fx_teardown(state);
		fx_setup(state);
		f = *state;
		make_hole(f);
		journal_fail_append = -ENOMEM;
		fx_open(f);
		b = NULL;
		assert_int_equal(journal_take_batch(f->j, 0, &b), -ENOMEM);
		assert_null(b);
		journal_fail_append = 0;
		if (close_first)
			fx_reopen(f);	/* journal_close appends it */
		assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
		assert_int_equal(count_type(b, JOP_NEEDS_SCAN, ""), 1);
		journal_batch_free(b);
	}
}

/* ---- ack trims segments ---- */

static void test_ack_trims_segments(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st, st2;
	char buf[256];
	FILE *fp;

	journal_segment_bytes = 4096;
	fx_open(f);
	for (int i = 0; i < 300; i++) {
		char p[32];

		snprintf(p, sizeof p, "file-%04d", i);
		fx_append(f, JOP_CREATE, p, NULL, 0);
	}
	assert_int_equal(journal_commit(f->j), 0);
	assert_true(count_segments(f) >= 8);
	journal_get_stats(f->j, &st);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_recs, 302);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(journal_ackfile_flush(f->j, 10000), 0);
	journal_batch_free(b);
	/* Everything acked: only the active segment is left. */
	assert_int_equal(count_segments(f), 1);
	journal_get_stats(f->j, &st2);
	assert_true(st2.disk_bytes < st.disk_bytes / 4);
	assert_int_equal(st2.acked_seq, 302);
	assert_int_equal(st2.pending_ops, 0);
	snprintf(buf, sizeof buf, "%s/acked", f->jdir);
	fp = fopen(buf, "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof buf, fp));
	fclose(fp);
	assert_string_equal(buf, "acked 302\n");
	/* New records go to a new segment; the next ack deletes the old one. */
	fx_append(f, JOP_CREATE, "next", NULL, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, 303);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(journal_ackfile_flush(f->j, 10000), 0);
	journal_batch_free(b);
	assert_int_equal(count_segments(f), 1);
	fx_reopen(f);
	assert_int_equal(journal_take_batch(f->j, 0, &b), -EAGAIN);
	journal_get_stats(f->j, &st2);
	assert_int_equal(st2.head_seq, st2.acked_seq);
}

/* ---- size limit ---- */

struct collected {
	char paths[512][64];
	char why[512][24];
	size_t n;
};

static void collect(const char *path, const char *why, void *arg)
{
	struct collected *c = arg;

	if (c->n < 512) {
		snprintf(c->paths[c->n], sizeof c->paths[0], "%s", path);
		snprintf(c->why[c->n], sizeof c->why[0], "%s", why);
		c->n++;
	}
}

static const char *has_path(const struct collected *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->paths[i], path) == 0)
			return c->why[i];
	return NULL;
}

/* path or one of its ancestors is listed */
static bool covered(const struct collected *c, const char *path)
{
	char p[64];

	snprintf(p, sizeof p, "%s", path);
	for (;;) {
		char *s;

		if (has_path(c, p))
			return true;
		s = strrchr(p, '/');
		if (!s)
			return has_path(c, "") != NULL;
		*s = '\0';
	}
}

static void test_size_limit(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t t0;

	f->o.size_limit = 2048;
	fx_open(f);
	fx_mkdir(f, "d1");
	fx_mkdir(f, "d2");
	t0 = clock_mono_ns();
	for (int i = 0; i < 200; i++) {
		char p[32];

		snprintf(p, sizeof p, "d%d/f%03d", 1 + i % 2, i);
		fx_append(f, JOP_CREATE, p, NULL, 0);
	}
	fx_append(f, JOP_RENAME, "d1/f000", "d3/moved", 0);
	/* a link: the folder of both names, so that one walk links them */
	fx_append(f, JOP_LINK, "d2/f003", "d2/sub/l", 0);
	/* Writers never waited for space (only for the marks' commits). */
	assert_true(clock_mono_ns() - t0 < 2000000000ull);
	journal_get_stats(f->j, &st);
	assert_true(st.needs_scan > 0);
	assert_int_equal(journal_commit(f->j), 0);
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	for (int i = 0; i < 200; i++) {
		char p[32];

		snprintf(p, sizeof p, "d%d/f%03d", 1 + i % 2, i);
		if (!covered(c, p))
			fail_msg("%s missing from list_pending", p);
	}
	assert_true(covered(c, "d3/moved"));
	assert_non_null(has_path(c, "d3/moved"));
	assert_string_equal(has_path(c, "d2/f199"), "needs-scan");
	/* The batch carries the needs-scan records; acking it all ends the
	 * overflow, and records are stored again. */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_true(count_type(b, JOP_NEEDS_SCAN, NULL) > 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "d2"), 1);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "d2/sub/l"), 0);
	/* Taken, not acked: still overflowing. A change to a path whose
	 * NEEDS_SCAN was taken is not covered by it any more (the sender may
	 * have read the store already): it gets a record of its own. Before,
	 * it was dropped and sync reported the peer caught up. */
	{
		struct journal_batch *b2;

		fx_append(f, JOP_SETATTR, "d2/f199", NULL, 0);
		assert_int_equal(journal_take_batch(f->j, 0, &b2), 0);
		assert_int_equal(count_type(b2, JOP_NEEDS_SCAN, "d2/f199"), 1);
		/* not taken yet: covered by that new record */
		fx_append(f, JOP_SETATTR, "d2/f199", NULL, 0);
		fx_append(f, JOP_SETATTR, "d2/f199", NULL, 0);
		assert_int_equal(journal_ack(f->j, b2->end_seq), 0);
		journal_batch_free(b2);
		assert_int_equal(journal_take_batch(f->j, 0, &b2), 0);
		assert_int_equal(count_type(b2, JOP_NEEDS_SCAN, "d2/f199"), 1);
		assert_int_equal(journal_ack(f->j, b2->end_seq), 0);
		/* the ack file, and with it the segments' bytes, follow */
		assert_int_equal(journal_ackfile_flush(f->j, 10000), 0);
		journal_batch_free(b2);
	}
	journal_batch_free(b);
	fx_append(f, JOP_CREATE, "fresh", NULL, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_CREATE, "fresh"), 1);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, NULL), 0);
	journal_batch_free(b);
	free(c);
}

/* ---- batches ---- */

static void test_batch_take_requeue_rewind(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b, *b2;
	const struct journal_dirty *d;
	uint64_t ino_a, ino_b, ino_c;
	int fa, fb, fc;
	char p1[256], p2[256];

	fx_open(f);
	fa = fx_file(f, "a", "0123456789", &ino_a);
	fb = fx_file(f, "b", "x", &ino_b);
	fc = fx_file(f, "c", "y", &ino_c);
	fx_append(f, JOP_CREATE, "a", NULL, ino_a);
	fx_append(f, JOP_CREATE, "b", NULL, ino_b);
	fx_append(f, JOP_CREATE, "c", NULL, ino_c);
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 0, 4), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 4, 4), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 100, 10), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_b, fb, 0, 1), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_c, fc, 0, 1), 0);
	/* Rename a after the write and unlink c: the batch has a's new name,
	 * and no c. */
	snprintf(p1, sizeof p1, "%s/a", f->store);
	snprintf(p2, sizeof p2, "%s/a2", f->store);
	journal_ns_lock(f->j);
	assert_int_equal(rename(p1, p2), 0);
	journal_append(f->j, &(struct journal_op){ .type = JOP_RENAME, .path = "a", .path2 = "a2" });
	snprintf(p1, sizeof p1, "%s/c", f->store);
	assert_int_equal(unlink(p1), 0);
	journal_append(f->j, &(struct journal_op){ .type = JOP_UNLINK, .path = "c" });
	journal_ns_unlock(f->j);

	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 2);
	d = find_file(b, "a2");
	assert_non_null(d);
	assert_int_equal(d->n_ranges, 2);
	assert_int_equal(d->ranges[0].off, 0);
	assert_int_equal(d->ranges[0].len, 8);
	assert_int_equal(d->ranges[1].off, 100);
	assert_int_equal(d->bytes, 18);
	assert_false(d->whole);
	assert_true(d->fd >= 0);
	{
		char c4[4];

		assert_int_equal(pread(d->fd, c4, 4, 0), 4);	/* readable */
		assert_memory_equal(c4, "0123", 4);
	}
	assert_null(find_file(b, "c"));
	assert_int_equal(b->data_bytes, 19);
	uint64_t first = b->first_seq, end = b->end_seq;
	size_t nrecs = b->n_recs;

	/* Disconnect: requeue, new data meanwhile merges with the old ranges. */
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 8, 2), 0);
	journal_requeue(f->j, b);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, first);
	/* nothing was recorded since: the batch's own BATCH record still
	 * closes it (a retry loop must not grow the journal) */
	assert_int_equal(b->n_recs, nrecs);
	assert_int_equal(b->end_seq, end);
	d = find_file(b, "a2");
	assert_non_null(d);
	assert_int_equal(d->ranges[0].len, 10);
	/* Reconnect with the peer at end: rewind there, nothing to resend. */
	assert_int_equal(journal_rewind(f->j, end), 0);
	journal_batch_free(b);
	fx_append(f, JOP_CREATE, "z", NULL, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, end + 1);
	/* Rewind into the middle: the records after it come back. */
	uint64_t e2 = b->end_seq;

	journal_batch_free(b);
	assert_int_equal(journal_rewind(f->j, end + 1), 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->first_seq, end + 2);
	assert_int_equal(b->recs[0].seq, end + 2);
	journal_batch_free(b);
	/* Rewinding below the ack cannot be covered. */
	assert_int_equal(journal_rewind(f->j, 1), -ERANGE);
	(void)e2;

	/* max_bytes: one file at a time, the rest stays dirty. */
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 0, 100), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_b, fb, 0, 100), 0);
	assert_int_equal(journal_take_batch(f->j, 150, &b), 0);
	assert_int_equal(b->n_files, 1);
	assert_int_equal(journal_take_batch(f->j, 150, &b2), 0);
	assert_int_equal(b2->n_files, 1);
	assert_true(b2->end_seq > b->end_seq);
	assert_int_not_equal(b->files[0].ino, b2->files[0].ino);
	journal_batch_free(b);
	journal_batch_free(b2);
	assert_int_equal(journal_take_batch(f->j, 150, &b), -EAGAIN);

	/* truncate and forget */
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 0, 100), 0);
	journal_truncate(f->j, ino_a, 10);
	assert_int_equal(journal_mark_dirty(f->j, ino_b, fb, 0, 100), 0);
	/* still linked: a FORGET of another inode that had its number
	 * (reused by the store) leaves it */
	journal_forget(f->j, ino_b);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 2);
	journal_batch_free(b);
	assert_int_equal(journal_mark_dirty(f->j, ino_a, fa, 0, 100), 0);
	journal_truncate(f->j, ino_a, 10);
	assert_int_equal(journal_mark_dirty(f->j, ino_b, fb, 0, 100), 0);
	{
		char p[256];

		snprintf(p, sizeof p, "%s/b", f->store);
		assert_int_equal(unlink(p), 0);	/* gone: forgotten */
	}
	journal_forget(f->j, ino_b);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 1);
	assert_int_equal(b->files[0].ino, ino_a);
	assert_int_equal(b->files[0].bytes, 10);
	journal_batch_free(b);
	close(fa);
	close(fb);
	close(fc);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* With file handles the journal holds no fd for a dirty inode, only the
 * batch does (one per file, until freed); without them it holds a dup per
 * dirty (and in-flight) inode, as before. */
static void fds_bounded(struct fx *f, bool handles)
{
	struct journal_batch *b;
	int base, fds[200], held = handles ? 0 : 200;
	uint64_t inos[200];

	journal_no_handles = !handles;
	fx_open(f);
	for (int i = 0; i < 200; i++) {
		char p[16];

		snprintf(p, sizeof p, "f%03d", i);
		fds[i] = fx_file(f, p, NULL, &inos[i]);
		fx_append(f, JOP_CREATE, p, NULL, inos[i]);
	}
	base = count_fds();
	for (int i = 0; i < 200; i++)
		assert_int_equal(journal_mark_dirty(f->j, inos[i], fds[i], 0, 1), 0);
	assert_int_equal(count_fds(), base + held);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 200);
	assert_int_equal(count_fds(), base + 200);
	journal_requeue(f->j, b);	/* fds go back to the inodes, or close */
	assert_int_equal(count_fds(), base + held);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 200);
	journal_batch_free(b);
	assert_int_equal(count_fds(), base);
	/* A write after the take works as before. */
	assert_int_equal(journal_mark_dirty(f->j, inos[7], fds[7], 5, 1), 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 1);
	assert_string_equal(b->files[0].path, "f007");
	assert_int_equal(b->files[0].ranges[0].off, 5);
	journal_batch_free(b);
	for (int i = 0; i < 200; i++)
		close(fds[i]);
}

static void test_fds_bounded(void **state)
{
	fds_bounded(*state, true);
}

static void test_fds_bounded_without_handles(void **state)
{
	fds_bounded(*state, false);
}

/* Without handles the journal keeps at most journal_fds_max fds; past
 * that files are named by path (NEEDS_SCAN), and no mark fails. */
static void test_fd_cap_without_handles(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	int base;

	journal_no_handles = true;
	journal_fds_max = 50;
	fx_open(f);
	fx_append(f, JOP_MKDIR, "d", NULL, 0);
	assert_int_equal(journal_commit(f->j), 0);	/* the segment is open */
	base = count_fds();
	for (int i = 0; i < 100; i++) {
		char p[16];
		uint64_t ino;
		int fd;

		snprintf(p, sizeof p, "c%03d", i);
		fd = fx_file(f, p, "x", &ino);
		fx_append(f, JOP_CREATE, p, NULL, ino);
		assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 1), 0);
		close(fd);
	}
	assert_int_equal(count_fds(), base + 50);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 50);
	for (int i = 0; i < 100; i++) {
		char p[16];

		snprintf(p, sizeof p, "c%03d", i);
		assert_int_equal((find_file(b, p) != NULL) + count_type(b, JOP_NEEDS_SCAN, p), 1);
	}
	journal_batch_free(b);
	assert_int_equal(count_fds(), base);
}

/*
 * A barrier owed while more files are dirty than one batch takes: the
 * batches that leave files behind must not answer it, whatever the peer
 * acks; the one that takes the last file does.
 */
static void test_barrier_across_capped_batches(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t s, ino;
	size_t total = 0;

	journal_batch_files = 4;
	fx_open(f);
	for (int i = 0; i < 10; i++) {
		char p[16];
		int fd;

		snprintf(p, sizeof p, "b%02d", i);
		fd = fx_file(f, p, "x", &ino);
		fx_append(f, JOP_CREATE, p, NULL, ino);
		assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 1), 0);
		close(fd);
	}
	s = journal_barrier(f->j);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(journal_take_batch(f->j, 1, &b), 0);
		total += b->n_files;
		assert_int_equal(b->n_files, round < 2 ? 4 : 2);
		assert_int_equal(journal_ack(f->j, b->end_seq), 0);
		journal_get_stats(f->j, &st);
		if (round < 2) {
			assert_true(st.acked_seq < s);
			assert_int_equal(journal_wait_acked(f->j, s, 10), -ETIMEDOUT);
		} else {
			assert_true(st.acked_seq >= s);
			assert_int_equal(journal_wait_acked(f->j, s, 10), 0);
		}
		journal_batch_free(b);
	}
	assert_int_equal(total, 10);
	assert_int_equal(journal_take_batch(f->j, 0, &b), -EAGAIN);
}

/*
 * 5,000 dirty files in a process allowed 256 open files, as a mount with
 * no peer sees them: the journal must not hold an fd per dirty file. Each
 * file is opened, marked (first call timed: the cost of starting to track
 * an inode) and closed, then batches are taken until none is left: every
 * file comes back exactly once, with its path and a readable fd, and no
 * batch holds more than JOURNAL_BATCH_FILES fds.
 */
static void test_many_dirty_files_low_nofile(void **state)
{
	enum { N = 5000 };
	struct fx *f = *state;
	struct journal_batch *b;
	struct rlimit old, rl;
	uint64_t *inos = calloc(N, sizeof(*inos));
	unsigned char *seen = calloc(N, 1);
	uint64_t t0, first_ns = 0, again_ns = 0, take_ns = 0;
	size_t n_batches = 0, n_files = 0, max_files = 0;
	int base, held, rc;

	assert_non_null(inos);
	assert_non_null(seen);
	fx_open(f);
	fx_mkdir(f, "many");
	fx_append(f, JOP_MKDIR, "many", NULL, 0);
	assert_int_equal(journal_commit(f->j), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	base = count_fds();
	for (int i = 0; i < N; i++) {
		char p[32];
		int fd;

		snprintf(p, sizeof p, "many/f%04d", i);
		fd = fx_file(f, p, p, &inos[i]);
		fx_append(f, JOP_CREATE, p, NULL, inos[i]);
		t0 = clock_mono_ns();
		rc = journal_mark_dirty(f->j, inos[i], fd, 0, strlen(p));
		first_ns += clock_mono_ns() - t0;
		assert_int_equal(rc, 0);
		t0 = clock_mono_ns();
		rc = journal_mark_dirty(f->j, inos[i], fd, 0, strlen(p));
		again_ns += clock_mono_ns() - t0;
		assert_int_equal(rc, 0);
		close(fd);
	}
	held = count_fds() - base;
	print_message("mark_dirty of %d new files: first call %.0f ns/file, second "
		      "call %.0f ns/file; fds held by the journal after marking: %d\n",
		      N, (double)first_ns / N, (double)again_ns / N, held);
	for (;;) {
		t0 = clock_mono_ns();
		rc = journal_take_batch(f->j, 0, &b);
		take_ns += clock_mono_ns() - t0;
		if (rc == -EAGAIN)
			break;
		assert_int_equal(rc, 0);
		n_batches++;
		if (b->n_files > max_files)
			max_files = b->n_files;
		for (size_t k = 0; k < b->n_files; k++) {
			const struct journal_dirty *d = &b->files[k];
			char buf[32] = "";
			int idx = -1;

			assert_true(d->fd >= 0);
			assert_int_equal(sscanf(d->path, "many/f%d", &idx), 1);
			assert_true(idx >= 0 && idx < N);
			assert_int_equal(seen[idx], 0);
			seen[idx] = 1;
			assert_int_equal(d->ino, inos[idx]);
			assert_int_equal(pread(d->fd, buf, sizeof buf - 1, 0), (ssize_t)strlen(d->path));
			assert_string_equal(buf, d->path);
		}
		n_files += b->n_files;
		assert_int_equal(journal_ack(f->j, b->end_seq), 0);
		journal_batch_free(b);
	}
	print_message("took %zu files in %zu batches (largest %zu files) in %.1f ms\n",
		      n_files, n_batches, max_files, take_ns / 1e6);
	assert_int_equal(n_files, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(count_fds(), base);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	free(inos);
	free(seen);
}

static void test_notify_fd(void **state)
{
	struct fx *f = *state;
	struct pollfd p;
	struct journal_batch *b;
	uint64_t v;

	fx_open(f);
	p = (struct pollfd){ .fd = journal_notify_fd(f->j), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	fx_append(f, JOP_MKDIR, "x", NULL, 0);
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(read(p.fd, &v, sizeof v), sizeof v);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	journal_batch_free(b);
	assert_int_equal(poll(&p, 1, 0), 0);
	fx_append(f, JOP_MKDIR, "y", NULL, 0);
	assert_int_equal(poll(&p, 1, 0), 1);
}

/* ---- barrier + wait_acked ---- */

struct acker {
	struct journal *j;
	atomic_int stop;
	atomic_int batches;
};

static void *acker_main(void *arg)
{
	struct acker *a = arg;

	while (!a->stop) {
		struct pollfd p = { .fd = journal_notify_fd(a->j), .events = POLLIN };
		struct journal_batch *b;
		uint64_t v;

		if (poll(&p, 1, 20) == 1 && read(p.fd, &v, sizeof v) < 0)
			continue;
		while (journal_take_batch(a->j, 1, &b) == 0) {
			usleep(2000);	/* "the network" */
			journal_ack(a->j, b->end_seq);
			journal_batch_free(b);
			a->batches++;
		}
	}
	return NULL;
}

static void test_barrier_wait_acked(void **state)
{
	struct fx *f = *state;
	struct acker a = { 0 };
	struct journal_stats st;
	uint64_t s, ino1, ino2;
	pthread_t t;
	int fd1, fd2;

	fx_open(f);
	/* Nothing pending: the barrier is already satisfied. */
	s = journal_barrier(f->j);
	assert_int_equal(journal_wait_acked(f->j, s, 0), 0);
	fd1 = fx_file(f, "one", "1", &ino1);
	fd2 = fx_file(f, "two", "2", &ino2);
	fx_append(f, JOP_CREATE, "one", NULL, ino1);
	fx_append(f, JOP_CREATE, "two", NULL, ino2);
	assert_int_equal(journal_mark_dirty(f->j, ino1, fd1, 0, 1), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino2, fd2, 0, 1), 0);
	s = journal_barrier(f->j);
	/* No sender yet: times out. */
	assert_int_equal(journal_wait_acked(f->j, s, 30), -ETIMEDOUT);
	a.j = f->j;
	assert_int_equal(pthread_create(&t, NULL, acker_main, &a), 0);
	/* max_bytes is 1 in the acker, yet one barrier batch takes both files. */
	assert_int_equal(journal_wait_acked(f->j, s, 5000), 0);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.dirty_files, 0);
	/* Again with more changes while the sender runs. */
	for (int i = 0; i < 20; i++) {
		char p[16];

		snprintf(p, sizeof p, "n%d", i);
		fx_append(f, JOP_MKDIR, p, NULL, 0);
		assert_int_equal(journal_mark_dirty(f->j, ino1, fd1, (uint64_t)i, 1), 0);
	}
	s = journal_barrier(f->j);
	assert_int_equal(journal_wait_acked(f->j, s, 5000), 0);
	journal_get_stats(f->j, &st);
	assert_true(st.acked_seq >= st.head_seq - 0);
	a.stop = 1;
	pthread_join(t, NULL);
	assert_true(a.batches >= 2);
	close(fd1);
	close(fd2);
}

/* A baseline needs a batch with a fresh seq even when nothing is pending,
 * and a barrier taken while it is in flight waits for its ack. */
static void test_owe_batch(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b, *b2;
	struct journal_stats st;
	uint64_t s;

	fx_open(f);
	assert_int_equal(journal_take_batch(f->j, 0, &b), -EAGAIN);
	journal_owe_batch(f->j);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_true(b->end_seq >= 1);
	/* only the BATCH record itself */
	assert_int_equal(b->n_recs, 1);
	assert_int_equal(b->recs[0].op.type, JOP_BATCH);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.head_seq, b->end_seq);
	assert_int_equal(st.acked_seq, 0);
	/* Owed once: nothing more to take. */
	assert_int_equal(journal_take_batch(f->j, 0, &b2), -EAGAIN);
	s = journal_barrier(f->j);
	assert_int_equal(s, b->end_seq);
	assert_int_equal(journal_wait_acked(f->j, s, 10), -ETIMEDOUT);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(journal_wait_acked(f->j, s, 10), 0);
	journal_batch_free(b);
}

/* ---- marks and epochs ---- */

static void test_marks_per_epoch(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t ino_old, ino_new, ino_new2;
	int fo, fn, fn2;

	fx_mkdir(f, "dir");
	fo = fx_file(f, "dir/old", "old data", &ino_old);	/* exists before the journal */
	fx_open(f);
	fn = fx_file(f, "dir/new", NULL, &ino_new);
	fn2 = fx_file(f, "dir/new2", NULL, &ino_new2);
	fx_append(f, JOP_CREATE, "dir/new", NULL, ino_new);
	fx_append(f, JOP_CREATE, "dir/new2", NULL, ino_new2);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(journal_mark_dirty(f->j, ino_new, fn, (uint64_t)i * 10, 10), 0);
		assert_int_equal(journal_mark_dirty(f->j, ino_old, fo, (uint64_t)i, 1), 0);
	}
	journal_get_stats(f->j, &st);
	assert_int_equal(st.durable_seq >= st.head_seq - 1, 1);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "dir"), 1);
	assert_int_equal(count_type(b, JOP_MARK_FILE, NULL), 1);	/* only the old file */
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/old"), 1);
	assert_int_equal(b->n_files, 2);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 2);	/* everything acked: a new epoch */

	/* New epoch: every file pre-exists now, the dir is marked again. */
	assert_int_equal(journal_mark_dirty(f->j, ino_new, fn, 0, 1), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_new, fn, 1, 1), 0);
	assert_int_equal(journal_mark_dirty(f->j, ino_old, fo, 0, 1), 0);
	fx_append(f, JOP_UNLINK, "dir/new2", NULL, 0);
	fx_append(f, JOP_SETATTR, "dir/old", NULL, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/new"), 1);
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/old"), 1);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "dir"), 1);
	journal_batch_free(b);

	/* len 0: the mark only, before a write; nothing becomes dirty. */
	assert_int_equal(journal_ack(f->j, journal_barrier(f->j)), 0);	/* all taken */
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 3);
	assert_int_equal(journal_mark_dirty(f->j, ino_old, fo, 0, 0), 0);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.dirty_files, 0);
	assert_int_equal(st.durable_seq, st.head_seq);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/old"), 1);
	assert_int_equal(b->n_files, 0);
	journal_batch_free(b);
	close(fo);
	close(fn);
	close(fn2);
}

/* journal_pin: a file written behind the fs's back keeps its epoch (and
 * so its durable mark) until its ranges are marked or it is unpinned. */
static void test_pin_holds_epoch(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t ino;
	int fd;

	fx_mkdir(f, "dir");
	fd = fx_file(f, "dir/log", "old data", &ino);
	fx_open(f);
	assert_int_equal(journal_pin(f->j, ino, fd), 0);
	assert_int_equal(journal_pin(f->j, ino, fd), 0);	/* counted once */
	journal_get_stats(f->j, &st);
	assert_int_equal(st.dirty_files, 0);	/* nothing to send for it */
	assert_int_equal(st.durable_seq, st.head_seq);	/* its mark is durable */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/log"), 1);
	assert_int_equal(b->n_files, 0);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 1);	/* all acked, but pinned: same epoch */

	/* Its ranges marked: the pin goes with them, the epoch ends once they
	 * are acked. */
	assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 8), 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 1);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 2);

	/* Pinned again in the new epoch (a new mark), then unpinned (closed). */
	assert_int_equal(journal_pin(f->j, ino, fd), 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_FILE, "dir/log"), 1);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 2);
	journal_unpin(f->j, ino);
	/* the epoch ends with the next ack */
	fx_append(f, JOP_SETATTR, "dir/log", NULL, 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	journal_get_stats(f->j, &st);
	assert_int_equal(st.epoch, 3);
	close(fd);
}

/* A directory op with an explicit mode (a rename says S_IFDIR when a
 * directory moves), prepared and appended as the fs does. */
static void fx_dirop(struct fx *f, enum journal_op_type t, const char *path,
		     const char *path2, mode_t mode)
{
	struct journal_op op = { .type = t, .path = path, .path2 = path2, .mode = mode };

	journal_ns_lock(f->j);
	assert_int_equal(journal_prepare(f->j, &op), 0);
	assert_true(journal_append(f->j, &op) > 0);
	journal_ns_unlock(f->j);
}

/* Directories made in the epoch are covered by their ancestor's mark: a
 * copied tree costs one MARK_DIR. A directory rename makes everything so
 * far durable first and ends the covering (the next change inside writes
 * a real mark); a file rename does neither. */
static void test_new_dirs_covered(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct journal_stats st;
	uint64_t ino;
	char p1[256], p2[256];

	fx_open(f);
	fx_mkdir(f, "n");
	fx_append(f, JOP_MKDIR, "n", NULL, 0);
	fx_mkdir(f, "n/m");
	fx_append(f, JOP_MKDIR, "n/m", NULL, 0);
	close(fx_file(f, "n/m/f", "x", &ino));
	fx_append(f, JOP_CREATE, "n/m/f", NULL, ino);
	fx_append(f, JOP_SETATTR, "n/m", NULL, 0);
	close(fx_file(f, "n/a", "x", &ino));
	fx_append(f, JOP_CREATE, "n/a", NULL, ino);
	/* A file rename keeps the covering. */
	snprintf(p1, sizeof p1, "%s/n/a", f->store);
	snprintf(p2, sizeof p2, "%s/n/b", f->store);
	assert_int_equal(rename(p1, p2), 0);
	fx_dirop(f, JOP_RENAME, "n/a", "n/b", S_IFREG);
	close(fx_file(f, "n/m/g", "x", &ino));
	fx_append(f, JOP_CREATE, "n/m/g", NULL, ino);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_DIR, NULL), 1);
	assert_int_equal(count_type(b, JOP_MARK_DIR, ""), 1);
	journal_batch_free(b);

	/* Nothing acked, same epoch. The directory rename waits for every
	 * record before it to be durable. */
	close(fx_file(f, "n/m/h", "x", &ino));
	fx_append(f, JOP_CREATE, "n/m/h", NULL, ino);
	snprintf(p1, sizeof p1, "%s/n", f->store);
	snprintf(p2, sizeof p2, "%s/n2", f->store);
	assert_int_equal(rename(p1, p2), 0);
	{
		struct journal_op op = { .type = JOP_RENAME, .path = "n", .path2 = "n2",
					 .mode = S_IFDIR };

		journal_ns_lock(f->j);
		assert_int_equal(journal_prepare(f->j, &op), 0);
		journal_get_stats(f->j, &st);
		assert_int_equal(st.durable_seq, st.head_seq);
		assert_true(journal_append(f->j, &op) > 0);
		journal_ns_unlock(f->j);
	}
	close(fx_file(f, "n2/m/i", "x", &ino));
	fx_append(f, JOP_CREATE, "n2/m/i", NULL, ino);
	fx_mkdir(f, "n2/new");
	fx_append(f, JOP_MKDIR, "n2/new", NULL, 0);
	close(fx_file(f, "n2/new/j", "x", &ino));
	fx_append(f, JOP_CREATE, "n2/new/j", NULL, ino);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "n2/m"), 1);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "n2"), 1);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "n2/new"), 0);	/* covered again */
	assert_int_equal(count_type(b, JOP_MARK_DIR, NULL), 2);
	journal_batch_free(b);

	/* A path whose new directory moved away and another (older) one moved
	 * in is no longer covered. */
	fx_mkdir(f, "q");
	fx_append(f, JOP_MKDIR, "q", NULL, 0);
	snprintf(p1, sizeof p1, "%s/q", f->store);
	snprintf(p2, sizeof p2, "%s/q2", f->store);
	assert_int_equal(rename(p1, p2), 0);
	fx_dirop(f, JOP_RENAME, "q", "q2", S_IFDIR);
	fx_mkdir(f, "old");	/* stands for one older than the epoch */
	snprintf(p1, sizeof p1, "%s/old", f->store);
	snprintf(p2, sizeof p2, "%s/q", f->store);
	assert_int_equal(rename(p1, p2), 0);
	fx_dirop(f, JOP_RENAME, "old", "q", S_IFDIR);
	close(fx_file(f, "q/x", "x", &ino));
	fx_append(f, JOP_CREATE, "q/x", NULL, ino);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_DIR, "q"), 1);
	journal_batch_free(b);
}

/* A file created and acked whose data becomes dirty only later (a
 * passthrough write is marked at release) is covered by the epoch's mark,
 * so the ack file must not pass that mark while the epoch lasts: after a
 * restart the file comes back, whole. */
static void test_ack_keeps_live_marks(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	struct journal_batch *b;
	uint64_t ino_x, ino_y, end;
	int fx;

	fx_open(f);
	fx = fx_file(f, "x", NULL, &ino_x);
	fx_append(f, JOP_CREATE, "x", NULL, ino_x);	/* MARK_DIR "" 1, create 2 */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	end = b->end_seq;
	close(fx_file(f, "y", "y", &ino_y));
	fx_append(f, JOP_CREATE, "y", NULL, ino_y);	/* the copy goes on */
	assert_int_equal(journal_ack(f->j, end), 0);	/* x's create is on the peer */
	journal_batch_free(b);
	assert_int_equal(pwrite(fx, "data", 4, 0), 4);
	assert_int_equal(journal_mark_dirty(f->j, ino_x, fx, 0, 4), 0);
	close(fx);
	/* Down before x's data was sent. */
	fx_reopen(f);
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	assert_non_null(has_path(c, "x"));
	assert_int_equal(journal_rewind(f->j, end), 0);	/* the peer's position */
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	{
		const struct journal_dirty *d = find_file(b, "x");

		assert_non_null(d);
		assert_true(d->whole);
		assert_int_equal(d->bytes, 4);
	}
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	free(c);
}

/* ---- crash ---- */

static void test_crash_list_pending(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	struct journal_batch *b;
	uint64_t ino_old;
	pid_t pid;
	int st, fo;

	fx_mkdir(f, "keep");
	fx_mkdir(f, "sub");
	fo = fx_file(f, "keep/old", "0000000000", &ino_old);
	fx_file(f, "untouched", "same", NULL);
	close(fo);
	/* The "before" ctimes fall behind the marks' time. */
	journal_mark_slack_ns = 50000000ull;
	wait_older_than_marks(f, "keep", "sub", "keep/old", "untouched", "", NULL);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct journal *j;
		uint64_t ino;
		int fd;

		if (journal_open(&f->o, &j) < 0)
			_exit(2);
		for (int i = 0; i < 50; i++) {
			char p[32];
			struct journal_op op = { .type = JOP_CREATE, .path = p };

			snprintf(p, sizeof p, "sub/f%02d", i);
			fd = fx_file(f, p, "data", &ino);
			op.ino = ino;
			journal_ns_lock(j);
			journal_append(j, &op);
			journal_ns_unlock(j);
			journal_mark_dirty(j, ino, fd, 0, 4);
			close(fd);
		}
		fd = fx_file(f, "keep/old", NULL, NULL);
		assert_int_equal(pwrite(fd, "X", 1, 5), 1);
		journal_mark_dirty(j, ino_old, fd, 5, 1);
		/* Crash: no commit, no close. */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	for (int i = 0; i < 50; i++) {
		char p[32];

		snprintf(p, sizeof p, "sub/f%02d", i);
		if (!has_path(c, p))
			fail_msg("%s missing from list_pending", p);
	}
	assert_non_null(has_path(c, "keep/old"));
	assert_null(has_path(c, "untouched"));
	assert_null(has_path(c, "keep"));

	/* Reopening recovers the same: the marked files come back as whole
	 * dirty files that follow renames made after the restart. */
	fx_open(f);
	{
		char p1[256], p2[256];

		snprintf(p1, sizeof p1, "%s/sub/f49", f->store);
		snprintf(p2, sizeof p2, "%s/sub/f49-renamed", f->store);
		assert_int_equal(rename(p1, p2), 0);
		fx_append(f, JOP_RENAME, "sub/f49", "sub/f49-renamed", 0);
	}
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	{
		const struct journal_dirty *d = find_file(b, "keep/old");
		char c11[11];

		assert_non_null(d);
		assert_true(d->whole);
		assert_true(d->fd >= 0);
		assert_int_equal(d->bytes, 10);
		assert_int_equal(pread(d->fd, c11, 10, 0), 10);
		assert_memory_equal(c11, "00000X0000", 10);
		assert_non_null(find_file(b, "sub/f48"));
		assert_non_null(find_file(b, "sub/f49-renamed"));
		assert_null(find_file(b, "sub/f49"));
		assert_null(find_file(b, "untouched"));
	}
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(journal_ackfile_flush(f->j, 10000), 0);
	journal_batch_free(b);
	/* After the ack nothing is pending any more. */
	c->n = 0;
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	assert_int_equal(c->n, 0);
	assert_int_equal(journal_list_pending("/nonexistent/state", f->store, collect, c), -ENOENT);
	free(c);
}

/* A crash right after copying a tree into new directories: only the root's
 * mark reached the disk (a long commit window keeps everything else in
 * memory), yet every new file is listed, found under the new directory. */
static void test_crash_new_dirs_listed(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	pid_t pid;
	int st;

	f->o.commit_ms = 10000;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct journal *j;
		uint64_t ino;
		char p[64];

		if (journal_open(&f->o, &j) < 0)
			_exit(2);
		f->j = j;
		fx_mkdir(f, "t");
		fx_append(f, JOP_MKDIR, "t", NULL, 0);	/* waits: root mark */
		fx_mkdir(f, "t/u");
		fx_append(f, JOP_MKDIR, "t/u", NULL, 0);
		fx_mkdir(f, "t/u/v");
		fx_append(f, JOP_MKDIR, "t/u/v", NULL, 0);
		for (int i = 0; i < 20; i++) {
			snprintf(p, sizeof p, "t/u/v/f%02d", i);
			close(fx_file(f, p, "data", &ino));
			fx_append(f, JOP_CREATE, p, NULL, ino);
		}
		_exit(0);	/* crash: no commit, no close */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	assert_non_null(has_path(c, "t"));
	assert_non_null(has_path(c, "t/u"));
	assert_non_null(has_path(c, "t/u/v"));
	for (int i = 0; i < 20; i++) {
		char p[64];

		snprintf(p, sizeof p, "t/u/v/f%02d", i);
		if (!has_path(c, p))
			fail_msg("%s missing from list_pending", p);
	}
	free(c);
}

/* A rename whose record was lost in a crash: the directory's entries
 * changed after the last commit, so recovery cannot list what went away
 * and asks for a walk of the directory (a NEEDS_SCAN record after the kept
 * ones), which sends its names and removes the old one on the peer. */
static void crash_in_lost_window(struct fx *f)
{
	pid_t pid;
	int st;

	journal_no_lost_window = false;
	fx_mkdir(f, "w");
	close(fx_file(f, "w/a", "data", NULL));
	f->o.commit_ms = 10000;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct journal_op op = { .type = JOP_RENAME, .path = "w/a", .path2 = "w/b" };
		char p1[256], p2[256];
		struct journal *j;

		if (journal_open(&f->o, &j) < 0)
			_exit(2);
		journal_ns_lock(j);
		if (journal_prepare(j, &op) < 0)	/* MARK_DIR "w", durable */
			_exit(3);
		snprintf(p1, sizeof p1, "%s/w/a", f->store);
		snprintf(p2, sizeof p2, "%s/w/b", f->store);
		if (rename(p1, p2) < 0)
			_exit(4);
		journal_append(j, &op);			/* in memory only */
		_exit(0);				/* crash */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	f->o.commit_ms = 2;
}

static void test_crash_lost_window(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	struct journal_batch *b;

	crash_in_lost_window(f);
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	{
		bool walk = false;

		for (size_t i = 0; i < c->n; i++)
			if (strcmp(c->paths[i], "w") == 0 && strcmp(c->why[i], "needs-walk") == 0)
				walk = true;
		assert_true(walk);
	}
	fx_open(f);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "w"), 1);
	assert_int_equal(count_type(b, JOP_RENAME, NULL), 0);	/* it was lost */
	journal_batch_free(b);
	free(c);
}

/* The walk that recovery owes cannot be appended: a rescan of the whole
 * store, which covers it, is owed instead and goes out with the next
 * batch that can be taken. */
static void test_lost_window_walk_append_fails(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;

	crash_in_lost_window(f);
	journal_fail_append = -ENOMEM;
	fx_open(f);
	journal_fail_append = 0;
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "w"), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, ""), 1);
	journal_batch_free(b);
}

/* After a clean close nothing was lost: the same rename, reopened, comes
 * back as its record, with no walk. */
static void test_clean_close_no_walk(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	char p1[256], p2[256];

	journal_no_lost_window = false;
	fx_mkdir(f, "w");
	close(fx_file(f, "w/a", "data", NULL));
	fx_open(f);
	snprintf(p1, sizeof p1, "%s/w/a", f->store);
	snprintf(p2, sizeof p2, "%s/w/b", f->store);
	assert_int_equal(rename(p1, p2), 0);
	fx_dirop(f, JOP_RENAME, "w/a", "w/b", S_IFREG);
	fx_reopen(f);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, NULL), 0);
	assert_int_equal(count_type(b, JOP_RENAME, "w/a"), 1);
	journal_batch_free(b);
}

/* ---- cost of the hot path ---- */

static void test_mark_dirty_speed(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	uint64_t ino, t0, t1, t2;
	const int N = 1000000;
	const uint64_t FAR = 1ull << 40;
	int fd;

	fd = fx_file(f, "big", "x", &ino);
	fx_open(f);
	assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 4096), 0);	/* marks */
	t0 = clock_mono_ns();
	for (int i = 1; i < N; i++)
		journal_mark_dirty(f->j, ino, fd, (uint64_t)i * 4096, 4096);
	t1 = clock_mono_ns();
	/* Rewrites inside 64 separate ranges far beyond the sequential one. */
	for (int i = 0; i < 64; i++)
		journal_mark_dirty(f->j, ino, fd, FAR + (uint64_t)i * 1000000ull, 4096);
	for (int i = 0; i < N; i++)
		journal_mark_dirty(f->j, ino, fd, FAR + (uint64_t)(i % 64) * 1000000ull + 512, 512);
	t2 = clock_mono_ns();
	print_message("mark_dirty: %d sequential calls in %.1f ms (%.0f ns/call), "
		      "%d calls into 64 ranges in %.1f ms\n", N, (t1 - t0) / 1e6,
		      (double)(t1 - t0) / N, N, (t2 - t1) / 1e6);
	assert_true(t1 - t0 < 1000000000ull);
	assert_true(t2 - t1 < 1000000000ull);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(b->n_files, 1);
	assert_int_equal(b->files[0].n_ranges, 65);
	assert_int_equal(b->files[0].ranges[0].len, (uint64_t)N * 4096);
	journal_batch_free(b);
	close(fd);
}

/* Many threads waiting for marks share commits. */
struct marker {
	struct fx *f;
	int idx;
};

static void *marker_main(void *arg)
{
	struct marker *m = arg;
	char p[32];
	uint64_t ino;
	int fd;

	snprintf(p, sizeof p, "pre%02d", m->idx);
	fd = fx_file(m->f, p, NULL, &ino);
	for (int i = 0; i < 5; i++)
		journal_mark_dirty(m->f->j, ino, fd, (uint64_t)i, 1);
	close(fd);
	return NULL;
}

static void test_group_commit(void **state)
{
	struct fx *f = *state;
	struct marker m[16];
	pthread_t t[16];
	struct journal_batch *b;

	for (int i = 0; i < 16; i++) {
		char p[32];

		snprintf(p, sizeof p, "pre%02d", i);
		close(fx_file(f, p, "x", NULL));
	}
	f->o.commit_ms = 50;
	fx_open(f);
	uint64_t t0 = clock_mono_ns();

	for (int i = 0; i < 16; i++) {
		m[i] = (struct marker){ f, i };
		pthread_create(&t[i], NULL, marker_main, &m[i]);
	}
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	/* Waiters do not wait out the 50 ms window one after another: the
	 * time not spent in write+fdatasync is far below 16 windows, and
	 * fewer syncs than waiters were needed when they overlapped. */
	uint64_t el = clock_mono_ns() - t0;

	pthread_mutex_lock(&f->j->mu);
	print_message("16 threads marking pre-existing files: %.1f ms, %llu commits "
		      "(%.1f ms in write+fdatasync)\n", el / 1e6,
		      (unsigned long long)f->j->n_commits, f->j->commit_ns / 1e6);
	assert_true(el - f->j->commit_ns < 16 * 50 * 1000000ull / 2);
	assert_true(f->j->n_commits <= 16);
	pthread_mutex_unlock(&f->j->mu);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_MARK_FILE, NULL), 16);
	assert_int_equal(b->n_files, 16);
	journal_batch_free(b);
}

/* Marks from earlier sessions stay in force until acked. */
static void test_marks_survive_reopens(void **state)
{
	struct fx *f = *state;
	struct collected *c = calloc(1, sizeof(*c));
	uint64_t ino;

	journal_mark_slack_ns = 50000000ull;
	fx_mkdir(f, "d");
	wait_older_than_marks(f, "d", NULL);	/* older than any mark */
	fx_open(f);
	close(fx_file(f, "d/first", "1", &ino));
	fx_append(f, JOP_CREATE, "d/first", NULL, ino);
	fx_reopen(f);
	/* Only the first session's mark can find d/first. */
	wait_older_than_marks(f, "d", "d/first", NULL);
	close(fx_file(f, "d/second", "2", &ino));
	fx_append(f, JOP_CREATE, "d/second", NULL, ino);
	journal_close(f->j);
	f->j = NULL;
	/* Drop the create records' evidence: only the marks can find them. */
	assert_int_equal(journal_list_pending(f->state, f->store, collect, c), 0);
	assert_non_null(has_path(c, "d/first"));
	assert_non_null(has_path(c, "d/second"));
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = i + 1; k < c->n; k++)
			if (strcmp(c->paths[i], c->paths[k]) == 0)
				fail_msg("%s listed twice", c->paths[i]);
	free(c);
}

static void test_append_throughput(void **state)
{
	struct fx *f = *state;
	struct journal_stats st;
	const int N = 200000;
	uint64_t t0, t1, t2;

	fx_open(f);
	t0 = clock_mono_ns();
	journal_ns_lock(f->j);
	for (int i = 0; i < 100; i++) {	/* the 100 directory marks, each a commit */
		char p[32];
		struct journal_op op = { .type = JOP_MKDIR, .path = p, .mode = 0755 };

		snprintf(p, sizeof p, "d%03d/sub", i);
		assert_true(journal_append(f->j, &op) > 0);
	}
	journal_ns_unlock(f->j);
	t1 = clock_mono_ns();
	print_message("append: 100 first changes in 100 dirs (each waits for its mark): "
		      "%.1f ms\n", (t1 - t0) / 1e6);
	t0 = clock_mono_ns();
	journal_ns_lock(f->j);
	for (int i = 0; i < N; i++) {
		char p[32];
		struct journal_op op = { .type = JOP_CREATE, .path = p, .mode = 0644 };

		snprintf(p, sizeof p, "d%03d/file-%06d", i % 100, i);
		assert_true(journal_append(f->j, &op) > 0);
	}
	journal_ns_unlock(f->j);
	t1 = clock_mono_ns();
	assert_int_equal(journal_commit(f->j), 0);
	t2 = clock_mono_ns();
	journal_get_stats(f->j, &st);
	print_message("append: then %d creates into the same dirs in %.1f ms (%.0f ns/op, %llu bytes "
		      "on disk), final commit %.1f ms\n", N, (t1 - t0) / 1e6,
		      (double)(t1 - t0) / N, (unsigned long long)st.disk_bytes, (t2 - t1) / 1e6);
	assert_int_equal(st.head_seq, (uint64_t)N + 200);	/* + one MARK_DIR per dir */
	assert_true(t1 - t0 < 2000000000ull);	/* no per-op sync */
}

/* Writers (creates + writes) race a sender that takes small batches,
 * requeues some and acks the rest; in the end every create was seen once
 * in seq order and every written byte was covered by some acked batch. */
enum { W_THREADS = 4, W_FILES = 100, W_CHUNKS = 4, W_CHUNK = 1000 };

struct wctx {
	struct fx *f;
	int id;
};

struct sctx {
	struct journal *j;
	atomic_int stop;
	int batches, requeued;
	uint64_t last_seq;
	bool order_ok;
	uint8_t covered[W_THREADS][W_FILES][W_CHUNKS];
	int created[W_THREADS][W_FILES];
};

static void *writer_main(void *arg)
{
	struct wctx *w = arg;
	char buf[W_CHUNK];

	memset(buf, 'a' + w->id, sizeof buf);
	for (int i = 0; i < W_FILES; i++) {
		char p[32];
		uint64_t ino;
		int fd;

		snprintf(p, sizeof p, "w%d/f%03d", w->id, i);
		journal_ns_lock(w->f->j);
		fd = fx_file(w->f, p, NULL, &ino);
		journal_append(w->f->j, &(struct journal_op){ .type = JOP_CREATE, .path = p,
								.ino = ino });
		journal_ns_unlock(w->f->j);
		for (int c = 0; c < W_CHUNKS; c++) {
			assert_int_equal(pwrite(fd, buf, sizeof buf, (off_t)c * W_CHUNK), W_CHUNK);
			journal_mark_dirty(w->f->j, ino, fd, (uint64_t)c * W_CHUNK, W_CHUNK);
		}
		close(fd);
	}
	return NULL;
}

static void sender_consume(struct sctx *s, struct journal_batch *b)
{
	for (size_t i = 0; i < b->n_recs; i++) {
		const struct journal_rec *r = &b->recs[i];
		int t, n;

		if (r->seq <= s->last_seq)
			continue;	/* re-sent after a requeue: the peer dedups */
		if (r->seq != s->last_seq + 1)
			s->order_ok = false;
		s->last_seq = r->seq;
		if (r->op.type == JOP_CREATE && sscanf(r->op.path, "w%d/f%d", &t, &n) == 2)
			s->created[t][n]++;
	}
	for (size_t i = 0; i < b->n_files; i++) {
		int t, n;

		if (sscanf(b->files[i].path, "w%d/f%d", &t, &n) != 2)
			continue;
		for (size_t k = 0; k < b->files[i].n_ranges; k++)
			for (uint64_t c = b->files[i].ranges[k].off / W_CHUNK;
			     c * W_CHUNK < b->files[i].ranges[k].off + b->files[i].ranges[k].len; c++)
				s->covered[t][n][c] = 1;
	}
}

static void *sender_main(void *arg)
{
	struct sctx *s = arg;

	while (!s->stop) {
		struct journal_batch *b;

		if (journal_take_batch(s->j, 3 * W_CHUNK, &b) < 0) {
			usleep(500);
			continue;
		}
		if (++s->batches % 5 == 0) {
			journal_requeue(s->j, b);	/* "disconnect" */
			s->requeued++;
			continue;
		}
		sender_consume(s, b);
		journal_ack(s->j, b->end_seq);
		journal_batch_free(b);
	}
	return NULL;
}

static void test_concurrent_writers_and_sender(void **state)
{
	struct fx *f = *state;
	struct sctx *s = calloc(1, sizeof(*s));
	struct wctx w[W_THREADS];
	pthread_t wt[W_THREADS], st_;
	struct journal_stats st;

	fx_open(f);
	for (int t = 0; t < W_THREADS; t++) {
		char p[16];

		snprintf(p, sizeof p, "w%d", t);
		fx_mkdir(f, p);
	}
	s->j = f->j;
	s->order_ok = true;
	assert_int_equal(pthread_create(&st_, NULL, sender_main, s), 0);
	for (int t = 0; t < W_THREADS; t++) {
		w[t] = (struct wctx){ f, t };
		assert_int_equal(pthread_create(&wt[t], NULL, writer_main, &w[t]), 0);
	}
	for (int t = 0; t < W_THREADS; t++)
		pthread_join(wt[t], NULL);
	uint64_t bar = journal_barrier(f->j);
	int wrc = journal_wait_acked(f->j, bar, 10000);

	s->stop = 1;
	pthread_join(st_, NULL);
	if (wrc != 0) {
		journal_get_stats(f->j, &st);
		fail_msg("barrier %llu not acked: head=%llu sent=%llu acked=%llu dirty=%llu "
			 "batches=%d requeued=%d", (unsigned long long)bar,
			 (unsigned long long)st.head_seq, (unsigned long long)st.sent_seq,
			 (unsigned long long)st.acked_seq, (unsigned long long)st.dirty_files,
			 s->batches, s->requeued);
	}
	print_message("%d batches (%d requeued) for %d files\n", s->batches, s->requeued,
		      W_THREADS * W_FILES);
	assert_true(s->order_ok);
	for (int t = 0; t < W_THREADS; t++)
		for (int n = 0; n < W_FILES; n++) {
			if (s->created[t][n] != 1)
				fail_msg("w%d/f%03d created %d times", t, n, s->created[t][n]);
			for (int c = 0; c < W_CHUNKS; c++)
				if (!s->covered[t][n][c])
					fail_msg("w%d/f%03d chunk %d never sent", t, n, c);
		}
	journal_get_stats(f->j, &st);
	assert_int_equal(st.dirty_files, 0);
	assert_int_equal(st.acked_seq, st.head_seq);
	assert_true(st.epoch >= 2);
	free(s);
}

static void test_bad_paths_and_lock(void **state)
{
	static const char *bad[] = { "/abs", "a/../b", "a//b", "./a", "a/", "..", "a/." };
	struct fx *f = *state;
	struct journal *j2;

	fx_open(f);
	journal_ns_lock(f->j);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct journal_op op = { .type = JOP_CREATE, .path = bad[i] };

		if (journal_append(f->j, &op) != -EINVAL)
			fail_msg("path '%s' accepted", bad[i]);
	}
	assert_int_equal(journal_append(f->j, &(struct journal_op){ .type = JOP_RENAME,
			 .path = "ok", .path2 = "../x" }), -EINVAL);
	assert_int_equal(journal_append(f->j, &(struct journal_op){ .type = JOP_MARK_DIR,
			 .path = "x" }), -EINVAL);	/* the journal's own types */
	journal_ns_unlock(f->j);
	/* One owner per journal directory. */
	assert_int_equal(journal_open(&f->o, &j2), -EBUSY);
}

/* An op too large for a record (a 2 MiB xattr) is recorded as NEEDS_SCAN
 * and later ops follow as NEEDS_SCAN until everything is acked. */
static void test_op_too_large(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	char *big = calloc(1, 2u << 20);
	struct journal_op op = { .type = JOP_SETXATTR, .path = "x", .xname = "user.big",
				 .xvalue = big, .xsize = 2u << 20 };

	fx_open(f);
	journal_ns_lock(f->j);
	assert_true(journal_append(f->j, &op) > 0);
	journal_ns_unlock(f->j);
	fx_append(f, JOP_RENAME, "x", "y", 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_SETXATTR, NULL), 0);
	assert_int_equal(count_type(b, JOP_RENAME, NULL), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "x"), 1);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "y"), 1);
	journal_batch_free(b);
	free(big);
}

/* Without handles and out of fds: the file is named by path (NEEDS_SCAN)
 * and the journal switches to needs-scan records until everything is
 * acked. */
static void test_out_of_fds(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	struct rlimit old, rl;
	uint64_t ino;
	int fd, fds[4096], n = 0;

	journal_no_handles = true;
	fd = fx_file(f, "victim", "abc", &ino);
	fx_open(f);
	fx_append(f, JOP_MKDIR, "d", NULL, 0);
	assert_int_equal(journal_commit(f->j), 0);	/* the segment is open */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (n < 4096 && (fds[n] = dup(0)) >= 0)
		n++;
	assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 3), 0);
	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	fx_append(f, JOP_RENAME, "victim", "moved", 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "victim"), 1);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, "moved"), 1);
	assert_int_equal(count_type(b, JOP_RENAME, NULL), 0);
	assert_int_equal(b->n_files, 0);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	journal_batch_free(b);
	/* Acked: back to normal records. */
	fx_append(f, JOP_RENAME, "moved", "back", 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_RENAME, NULL), 1);
	journal_batch_free(b);
	close(fd);
}

/* With handles, marking needs no fd at all: a process with none left
 * still records the file normally, and it follows a later rename. */
static void test_out_of_fds_with_handles(void **state)
{
	struct fx *f = *state;
	const struct journal_dirty *d;
	struct journal_batch *b;
	struct rlimit old, rl;
	uint64_t ino;
	char buf[8] = "", p1[256], p2[256];
	int fd, fds[4096], n = 0;

	fd = fx_file(f, "victim", "abc", &ino);
	fx_open(f);
	fx_append(f, JOP_MKDIR, "d", NULL, 0);
	assert_int_equal(journal_commit(f->j), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (n < 4096 && (fds[n] = dup(0)) >= 0)
		n++;
	assert_int_equal(journal_mark_dirty(f->j, ino, fd, 0, 3), 0);
	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	snprintf(p1, sizeof p1, "%s/victim", f->store);
	snprintf(p2, sizeof p2, "%s/d/moved", f->store);
	fx_mkdir(f, "d");
	assert_int_equal(rename(p1, p2), 0);
	fx_append(f, JOP_RENAME, "victim", "d/moved", 0);
	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	assert_int_equal(count_type(b, JOP_NEEDS_SCAN, NULL), 0);
	assert_int_equal(count_type(b, JOP_RENAME, NULL), 1);
	d = find_file(b, "d/moved");
	assert_non_null(d);
	assert_int_equal(pread(d->fd, buf, sizeof buf - 1, 0), 3);
	assert_string_equal(buf, "abc");
	journal_batch_free(b);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_seqs, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_reopen_keeps_unacked, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_torn_first_record_of_segment, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_take_inflight_fails, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rescan_owed_after_failed_append, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_ack_trims_segments, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_size_limit, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_batch_take_requeue_rewind, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_notify_fd, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_fds_bounded, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_fds_bounded_without_handles, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_fd_cap_without_handles, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_barrier_across_capped_batches, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_many_dirty_files_low_nofile, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_barrier_wait_acked, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_owe_batch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_marks_per_epoch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pin_holds_epoch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crash_list_pending, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mark_dirty_speed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_group_commit, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_writers_and_sender, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_paths_and_lock, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_marks_survive_reopens, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_append_throughput, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds_with_handles, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_op_too_large, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_new_dirs_covered, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ack_keeps_live_marks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crash_new_dirs_listed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crash_lost_window, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lost_window_walk_append_fails, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_clean_close_no_walk, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
