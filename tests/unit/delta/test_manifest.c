/* Unit tests for netsync/delta/manifest: tree order keeps a directory's
 * descendants together, lookups find what was added, and the file
 * round-trips; a damaged or missing file reads as unknown. */
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
#include <unistd.h>
#include <cmocka.h>

#include "netsync/delta/manifest.h"

static void test_tree_order(void **state)
{
	static const struct { const char *a, *b; int sign; } cases[] = {
		{ "", "a", -1 },
		{ "a", "a/x", -1 },
		{ "a/x", "a-b", -1 },	/* '/' sorts below '-' */
		{ "a-b", "a/x", 1 },
		{ "a/x", "a", 1 },
		{ "a/x", "a/x", 0 },
		{ "a/b/c", "a/bc", -1 },
		{ "b", "a/z", 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int c = manifest_path_cmp(cases[i].a, cases[i].b);

		assert_int_equal(c > 0 ? 1 : c < 0 ? -1 : 0, cases[i].sign);
	}
}

static void add(struct manifest *m, const char *path, uint64_t ino, uint32_t mode)
{
	struct manifest_entry e = { .path = (char *)path, .ino = ino, .size = ino * 10,
				    .mtime_ns = (int64_t)ino * 1000 + 7,
				    .ctime_ns = -(int64_t)ino, .mode = mode, .nlink = 1 };

	assert_int_equal(manifest_add(m, &e), 0);
}

static void test_roundtrip(void **state)
{
	char dir[] = "/tmp/twinfs-manifest-XXXXXX", p[256];
	struct manifest m = { 0 }, r;
	const struct manifest_entry *e;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(manifest_read(dir, &r), -ENOENT);
	m.root_dev = 42;
	m.root_ino = 43;
	add(&m, "a-b", 3, S_IFREG | 0644);
	add(&m, "a/x", 2, S_IFREG | 0600);
	add(&m, "a", 1, S_IFDIR | 0755);
	add(&m, "", 9, S_IFDIR | 0700);
	manifest_sort(&m);
	assert_string_equal(m.e[0].path, "");
	assert_string_equal(m.e[1].path, "a");
	assert_string_equal(m.e[2].path, "a/x");
	assert_string_equal(m.e[3].path, "a-b");
	assert_int_equal(manifest_write(dir, &m), 0);
	assert_int_equal(manifest_read(dir, &r), 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.root_dev, 42);
	assert_int_equal(r.root_ino, 43);
	e = manifest_find(&r, "a/x");
	assert_non_null(e);
	assert_int_equal(e->ino, 2);
	assert_int_equal(e->size, 20);
	assert_int_equal(e->mtime_ns, 2007);
	assert_int_equal(e->ctime_ns, -2);
	assert_int_equal(e->mode, S_IFREG | 0600);
	assert_null(manifest_find(&r, "a/y"));
	assert_non_null(manifest_find(&r, ""));
	manifest_free(&r);

	/* One flipped byte: unknown, never a wrong answer. */
	snprintf(p, sizeof(p), "%s/manifest", dir);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "Z", 1, 40), 1);
	close(fd);
	assert_int_equal(manifest_read(dir, &r), -EBADMSG);
	/* Cut short: the same. */
	assert_int_equal(truncate(p, 20), 0);
	assert_int_equal(manifest_read(dir, &r), -EBADMSG);
	assert_int_equal(manifest_remove(dir), 0);
	assert_int_equal(manifest_read(dir, &r), -ENOENT);
	assert_int_equal(manifest_remove(dir), 0);
	manifest_free(&m);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_order),
		cmocka_unit_test(test_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
