/*
 * Unit tests for journal/jage.c, the age of the oldest change the peer
 * lacks (journal_stats.oldest_change_ns), against a real journal in a
 * mkdtemp dir: records and data set it, a take keeps it until the ack,
 * a requeued batch keeps its age, and a restart reads it back from the
 * BATCH records (or the marks when no batch was taken).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/clock.h"
#include "journal/journal.h"
#include "journal/journal_int.h"

struct fx {
	char root[64], store[96], state[96];
	struct journal_opts o;
	struct journal *j;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof f->root, "/tmp/twinfs-jage.XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->store, sizeof f->store, "%s/store", f->root);
	snprintf(f->state, sizeof f->state, "%s/state", f->root);
	mkdir(f->store, 0755);
	f->o = (struct journal_opts){ .state_dir = f->state, .store_dir = f->store,
				      .size_limit = 64ull << 20, .commit_ms = 2 };
	journal_no_lost_window = true;
	journal_mark_slack_ns = 0;
	assert_int_equal(journal_open(&f->o, &f->j), 0);
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

static void fx_reopen(struct fx *f)
{
	journal_close(f->j);
	f->j = NULL;
	assert_int_equal(journal_open(&f->o, &f->j), 0);
}

static uint64_t oldest(struct fx *f)
{
	struct journal_stats st;

	journal_get_stats(f->j, &st);
	return st.oldest_change_ns;
}

/* Appends a CREATE of NAME; returns the wall-clock ns just before it. */
static uint64_t fx_create(struct fx *f, const char *name)
{
	struct journal_op op = { .type = JOP_CREATE, .path = name, .mode = 0644 };
	uint64_t before = clock_real_coarse_ns();

	journal_ns_lock(f->j);
	assert_true(journal_append(f->j, &op) > 0);
	journal_ns_unlock(f->j);
	return before;
}

/* Waits until the coarse clock has moved past T, so that a later change
 * has a later time. */
static void past(uint64_t t)
{
	while (clock_real_coarse_ns() <= t)
		usleep(1000);
}

static struct journal_batch *take(struct fx *f)
{
	struct journal_batch *b = NULL;

	assert_int_equal(journal_take_batch(f->j, 0, &b), 0);
	return b;
}

static void test_nothing_pending_is_zero(void **state)
{
	struct fx *f = *state;

	assert_int_equal(oldest(f), 0);
}

static void test_record_ages_until_acked(void **state)
{
	struct fx *f = *state;
	uint64_t t0 = fx_create(f, "a"), t1, seen;
	struct journal_batch *b;

	seen = oldest(f);
	assert_true(seen >= t0 && seen <= clock_real_coarse_ns());
	past(seen);
	t1 = fx_create(f, "b");
	assert_true(t1 > seen);
	assert_int_equal(oldest(f), seen);	/* the oldest, not the newest */
	b = take(f);
	assert_int_equal(oldest(f), seen);	/* sent is not held */
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(oldest(f), 0);
	journal_batch_free(b);
}

static void test_data_and_later_batches(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b1, *b2;
	char p[160];
	uint64_t first, second;
	struct stat st;
	int fd;

	snprintf(p, sizeof p, "%s/data", f->store);
	fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(journal_mark_dirty(f->j, st.st_ino, fd, 0, 4096), 0);
	first = oldest(f);
	assert_true(first > 0);
	b1 = take(f);
	past(first);
	assert_int_equal(journal_mark_dirty(f->j, st.st_ino, fd, 4096, 4096), 0);
	b2 = take(f);
	second = b2->end_seq;
	/* acking the first batch leaves the second's age */
	assert_int_equal(journal_ack(f->j, b1->end_seq), 0);
	assert_true(oldest(f) > first);
	assert_int_equal(journal_ack(f->j, second), 0);
	assert_int_equal(oldest(f), 0);
	journal_batch_free(b1);
	journal_batch_free(b2);
	close(fd);
}

static void test_requeue_keeps_age(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	uint64_t seen;

	fx_create(f, "a");
	seen = oldest(f);
	b = take(f);
	journal_requeue(f->j, b);	/* the link dropped */
	past(seen);
	fx_create(f, "b");
	b = take(f);
	assert_int_equal(oldest(f), seen);
	assert_int_equal(journal_ack(f->j, b->end_seq), 0);
	assert_int_equal(oldest(f), 0);
	journal_batch_free(b);
}

static void test_restart_keeps_batch_age(void **state)
{
	struct fx *f = *state;
	struct journal_batch *b;
	uint64_t seen;

	fx_create(f, "a");
	seen = oldest(f);
	past(seen);
	b = take(f);	/* taken after the change: a later take time */
	journal_batch_free(b);
	fx_create(f, "b");	/* after the batch, not in it */
	fx_reopen(f);
	assert_int_equal(oldest(f), seen);
}

static void test_restart_without_batch_uses_marks(void **state)
{
	struct fx *f = *state;
	uint64_t t0 = fx_create(f, "a"), seen;

	fx_reopen(f);
	seen = oldest(f);
	/* the directory's mark, made just before the create */
	assert_true(seen > 0 && seen <= t0 + 1000000000ull);
	{
		struct timespec now;	/* marks read the precise clock */

		clock_gettime(CLOCK_REALTIME, &now);
		assert_true(seen <= (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
	}
}

static void test_pin_without_write_ages_nothing(void **state)
{
	struct fx *f = *state;
	char p[160];
	struct stat st;
	int fd;

	snprintf(p, sizeof p, "%s/pinned", f->store);
	fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(journal_pin(f->j, st.st_ino, fd), 0);
	assert_true(oldest(f) > 0);	/* written behind the fs: pending */
	journal_unpin(f->j, st.st_ino);
	/* the mark record it made is still unacked */
	{
		struct journal_batch *b = take(f);

		assert_int_equal(journal_ack(f->j, b->end_seq), 0);
		journal_batch_free(b);
	}
	assert_int_equal(oldest(f), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nothing_pending_is_zero, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_record_ages_until_acked, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_data_and_later_batches, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_requeue_keeps_age, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_restart_keeps_batch_age, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_restart_without_batch_uses_marks, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_pin_without_write_ages_nothing, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
