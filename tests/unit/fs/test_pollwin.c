/* Unit tests for fs/pollwin: the adaptive polling window of the ring
 * threads, case by case (grows to twice a short gap, capped; halves on a
 * long gap, floored; off when polling is off). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/pollwin.h"

#define US 1000ull

static void test_pollwin_cases(void **state)
{
	static const struct {
		uint64_t win, gap, max, want;
	} cases[] = {
		{ 200 * US, 5 * US, 200 * US, 200 * US },	/* short gap: keeps a wider window */
		{ 10 * US, 5 * US, 200 * US, 10 * US },	/* 2 x gap not wider */
		{ 10 * US, 30 * US, 200 * US, 60 * US },	/* grows to 2 x gap */
		{ 50 * US, 150 * US, 200 * US, 200 * US },	/* 2 x gap capped at max */
		{ 200 * US, 200 * US, 200 * US, 200 * US },	/* gap == max still fits */
		{ 200 * US, 201 * US, 200 * US, 100 * US },	/* longer gap: halves */
		{ 100 * US, 5000 * US, 200 * US, 50 * US },
		{ 20 * US, 5000 * US, 200 * US, 10 * US },	/* down to the floor */
		{ 10 * US, 5000 * US, 200 * US, 10 * US },	/* not below it */
		{ 15 * US, 5000 * US, 200 * US, 15 * US },	/* half would be under it */
		{ 5 * US, 1 * US, 5 * US, 5 * US },	/* a max under the floor */
		{ 5 * US, 50 * US, 5 * US, 5 * US },
		{ 300 * US, 1 * US, 200 * US, 200 * US },	/* a window over max is clamped */
		{ 200 * US, 1 * US, 0, 0 },	/* polling off */
		{ 0, 1000 * US, 0, 0 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		assert_int_equal(pollwin_next(cases[k].win, cases[k].gap, cases[k].max),
				 cases[k].want);
}

/* A sporadic mount (a request every 300 us, max 200 us) ends at the
 * floor; a burst after it (gaps of 20 us) is back to a useful window on
 * its first request. */
static void test_pollwin_sequence(void **state)
{
	uint64_t win = 200 * US;

	(void)state;
	for (int k = 0; k < 10; k++)
		win = pollwin_next(win, 300 * US, 200 * US);
	assert_int_equal(win, 12500);
	win = pollwin_next(win, 20 * US, 200 * US);
	assert_int_equal(win, 40 * US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pollwin_cases),
		cmocka_unit_test(test_pollwin_sequence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
