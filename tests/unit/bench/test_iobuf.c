/* Unit tests for bench/iobuf: alignment and size of the mapping, that it
 * is real writable memory, that huge pages are reported when the kernel
 * gives them and small pages are reported as such. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "bench/iobuf.h"

static void test_alloc_aligned_and_rounded(void **state)
{
	static const size_t lens[] = { 4096, 65536 * 16, IOBUF_ALIGN, IOBUF_ALIGN + 1,
				       (size_t)16 << 20 };

	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		struct iobuf b;

		assert_int_equal(iobuf_alloc(&b, lens[k]), 0);
		assert_int_equal((uintptr_t)b.p % IOBUF_ALIGN, 0);
		assert_int_equal(b.len, lens[k]);
		assert_int_equal(b.maplen % IOBUF_ALIGN, 0);
		assert_true(b.maplen >= lens[k] && b.maplen - lens[k] < IOBUF_ALIGN);
		/* Anonymous memory starts zero and takes writes end to end. */
		assert_int_equal(b.p[0], 0);
		assert_int_equal(b.p[b.maplen - 1], 0);
		memset(b.p, 0xa5, b.len);
		assert_int_equal((unsigned char)b.p[b.len - 1], 0xa5);
		iobuf_free(&b);
		assert_null(b.p);
	}
}

static void test_alloc_zero_refused(void **state)
{
	struct iobuf b;

	assert_int_equal(iobuf_alloc(&b, 0), -ENOMEM);
	assert_null(b.p);
	iobuf_free(&b);		/* harmless on a failed buffer */
}

/* THP mode from sysfs: 1 if the kernel may give huge pages to madvised
 * memory ("always" or "madvise" selected), 0 if not or unknown. */
static int thp_possible(void)
{
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (!f)
		return 0;
	if (!fgets(mode, sizeof mode, f))
		mode[0] = 0;
	fclose(f);
	return strstr(mode, "[always]") || strstr(mode, "[madvise]");
}

static void test_huge_when_kernel_allows(void **state)
{
	struct iobuf b;
	int huge;

	if (!thp_possible())
		skip();
	assert_int_equal(iobuf_alloc(&b, (size_t)4 << 20), 0);
	memset(b.p, 1, b.len);
	huge = iobuf_huge(&b);
	iobuf_free(&b);
	assert_int_equal(huge, 1);
}

static void test_small_pages_reported(void **state)
{
	/* The same checker on memory that may not use huge pages. */
	struct iobuf b = { 0 };
	size_t len = (size_t)4 << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	if (madvise(m, len, MADV_NOHUGEPAGE) != 0) {
		munmap(m, len);
		skip();		/* no THP in this kernel: nothing to tell apart */
	}
	memset(m, 1, len);
	b.p = m;
	b.len = b.maplen = len;
	assert_int_equal(iobuf_huge(&b), 0);
	munmap(m, len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_aligned_and_rounded),
		cmocka_unit_test(test_alloc_zero_refused),
		cmocka_unit_test(test_huge_when_kernel_allows),
		cmocka_unit_test(test_small_pages_reported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
