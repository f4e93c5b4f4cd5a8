/* Unit tests for netsync/sentmap: what the sender may skip. A block is
 * held only at the same aligned offset with the same length and hash;
 * forgetting covers the path and everything below it (not siblings that
 * share a prefix); trimming drops blocks past a new size; the least
 * recently used file (noted or held) goes when the map is full; after a
 * reconnect only blocks of batches the peer made durable stay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "netsync/primary/sentmap.h"

#define BS 1024u

static void test_holds_exact_block(void **state)
{
	struct sentmap *m = sentmap_new(BS);

	(void)state;
	assert_non_null(m);
	assert_false(sentmap_holds(m, "f", 0, BS, 7));
	assert_int_equal(sentmap_note(m, "f", 0, BS, 7, 1), 0);
	assert_int_equal(sentmap_note(m, "f", 3 * BS, 100, 9, 1), 0);
	assert_true(sentmap_holds(m, "f", 0, BS, 7));
	assert_true(sentmap_holds(m, "f", 3 * BS, 100, 9));
	assert_false(sentmap_holds(m, "f", 0, BS, 8));		/* other content */
	assert_false(sentmap_holds(m, "f", 0, BS - 1, 7));	/* other length */
	assert_false(sentmap_holds(m, "f", 3 * BS, BS, 9));	/* the block grew */
	assert_false(sentmap_holds(m, "f", BS, BS, 7));		/* never sent */
	assert_false(sentmap_holds(m, "f", 10 * BS, BS, 7));	/* past the end */
	assert_false(sentmap_holds(m, "g", 0, BS, 7));		/* other file */
	assert_false(sentmap_holds(m, "f", 0, 0, 7));		/* empty */
	/* a later send of the block replaces what was held */
	assert_int_equal(sentmap_note(m, "f", 0, BS, 8, 1), 0);
	assert_false(sentmap_holds(m, "f", 0, BS, 7));
	assert_true(sentmap_holds(m, "f", 0, BS, 8));
	sentmap_free(m);
}

static void test_unaligned_send_forgets_file(void **state)
{
	struct sentmap *m = sentmap_new(BS);

	(void)state;
	assert_int_equal(sentmap_note(m, "f", 0, BS, 7, 1), 0);
	assert_int_equal(sentmap_note(m, "f", BS + 10, 50, 1, 1), 0);
	assert_false(sentmap_holds(m, "f", 0, BS, 7));
	assert_false(sentmap_holds(m, "f", BS + 10, 50, 1));
	assert_int_equal(sentmap_files(m), 0);
	sentmap_free(m);
}

static void test_forget_path_and_below(void **state)
{
	struct sentmap *m = sentmap_new(BS);

	(void)state;
	assert_int_equal(sentmap_note(m, "a/b", 0, BS, 1, 1), 0);
	assert_int_equal(sentmap_note(m, "a/b/c", 0, BS, 2, 1), 0);
	assert_int_equal(sentmap_note(m, "a/bc", 0, BS, 3, 1), 0);
	assert_int_equal(sentmap_note(m, "x", 0, BS, 4, 1), 0);
	sentmap_forget(m, "a/b");
	assert_false(sentmap_holds(m, "a/b", 0, BS, 1));
	assert_false(sentmap_holds(m, "a/b/c", 0, BS, 2));
	assert_true(sentmap_holds(m, "a/bc", 0, BS, 3));
	assert_true(sentmap_holds(m, "x", 0, BS, 4));
	sentmap_forget(m, NULL);
	assert_int_equal(sentmap_files(m), 2);
	sentmap_forget(m, "");	/* the root: everything */
	assert_int_equal(sentmap_files(m), 0);
	assert_int_equal(sentmap_note(m, "x", 0, BS, 4, 1), 0);
	sentmap_clear(m);
	assert_false(sentmap_holds(m, "x", 0, BS, 4));
	sentmap_free(m);
}

static void test_trim(void **state)
{
	struct sentmap *m = sentmap_new(BS);

	(void)state;
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(sentmap_note(m, "f", i * BS, BS, i + 1, 1), 0);
	sentmap_trim(m, "f", 5 * BS + 1);	/* block 5 now has 1 byte */
	assert_true(sentmap_holds(m, "f", 4 * BS, BS, 5));
	assert_false(sentmap_holds(m, "f", 5 * BS, BS, 6));
	assert_false(sentmap_holds(m, "f", 9 * BS, BS, 10));
	sentmap_trim(m, "f", 5 * BS);		/* on a boundary: block 4 stays */
	assert_true(sentmap_holds(m, "f", 4 * BS, BS, 5));
	/* re-grown: the dropped blocks are sent again, then held */
	assert_int_equal(sentmap_note(m, "f", 9 * BS, BS, 10, 1), 0);
	assert_true(sentmap_holds(m, "f", 9 * BS, BS, 10));
	assert_false(sentmap_holds(m, "f", 7 * BS, BS, 8));
	sentmap_trim(m, "f", 0);
	assert_false(sentmap_holds(m, "f", 0, BS, 1));
	sentmap_trim(m, "nothing", 0);
	sentmap_free(m);
}

static void test_keep_what_the_peer_made_durable(void **state)
{
	struct sentmap *m = sentmap_new(BS);

	(void)state;
	assert_int_equal(sentmap_note(m, "f", 0, BS, 1, 10), 0);
	assert_int_equal(sentmap_note(m, "f", BS, BS, 2, 11), 0);
	assert_int_equal(sentmap_note(m, "f", 2 * BS, BS, 3, 12), 0);
	assert_int_equal(sentmap_note(m, "g", 0, BS, 4, 12), 0);
	/* the block of batch 10 sent again in batch 12: only 12 counts */
	assert_int_equal(sentmap_note(m, "f", 0, BS, 5, 12), 0);
	sentmap_keep(m, 11);
	assert_false(sentmap_holds(m, "f", 0, BS, 1));
	assert_false(sentmap_holds(m, "f", 0, BS, 5));
	assert_true(sentmap_holds(m, "f", BS, BS, 2));
	assert_false(sentmap_holds(m, "f", 2 * BS, BS, 3));
	assert_false(sentmap_holds(m, "g", 0, BS, 4));
	sentmap_keep(m, 0);
	assert_false(sentmap_holds(m, "f", BS, BS, 2));
	sentmap_free(m);
}

static void test_least_recently_used_goes(void **state)
{
	struct sentmap *m = sentmap_new(BS);
	char p[32];

	(void)state;
	for (int i = 0; i < SENTMAP_FILES; i++) {
		snprintf(p, sizeof(p), "f%d", i);
		assert_int_equal(sentmap_note(m, p, 0, BS, (uint64_t)i, 1), 0);
	}
	/* f0 is used again, so f1 is the oldest when one more comes */
	assert_int_equal(sentmap_note(m, "f0", BS, BS, 99, 1), 0);
	assert_int_equal(sentmap_note(m, "new", 0, BS, 5, 1), 0);
	assert_int_equal(sentmap_files(m), SENTMAP_FILES);
	assert_true(sentmap_holds(m, "f0", 0, BS, 0));
	assert_false(sentmap_holds(m, "f1", 0, BS, 1));
	assert_true(sentmap_holds(m, "f2", 0, BS, 2));
	assert_true(sentmap_holds(m, "new", 0, BS, 5));
	/* a hit counts as use: f2 was just held, so f3 goes next */
	assert_int_equal(sentmap_note(m, "new2", 0, BS, 6, 1), 0);
	assert_true(sentmap_holds(m, "f2", 0, BS, 2));
	assert_false(sentmap_holds(m, "f3", 0, BS, 3));
	sentmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds_exact_block),
		cmocka_unit_test(test_unaligned_send_forgets_file),
		cmocka_unit_test(test_forget_path_and_below),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_keep_what_the_peer_made_durable),
		cmocka_unit_test(test_least_recently_used_goes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
