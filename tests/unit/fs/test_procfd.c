/* Unit tests for fs/procfd: an inode held by an O_PATH fd reached through
 * one /proc/self/fd name. Real files in a temp directory: open and link
 * through procfd_at, the four xattr calls on a file (as the path calls
 * would do them), and on a symlink, which they name itself, not its
 * target (user.* refused as on the store's own filesystem). */
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
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/procfd.h"

static char dir[256];

static void path_of(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", dir, name);
}

static int setup(void **state)
{
	char p[512];
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/twinfs-procfd.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	path_of(p, sizeof(p), "f");
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, "data", 4) != 4)
		return -1;
	close(fd);
	return symlink("f", (path_of(p, sizeof(p), "l"), p));
}

static int teardown(void **state)
{
	char p[512];

	(void)state;
	path_of(p, sizeof(p), "l");
	unlink(p);
	path_of(p, sizeof(p), "f");
	unlink(p);
	path_of(p, sizeof(p), "f2");
	unlink(p);
	rmdir(dir);
	return 0;
}

static int opath(const char *name)
{
	char p[512];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void test_procfd_open_link(void **state)
{
	char name[PROCFD_NAME_MAX], buf[8] = { 0 }, p[512];
	int o = opath("f"), dfd, fd;
	struct stat a, b;

	(void)state;
	dfd = procfd_at(o, name);
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "data");
	close(fd);
	path_of(p, sizeof(p), "f2");
	assert_int_equal(linkat(procfd_at(o, name), name, AT_FDCWD, p,
				AT_SYMLINK_FOLLOW), 0);
	assert_int_equal(fstatat(o, "", &a, AT_EMPTY_PATH), 0);
	assert_int_equal(stat(p, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	procfd_path(o, name);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", o);
	assert_string_equal(name, p);
	close(o);
}

static void test_procfd_xattrs(void **state)
{
	char v[32], list[256], p[512];
	int o = opath("f");
	ssize_t n;

	(void)state;
	if (procfd_setxattr(o, "user.twinfs", "one", 3, XATTR_CREATE) < 0 &&
	    errno == EOPNOTSUPP) {
		close(o);
		skip();	/* no user xattrs on /tmp's filesystem */
	}
	assert_int_equal(procfd_setxattr(o, "user.twinfs", "two", 3, XATTR_CREATE), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(procfd_setxattr(o, "user.twinfs", "two", 3, XATTR_REPLACE), 0);
	n = procfd_getxattr(o, "user.twinfs", v, sizeof(v));
	assert_int_equal(n, 3);
	assert_memory_equal(v, "two", 3);
	assert_int_equal(procfd_getxattr(o, "user.twinfs", NULL, 0), 3);
	assert_int_equal(procfd_getxattr(o, "user.none", v, sizeof(v)), -1);
	assert_int_equal(errno, ENODATA);
	/* what the path call sees is what was set through the fd */
	path_of(p, sizeof(p), "f");
	assert_int_equal(getxattr(p, "user.twinfs", v, sizeof(v)), 3);
	n = procfd_listxattr(o, list, sizeof(list));
	assert_true(n > 0);
	assert_non_null(memmem(list, (size_t)n, "user.twinfs", 12));
	assert_int_equal(procfd_removexattr(o, "user.twinfs"), 0);
	assert_int_equal(procfd_getxattr(o, "user.twinfs", v, sizeof(v)), -1);
	assert_int_equal(errno, ENODATA);
	assert_int_equal(procfd_removexattr(o, "user.twinfs"), -1);
	assert_int_equal(errno, ENODATA);
	close(o);
}

static void test_procfd_symlink(void **state)
{
	char v[32], p[512];
	int o = opath("l");

	(void)state;
	/* The link itself, not its target: user.* is refused on a symlink. */
	assert_int_equal(procfd_setxattr(o, "user.twinfs", "x", 1, 0), -1);
	assert_true(errno == EPERM || errno == EOPNOTSUPP);
	path_of(p, sizeof(p), "f");
	assert_int_equal(getxattr(p, "user.twinfs", v, sizeof(v)), -1);
	close(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procfd_open_link),
		cmocka_unit_test(test_procfd_xattrs),
		cmocka_unit_test(test_procfd_symlink),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
