/* Unit tests for common/size: parsing and formatting of byte sizes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/size.h"

static void test_parse_table(void **state)
{
	static const struct { const char *in; int rc; uint64_t out; } cases[] = {
		{ "0", 0, 0 },
		{ "512", 0, 512 },
		{ "4k", 0, 4096 },
		{ "4K", 0, 4096 },
		{ "64KiB", 0, 65536 },
		{ "100M", 0, 100ull << 20 },
		{ "1G", 0, 1ull << 30 },
		{ "7.71G", 0, 8278549463ull },
		{ "1.94GB", 0, 1940000000ull },
		{ "1kB", 0, 1000 },
		{ "2 MiB", 0, 2ull << 20 },
		{ "1T", 0, 1ull << 40 },
		{ "12B", 0, 12 },
		{ "", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
		{ "-5", -EINVAL, 0 },
		{ "5X", -EINVAL, 0 },
		{ "5KX", -EINVAL, 0 },
		{ "99999999999P", -ERANGE, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		int rc = size_parse(cases[i].in, &v);
		if (rc != cases[i].rc)
			fail_msg("size_parse(\"%s\") = %d, want %d", cases[i].in, rc, cases[i].rc);
		if (rc == 0 && v != cases[i].out)
			fail_msg("size_parse(\"%s\") -> %llu, want %llu", cases[i].in,
				 (unsigned long long)v, (unsigned long long)cases[i].out);
	}
}

static void test_format(void **state)
{
	char b[32];

	assert_string_equal(size_format_iec(0, b, sizeof b), "0 B");
	assert_string_equal(size_format_iec(1023, b, sizeof b), "1023 B");
	assert_string_equal(size_format_iec(1024, b, sizeof b), "1.00 KiB");
	assert_string_equal(size_format_iec(1ull << 30, b, sizeof b), "1.00 GiB");
	assert_string_equal(size_format_si(1ull << 30, b, sizeof b), "1.07 GB");
	assert_string_equal(size_format_iec(150ull << 20, b, sizeof b), "150 MiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
