/* Unit tests for netsync/roles/history: the file round-trips (role,
 * entries, the current number in STATE/generation), a history keeps its
 * newest HISTORY_MAX entries, and the decision table: a new secondary, a
 * prefix (behind), an old primary's lagging tail, a secondary ahead in the
 * primary's own generation or in a later one, split brain after a common
 * generation, and another node's data (foreign). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "netsync/roles/history.h"

static const uint8_t node_a[16] = { 0xa };
static const uint8_t node_b[16] = { 0xb };

static void test_roundtrip(void **state)
{
	char dir[] = "/tmp/twinfs-history-XXXXXX", path[64], buf[32];
	struct history h = { .role = HISTORY_PRIMARY }, r;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(history_load(dir, &r), 0);	/* missing: empty */
	assert_int_equal(r.n, 0);
	assert_int_equal(r.role, HISTORY_NONE);
	assert_int_equal(history_begin(&h, 0, node_a), 0);
	assert_int_equal(history_begin(&h, 42, node_b), 0);
	assert_int_equal(history_save(dir, &h), 0);
	assert_int_equal(history_load(dir, &r), 0);
	assert_int_equal(r.role, HISTORY_PRIMARY);
	assert_int_equal(r.n, 2);
	assert_memory_equal(r.g, h.g, sizeof(h.g[0]) * 2);
	assert_int_equal(r.g[1].num, 2);
	assert_int_equal(r.g[1].start, 42);
	snprintf(path, sizeof(path), "%s/generation", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "2\n");
	/* a corrupt file is refused, not read as empty */
	snprintf(path, sizeof(path), "%s/history", dir);
	f = fopen(path, "w");
	fputs("twinfs history 1\ngen x\n", f);
	fclose(f);
	assert_int_equal(history_load(dir, &r), -EBADMSG);
	unlink(path);
	snprintf(path, sizeof(path), "%s/generation", dir);
	unlink(path);
	rmdir(dir);
}

static void test_keeps_newest(void **state)
{
	struct history h = { 0 };

	(void)state;
	for (int i = 0; i < HISTORY_MAX + 3; i++)
		assert_int_equal(history_begin(&h, (uint64_t)i * 10, node_a), 0);
	assert_int_equal(h.n, HISTORY_MAX);
	assert_int_equal(h.g[0].num, 4);
	assert_int_equal(history_cur(&h)->num, HISTORY_MAX + 3);
}

/* Two lines from one common generation: A = [g1], B = [g1, g2 at 100]. */
static void fork_ab(struct history *a, struct history *b)
{
	memset(a, 0, sizeof(*a));
	assert_int_equal(history_begin(a, 0, node_a), 0);
	*b = *a;
	assert_int_equal(history_begin(b, 100, node_b), 0);
}

static void test_decide(void **state)
{
	struct history a, b, a2, empty = { 0 }, other = { 0 };
	struct history_decision d;

	(void)state;
	fork_ab(&a, &b);
	/* a new secondary */
	history_decide(&a, 50, &empty, 0, false, &d);
	assert_int_equal(d.verdict, HISTORY_NEW);
	/* the secondary of A, behind A */
	history_decide(&a, 500, &a, 300, false, &d);
	assert_int_equal(d.verdict, HISTORY_BEHIND);
	assert_int_equal(d.resume, 300);
	/* ... and ahead of A (A restored from an old copy) */
	history_decide(&a, 200, &a, 300, false, &d);
	assert_int_equal(d.verdict, HISTORY_AHEAD);
	/* B promoted at 100; A's old secondary position 80 is a prefix */
	history_decide(&b, 150, &a, 80, false, &d);
	assert_int_equal(d.verdict, HISTORY_BEHIND);
	assert_int_equal(d.resume, 80);
	/* A demoted with writes up to 120 that B never got: its tail */
	history_decide(&b, 150, &a, 120, true, &d);
	assert_int_equal(d.verdict, HISTORY_LAGGED);
	assert_int_equal(d.resume, 100);
	/* the same without a list of the tail's paths: split brain */
	history_decide(&b, 150, &a, 120, false, &d);
	assert_int_equal(d.verdict, HISTORY_SPLIT);
	assert_int_equal(d.common, 100);
	/* A (still on g1) as the primary of promoted B: B is ahead */
	history_decide(&a, 120, &b, 150, false, &d);
	assert_int_equal(d.verdict, HISTORY_AHEAD);
	/* A wrote while apart (g3 at 110): both went on after g1 */
	a2 = a;
	assert_int_equal(history_begin(&a2, 110, node_a), 0);
	history_decide(&b, 150, &a2, 130, true, &d);
	assert_int_equal(d.verdict, HISTORY_SPLIT);
	assert_int_equal(d.common, 100);
	history_decide(&a2, 130, &b, 150, false, &d);
	assert_int_equal(d.verdict, HISTORY_SPLIT);
	assert_int_equal(d.common, 100);
	/* another node's data */
	assert_int_equal(history_begin(&other, 0, node_b), 0);
	history_decide(&other, 9000, &a, 300, false, &d);
	assert_int_equal(d.verdict, HISTORY_FOREIGN);
	assert_non_null(strstr(d.why, "another node's data"));
	/* a secondary from before histories: by seq alone */
	history_decide(&a, 500, &empty, 300, false, &d);
	assert_int_equal(d.verdict, HISTORY_BEHIND);
	history_decide(&a, 200, &empty, 300, false, &d);
	assert_int_equal(d.verdict, HISTORY_AHEAD);
	assert_true(history_accepts(HISTORY_LAGGED));
	assert_false(history_accepts(HISTORY_SPLIT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_keeps_newest),
		cmocka_unit_test(test_decide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
