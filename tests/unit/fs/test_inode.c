/* Unit tests for fs/inode (the table of store inodes: references, the
 * root, growth past the initial buckets, the gone callback) and
 * fs/record's store-relative paths. Real files in a temp directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/fs_internal.h"
#include "fs/inode.h"
#include "fs/record.h"

static char tmpdir[256];

static int open_path(const char *rel, struct stat *st)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, st), 0);
	return fd;
}

static int gone_count;
static void count_gone(void *arg, struct inode *i)
{
	(void)arg;
	(void)i;
	gone_count++;
}

static int setup(void **state)
{
	char p[PATH_MAX + 16];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/twinfs-inode.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(p, sizeof(p), "%s/f", tmpdir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof(p), "%s/d", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/d/g", tmpdir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_same_inode_same_entry(void **state)
{
	struct inode_table *t;
	struct stat st;
	struct inode *a, *b;
	int err = 0, root = open(tmpdir, O_PATH | O_DIRECTORY);

	assert_int_equal(inode_table_new(root, &t), 0);
	inode_set_gone_fn(t, count_gone, NULL);
	gone_count = 0;
	a = inode_ref(t, open_path("f", &st), &st, NULL, NULL, &err);
	b = inode_ref(t, open_path("f", &st), &st, NULL, NULL, &err);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_int_equal(a->nlookup, 2);
	assert_int_equal(inode_count(t), 1);
	assert_ptr_equal(inode_get(t, inode_id(t, a)), a);
	inode_unref(t, a, 1);
	assert_int_equal(gone_count, 0);
	inode_unref(t, a, 1);
	assert_int_equal(gone_count, 1);
	assert_int_equal(inode_count(t), 0);
	/* the root is FUSE_ROOT_ID and never goes away */
	assert_int_equal(inode_id(t, inode_root(t)), FUSE_ROOT_ID);
	b = inode_ref(t, open_path(".", &st), &st, NULL, NULL, &err);
	assert_ptr_equal(b, inode_root(t));
	inode_unref(t, b, 1000);
	assert_ptr_equal(inode_get(t, FUSE_ROOT_ID), inode_root(t));
	assert_int_equal(gone_count, 1);
	inode_table_free(t);
}

static void test_growth(void **state)
{
	/* past the 4096 initial buckets; every entry holds an fd */
	struct rlimit rl;
	int N = 6000;
	struct inode_table *t;
	struct inode **v = calloc(N, sizeof(*v));
	struct stat st;
	int err = 0, root = open(tmpdir, O_PATH | O_DIRECTORY);
	char name[32], p[PATH_MAX + 40];

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)N + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)N + 64)
			skip();
	}
	assert_int_equal(inode_table_new(root, &t), 0);
	for (int k = 0; k < N; k++) {
		snprintf(name, sizeof(name), "n%05d", k);
		snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
		close(open(p, O_CREAT | O_WRONLY, 0644));
		v[k] = inode_ref(t, open_path(name, &st), &st, NULL, NULL, &err);
		assert_non_null(v[k]);
	}
	assert_int_equal(inode_count(t), N);
	/* every entry is still found after the table grew */
	for (int k = 0; k < N; k += 97) {
		snprintf(name, sizeof(name), "n%05d", k);
		assert_ptr_equal(inode_ref(t, open_path(name, &st), &st, NULL, NULL, &err), v[k]);
		inode_unref(t, v[k], 1);
	}
	for (int k = 0; k < N; k++)
		inode_unref(t, v[k], 1);
	assert_int_equal(inode_count(t), 0);
	inode_table_free(t);
	free(v);
}

static void test_record_path(void **state)
{
	struct fs fs = { 0 };
	struct inode_table *t;
	struct stat st;
	struct inode *d;
	char buf[PATH_MAX];
	int err = 0, root = open(tmpdir, O_PATH | O_DIRECTORY);

	fs.store = realpath(tmpdir, NULL);
	fs.store_len = strlen(fs.store);
	assert_int_equal(inode_table_new(root, &t), 0);
	fs.itab = t;
	assert_int_equal(record_path(&fs, inode_root(t), NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(record_path(&fs, inode_root(t), "f", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "f");
	d = inode_ref(t, open_path("d", &st), &st, NULL, NULL, &err);
	assert_int_equal(record_path(&fs, d, "g", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "d/g");
	assert_int_equal(record_path(&fs, d, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "d");
	assert_int_equal(record_path(&fs, d, "g", buf, 3), -ENAMETOOLONG);
	/* A renamed directory reports its new path once the rename moved the
	 * generation on (record_end does that for every rename, unlink and
	 * rmdir); until then the path cached on the inode is used. */
	snprintf(buf, sizeof(buf), "%s/d", tmpdir);
	{
		char to[PATH_MAX + 8];

		snprintf(to, sizeof(to), "%s/e", tmpdir);
		assert_int_equal(rename(buf, to), 0);
	}
	assert_int_equal(record_path(&fs, d, "g", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "d/g");
	fs.ns_gen++;
	assert_int_equal(record_path(&fs, d, "g", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "e/g");
	assert_int_equal(record_path(&fs, d, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "e");
	inode_unref(t, d, 1);
	inode_table_free(t);
	free(fs.store);
}

/* Eviction picks the least recently looked-up non-directories, by the
 * name they were last looked up (or renamed) to, and only while their
 * parent is in the table. */
static void test_victims(void **state)
{
	struct inode_table *t;
	struct inode_victim v[8];
	struct stat st;
	struct inode *f, *d, *g;
	int err = 0, root = open(tmpdir, O_PATH | O_DIRECTORY);
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/vf", tmpdir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof(p), "%s/vd", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/vd/vg", tmpdir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	assert_int_equal(inode_table_new(root, &t), 0);
	f = inode_ref(t, open_path("vf", &st), &st, inode_root(t), "vf", &err);
	d = inode_ref(t, open_path("vd", &st), &st, inode_root(t), "vd", &err);
	g = inode_ref(t, open_path("vd/vg", &st), &st, d, "vg", &err);
	assert_non_null(g);
	/* f is the oldest; the directory d is never picked */
	assert_int_equal(inode_pick_victims(t, v, 1), 1);
	assert_int_equal(v[0].parent, FUSE_ROOT_ID);
	assert_string_equal(v[0].name, "vf");
	/* picking made f the most recent: g comes next */
	assert_int_equal(inode_pick_victims(t, v, 1), 1);
	assert_int_equal(v[0].parent, inode_id(t, d));
	assert_string_equal(v[0].name, "vg");
	/* a lookup makes g the most recent again */
	inode_ref(t, open_path("vd/vg", &st), &st, d, "vg", &err);
	assert_int_equal(inode_pick_victims(t, v, 8), 2);
	assert_string_equal(v[0].name, "vf");
	assert_string_equal(v[1].name, "vg");
	/* a rename is followed */
	close(open_path("vf", &st));
	inode_renamed(t, &st, inode_root(t), "moved");
	assert_int_equal(inode_pick_victims(t, v, 1), 1);
	assert_int_equal(v[0].parent, FUSE_ROOT_ID);
	assert_string_equal(v[0].name, "moved");
	/* with its parent gone from the table, g cannot be named */
	inode_unref(t, g, 2);
	inode_unref(t, d, 1);
	assert_int_equal(inode_pick_victims(t, v, 8), 1);
	assert_string_equal(v[0].name, "moved");
	inode_unref(t, f, 1);
	assert_int_equal(inode_pick_victims(t, v, 8), 0);
	inode_table_free(t);
}

/* Counts the process's open fds. */
static int count_fds(void)
{
	char p[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (access(p, F_OK) == 0)
			n++;
	}
	return n;
}

/* The fd cap: entries past it are detached and reopened on use, by name
 * from the nearest attached ancestor, or by handle once the name is gone;
 * open files and borrowed fds are never closed under their users. */
static void test_fd_cap(void **state)
{
	struct inode_table *t;
	struct inode *v[6], *d, *g;
	struct stat st, st2;
	char name[16], p[PATH_MAX + 16], q[PATH_MAX + 16];
	int err = 0, fd, fd2, base, root = open(tmpdir, O_PATH | O_DIRECTORY);

	snprintf(p, sizeof(p), "%s/cd", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/cd/cg", tmpdir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	assert_int_equal(inode_table_new(root, &t), 0);
	inode_set_fd_cap(t, 3);
	base = count_fds();
	d = inode_ref(t, open_path("cd", &st), &st, inode_root(t), "cd", &err);
	g = inode_ref(t, open_path("cd/cg", &st), &st, d, "cg", &err);
	for (int k = 0; k < 6; k++) {
		snprintf(name, sizeof(name), "cap%d", k);
		snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
		close(open(p, O_CREAT | O_WRONLY, 0644));
		v[k] = inode_ref(t, open_path(name, &st), &st, inode_root(t), name, &err);
		assert_non_null(v[k]);
	}
	assert_int_equal(inode_count(t), 8);
	assert_int_equal(inode_attached(t), 3);
	assert_int_equal(count_fds(), base + 3);
	/* d and g are the coldest: both detached; g reopens through d */
	fd = inode_fd_get(t, g);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st2), 0);
	assert_int_equal(fstat(open_path("cd/cg", &st), &st2) == 0 &&
			 st.st_ino == st2.st_ino, 1);
	assert_int_equal(inode_attached(t), 3);	/* another one made room */
	/* a borrowed fd is not closed under its user */
	for (int k = 0; k < 6; k++) {
		fd2 = inode_fd_get(t, v[k]);
		assert_true(fd2 >= 0);
		inode_fd_put(t, v[k], fd2);
	}
	assert_int_equal(fcntl(fd, F_GETFD) >= 0, 1);
	inode_fd_put(t, g, fd);
	assert_true(count_fds() <= base + 3 + 2);	/* + the test's own */
	/* renamed in the store: the name is followed (inode_renamed) */
	snprintf(p, sizeof(p), "%s/cap0", tmpdir);
	snprintf(q, sizeof(q), "%s/cap0.moved", tmpdir);
	assert_int_equal(rename(p, q), 0);
	close(open_path("cap0.moved", &st));
	inode_renamed(t, &st, inode_root(t), "cap0.moved");
	fd = inode_fd_get(t, v[0]);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);
	inode_fd_put(t, v[0], fd);
	/* the name the table knows was removed, another link remains: the
	 * handle reaches it (root), or the entry is unreachable */
	for (int k = 1; k < 6; k++)
		inode_fd_put(t, v[k], inode_fd_get(t, v[k]));
	snprintf(p, sizeof(p), "%s/cap1", tmpdir);
	snprintf(q, sizeof(q), "%s/cap1.link", tmpdir);
	assert_int_equal(link(p, q), 0);
	assert_int_equal(unlink(p), 0);
	for (int k = 2; k < 6; k++)	/* push v[1] out of the cache */
		inode_fd_put(t, v[k], inode_fd_get(t, v[k]));
	fd = inode_fd_get(t, v[1]);
	if (geteuid() == 0) {
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &st2), 0);
		assert_int_equal(st2.st_ino, v[1]->ino);
	} else {
		assert_int_equal(fd, -ENOENT);
	}
	inode_fd_put(t, v[1], fd);
	/* an open file keeps its entry's fd, whatever else is borrowed */
	inode_open_pin(t, v[2], -1);
	fd = inode_fd_get(t, v[2]);
	inode_fd_put(t, v[2], fd);
	for (int k = 3; k < 6; k++)
		inode_fd_put(t, v[k], inode_fd_get(t, v[k]));
	inode_fd_put(t, d, inode_fd_get(t, d));
	assert_true(v[2]->fd >= 0);
	inode_open_unpin(t, v[2]);
	inode_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_inode_same_entry),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_record_path),
		cmocka_unit_test(test_victims),
		cmocka_unit_test(test_fd_cap),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
