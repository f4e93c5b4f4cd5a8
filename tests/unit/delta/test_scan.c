/* Unit tests for netsync/delta/scan: a stat walk of a real directory, then
 * changes made to it behind twinfs' back (a rewrite with the old mtime
 * put back, a removal, a rename, a chmod, new files and folders, a new
 * hard link), compared against the walk before: each change is found, in
 * tree order, with nothing under a path scanned whole, and an unchanged
 * tree yields nothing. */
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

#include "netsync/delta/scan.h"

static char root_dir[] = "/tmp/twinfs-scan-XXXXXX";
static int root_fd = -1;

static void mk(const char *rel, const char *content)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root_dir, rel);
	if (!content) {
		assert_int_equal(mkdir(p, 0755), 0);
		return;
	}
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root_dir))
		return -1;
	root_fd = open(root_dir, O_RDONLY | O_DIRECTORY);
	return root_fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	close(root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void expect(const struct scan_result *r, const char *const *want, size_t n)
{
	for (size_t i = 0; i < r->n; i++)
		printf("# change %zu: %s /%s\n", i, r->c[i].what == SCAN_NAMES ? "names" :
		       "whole", r->c[i].path);
	assert_int_equal(r->n, n);
	for (size_t i = 0; i < n; i++) {
		char got[300];

		snprintf(got, sizeof(got), "%s %s", r->c[i].what == SCAN_NAMES ? "names" :
			 "whole", r->c[i].path);
		assert_string_equal(got, want[i]);
	}
}

/* ctime has the kernel's clock granularity: make sure it moves. */
static void tick(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void test_changes(void **state)
{
	static const char *const want[] = {
		"names ", "names a", "whole a/f1", "whole a/new", "whole b2",
		"whole c/d/h", "whole n",
	};
	struct manifest before, after, again;
	struct scan_result r;
	struct stat st;
	struct timespec ts[2];
	char p[256];

	(void)state;
	mk("a", NULL);
	mk("a/f1", "one\n");
	mk("a/f2", "two\n");
	mk("a/f3", "three\n");
	mk("b", NULL);
	mk("b/g1", "g\n");
	mk("c", NULL);
	mk("c/d", NULL);
	mk("c/d/h", "h\n");
	assert_int_equal(scan_store(root_fd, &before), 0);
	assert_int_equal(before.n, 10);
	assert_string_equal(before.e[0].path, "");

	/* Unchanged: nothing. */
	assert_int_equal(scan_store(root_fd, &again), 0);
	assert_int_equal(scan_diff(&before, &again, &r), 0);
	assert_int_equal(r.n, 0);
	scan_result_free(&r);
	manifest_free(&again);

	tick();
	snprintf(p, sizeof(p), "%s/a/f1", root_dir);
	assert_int_equal(stat(p, &st), 0);
	mk("a/f1", "ONE\n");	/* same size, old mtime back */
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
	snprintf(p, sizeof(p), "%s/a/f2", root_dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(renameat(root_fd, "b", root_fd, "b2"), 0);
	assert_int_equal(fchmodat(root_fd, "c/d/h", 0600, 0), 0);
	mk("a/new", "new\n");
	mk("n", NULL);
	mk("n/m", NULL);
	mk("n/m/k", "k\n");
	assert_int_equal(scan_store(root_fd, &after), 0);
	assert_int_equal(scan_diff(&before, &after, &r), 0);
	expect(&r, want, sizeof(want) / sizeof(want[0]));
	scan_result_free(&r);
	manifest_free(&before);

	/* A new name of an existing file: the folder holding both names is
	 * scanned whole, so that its walk links them again. */
	tick();
	assert_int_equal(linkat(root_fd, "a/f3", root_fd, "a/f3-link", 0), 0);
	assert_int_equal(scan_store(root_fd, &again), 0);
	assert_int_equal(scan_diff(&after, &again, &r), 0);
	{
		static const char *const want_link[] = { "whole a" };

		expect(&r, want_link, 1);
	}
	scan_result_free(&r);
	manifest_free(&after);
	manifest_free(&again);
}

/* A removed folder with content: one change, the folder itself (the
 * sender prunes it from its parent); nothing for what was inside. */
static void test_removed_tree(void **state)
{
	static const char *const want[] = { "names " };
	struct manifest before, after;
	struct scan_result r;
	char cmd[300];

	(void)state;
	mk("gone", NULL);
	mk("gone/x", "x\n");
	mk("gone/y", NULL);
	mk("gone/y/z", "z\n");
	assert_int_equal(scan_store(root_fd, &before), 0);
	tick();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/gone'", root_dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(scan_store(root_fd, &after), 0);
	assert_int_equal(scan_diff(&before, &after, &r), 0);
	/* the root's names changed: its prune removes "gone" on the peer */
	expect(&r, want, 1);
	scan_result_free(&r);
	manifest_free(&before);
	manifest_free(&after);
}

/* New hard links of a FIFO and a symlink (every non-directory can have
 * them): the folder holding all their names is scanned whole, so that its
 * walk links them again; scanned one name at a time they became separate
 * inodes on the peer. */
static void test_special_links(void **state)
{
	static const char *const want[] = { "whole sp" };
	struct manifest before, after;
	struct scan_result r;
	char p[256], q[256];

	(void)state;
	mk("sp", NULL);
	mk("sp/x", NULL);
	mk("sp/y", NULL);
	snprintf(p, sizeof(p), "%s/sp/x/fifo", root_dir);
	assert_int_equal(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/sp/x/sl", root_dir);
	assert_int_equal(symlink("fifo", p), 0);
	assert_int_equal(scan_store(root_fd, &before), 0);
	tick();
	snprintf(p, sizeof(p), "%s/sp/x/fifo", root_dir);
	snprintf(q, sizeof(q), "%s/sp/y/fifo2", root_dir);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/sp/x/sl", root_dir);
	snprintf(q, sizeof(q), "%s/sp/y/sl2", root_dir);
	assert_int_equal(linkat(AT_FDCWD, p, AT_FDCWD, q, 0), 0);
	assert_int_equal(scan_store(root_fd, &after), 0);
	assert_int_equal(scan_diff(&before, &after, &r), 0);
	expect(&r, want, 1);
	scan_result_free(&r);
	manifest_free(&before);
	manifest_free(&after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_changes),
		cmocka_unit_test(test_removed_tree),
		cmocka_unit_test(test_special_links),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
