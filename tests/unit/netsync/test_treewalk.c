/* Unit tests for netsync/treewalk: the baseline's subtree walk yields
 * parents before children and each directory again after its entries,
 * does not follow symlinks, names the first path of a hard-linked inode,
 * walks a subtree or a single file, and reports a missing root. */
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

#include "netsync/primary/treewalk.h"

#define MAXI 64

struct seen {
	char line[MAXI][128];
	int n;
};

static char root_dir[] = "/tmp/twinfs-treewalk-XXXXXX";
static int root_fd = -1;

static void mk(const char *rel, int kind)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root_dir, rel);
	if (kind == 'd') {
		assert_int_equal(mkdir(p, 0755), 0);
	} else {
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
}

static int setup(void **state)
{
	char a[256], b[256];

	(void)state;
	assert_non_null(mkdtemp(root_dir));
	mk("a", 'd');
	mk("a/b", 'd');
	mk("a/b/f", 'f');
	mk("a/h1", 'f');
	mk("z", 'd');
	snprintf(a, sizeof(a), "%s/a/h1", root_dir);
	snprintf(b, sizeof(b), "%s/z/h2", root_dir);
	assert_int_equal(link(a, b), 0);
	snprintf(b, sizeof(b), "%s/sym", root_dir);
	assert_int_equal(symlink("a", b), 0);
	root_fd = open(root_dir, O_RDONLY | O_DIRECTORY);
	assert_true(root_fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	close(root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void walk(const char *root, struct seen *s)
{
	struct treewalk *w;
	struct treewalk_item it;
	int rc;

	s->n = 0;
	assert_int_equal(treewalk_open(root_fd, root, &w), 0);
	while ((rc = treewalk_next(w, &it)) == 1) {
		assert_true(s->n < MAXI);
		snprintf(s->line[s->n++], sizeof(s->line[0]), "%c %s%s%s",
			 it.leave ? 'L' : S_ISDIR(it.st.st_mode) ? 'D' :
			 S_ISLNK(it.st.st_mode) ? 'S' : 'F', it.path,
			 it.link_to ? " -> " : "", it.link_to ? it.link_to : "");
	}
	assert_int_equal(rc, 0);
	treewalk_free(w);
}

static int find(const struct seen *s, const char *line)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->line[i], line) == 0)
			return i;
	return -1;
}

static void test_whole_store(void **state)
{
	struct seen s;

	(void)state;
	walk("", &s);
	assert_int_equal(find(&s, "D "), 0);
	assert_int_equal(find(&s, "L "), s.n - 1);
	assert_true(find(&s, "D a") < find(&s, "D a/b"));
	assert_true(find(&s, "D a/b") < find(&s, "F a/b/f"));
	assert_true(find(&s, "F a/b/f") < find(&s, "L a/b"));
	assert_true(find(&s, "L a/b") < find(&s, "L a"));
	assert_true(find(&s, "S sym") >= 0);
	/* one of the two names is first, the other names it */
	assert_true((find(&s, "F a/h1") >= 0 && find(&s, "F z/h2 -> a/h1") >= 0) ||
		    (find(&s, "F z/h2") >= 0 && find(&s, "F a/h1 -> z/h2") >= 0));
	/* the symlink to a/ is not followed; every entry once */
	assert_int_equal(s.n, 12);
}

static void test_subtree_and_file(void **state)
{
	struct treewalk *w;
	struct seen s;

	(void)state;
	walk("a/b", &s);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.line[0], "D a/b");
	assert_string_equal(s.line[1], "F a/b/f");
	assert_string_equal(s.line[2], "L a/b");
	walk("a/b/f", &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.line[0], "F a/b/f");
	assert_int_equal(treewalk_open(root_fd, "nope", &w), -ENOENT);
	/* a symlink on the way is not followed */
	assert_true(treewalk_open(root_fd, "sym/b", &w) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_store),
		cmocka_unit_test(test_subtree_and_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
