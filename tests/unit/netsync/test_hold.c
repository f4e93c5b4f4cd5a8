/* Unit tests for netsync/secondary/hold (which frames of a split brain's
 * stream the secondary holds back): held files hold their subtree, held
 * folders only themselves, destructive ops on a folder above a held path
 * are held, attribute changes are not, a symlink's target is no path,
 * a PRUNE above held paths keeps them, and the other names of a held
 * file are found in a real folder (hold_each_alias), also those of the
 * files in a folder held whole (hold_add_tree_inodes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netsync/secondary/hold.h"

static void make_hold(struct hold *h)
{
	hold_init(h);
	assert_int_equal(hold_add(h, "x", true), 0);	/* a file (or absent) here */
	assert_int_equal(hold_add(h, "d", false), 0);	/* a folder here */
	assert_int_equal(hold_add(h, "d/e/af", true), 0);
}

static void test_covers(void **state)
{
	struct hold h;

	(void)state;
	make_hold(&h);
	assert_true(hold_covers(&h, "x"));
	assert_true(hold_covers(&h, "x/below"));
	assert_false(hold_covers(&h, "xy"));
	assert_true(hold_covers(&h, "d"));
	assert_false(hold_covers(&h, "d/f"));	/* a held folder holds itself only */
	assert_false(hold_subtree(&h, "d"));
	assert_true(hold_subtree(&h, "d/e/af/g"));
	assert_true(hold_above(&h, "d/e"));
	assert_true(hold_above(&h, ""));
	assert_false(hold_above(&h, "d/e/af"));
	assert_false(hold_covers(&h, NULL));
	hold_clear(&h);
	assert_false(hold_covers(&h, "x"));
}

static void test_ops(void **state)
{
	struct journal_op op;
	const char *why;
	struct hold h;

	(void)state;
	make_hold(&h);
	op = (struct journal_op){ .type = JOP_RMDIR, .path = "d/e" };
	assert_true(hold_op(&h, &op, &why));
	assert_string_equal(why, "d/e");
	op = (struct journal_op){ .type = JOP_SETATTR, .path = "d/e", .attr_mask = JATTR_MTIME };
	assert_false(hold_op(&h, &op, &why));
	op.attr_mask |= JATTR_SIZE;	/* the primary has a file there */
	assert_true(hold_op(&h, &op, &why));
	op = (struct journal_op){ .type = JOP_SETXATTR, .path = "d/e", .xname = "user.a" };
	assert_false(hold_op(&h, &op, &why));
	op = (struct journal_op){ .type = JOP_CREATE, .path = "d/f" };
	assert_false(hold_op(&h, &op, &why));
	op = (struct journal_op){ .type = JOP_CREATE, .path = "d/e" };	/* over the folder */
	assert_true(hold_op(&h, &op, &why));
	op = (struct journal_op){ .type = JOP_RENAME, .path = "d/f", .path2 = "x" };
	assert_true(hold_op(&h, &op, &why));
	assert_string_equal(why, "x");
	op = (struct journal_op){ .type = JOP_LINK, .path = "x", .path2 = "z" };
	assert_true(hold_op(&h, &op, &why));
	assert_string_equal(why, "x");
	op = (struct journal_op){ .type = JOP_SYMLINK, .path = "s", .path2 = "x" };
	assert_false(hold_op(&h, &op, &why));
	op = (struct journal_op){ .type = JOP_UNLINK, .path = "d" };
	assert_true(hold_op(&h, &op, &why));
	hold_clear(&h);
}

/* The names of a PRUNE's frame, in order, joined by spaces. */
static void names(const struct proto_prune *m, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t off = 0; off < m->names_len; off += strlen(m->names + off) + 1)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", m->names + off);
}

static void test_prune_keep(void **state)
{
	static const char f[] = "f";
	struct proto_prune m = { .path = "d", .names = f, .names_len = sizeof(f) };
	char *buf, got[128];
	struct hold h;

	(void)state;
	make_hold(&h);
	assert_int_equal(hold_prune_keep(&h, &m, &buf), 0);
	assert_non_null(buf);
	names(&m, got, sizeof(got));
	assert_string_equal(got, "f e");
	free(buf);
	m = (struct proto_prune){ .path = "", .names = NULL, .names_len = 0 };
	assert_int_equal(hold_prune_keep(&h, &m, &buf), 0);
	names(&m, got, sizeof(got));
	/* pathset order: both names, in either order */
	assert_true(strcmp(got, "x d") == 0 || strcmp(got, "d x") == 0);
	free(buf);
	m = (struct proto_prune){ .path = "q", .names = f, .names_len = sizeof(f) };
	assert_int_equal(hold_prune_keep(&h, &m, &buf), 0);
	assert_null(buf);
	assert_int_equal(m.names_len, sizeof(f));
	hold_clear(&h);
}

static int collect(const char *path, void *arg)
{
	char *got = arg;

	strcat(got, path);
	strcat(got, ";");
	return 0;
}

/* Under a real folder: a held file with two other names (one deeper), a
 * held name of it skipped, another linked file not held ignored, and
 * nothing looked for past the inodes already searched (FROM). */
static void test_aliases(void **state)
{
	char top[] = "/tmp/twinfs-hold.XXXXXX", got[256] = "", cmd[300];
	struct hold h;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(top));
	fd = open(top, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(mkdirat(fd, "d", 0755), 0);
	assert_int_equal(mkdirat(fd, "d/e", 0755), 0);
	close(openat(fd, "a", O_CREAT | O_WRONLY, 0644));
	close(openat(fd, "o", O_CREAT | O_WRONLY, 0644));
	assert_int_equal(linkat(fd, "a", fd, "d/b", 0), 0);
	assert_int_equal(linkat(fd, "a", fd, "d/e/c", 0), 0);
	assert_int_equal(linkat(fd, "a", fd, "h", 0), 0);
	assert_int_equal(linkat(fd, "o", fd, "d/o2", 0), 0);

	hold_init(&h);
	assert_int_equal(hold_add(&h, "a", true), 0);
	assert_int_equal(hold_add_inode(&h, fd, "a"), 0);
	assert_int_equal(hold_add(&h, "h", true), 0);
	assert_int_equal(hold_add_inode(&h, fd, "h"), 0);	/* the same inode: once */
	assert_int_equal(h.n_inos, 1);
	assert_int_equal(hold_each_alias(&h, fd, 0, collect, got), 0);
	assert_non_null(strstr(got, "d/b;"));
	assert_non_null(strstr(got, "d/e/c;"));
	assert_null(strstr(got, "h;"));
	assert_null(strstr(got, "o"));
	assert_int_equal(strlen(got), strlen("d/b;d/e/c;"));
	got[0] = '\0';
	assert_int_equal(hold_each_alias(&h, fd, 1, collect, got), 0);
	assert_string_equal(got, "");
	hold_clear(&h);

	/* a folder held whole: its linked files' names outside it are found,
	 * the names inside it are covered by it */
	hold_init(&h);
	assert_int_equal(hold_add(&h, "d", true), 0);
	assert_int_equal(hold_add_tree_inodes(&h, fd, "d"), 0);
	assert_int_equal(h.n_inos, 2);	/* a's (d/b, d/e/c) and o's (d/o2) */
	assert_int_equal(hold_each_alias(&h, fd, 0, collect, got), 0);
	assert_non_null(strstr(got, "a;"));
	assert_non_null(strstr(got, "h;"));
	assert_non_null(strstr(got, "o;"));
	assert_null(strstr(got, "d/"));
	hold_clear(&h);
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_prune_keep),
		cmocka_unit_test(test_aliases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
