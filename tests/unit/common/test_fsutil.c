/*
 * Unit tests for common/fsutil against a real mkdtemp directory: syncing a
 * directory by path and by fd succeeds, and a missing path, a regular
 * file (not a directory) and a bad fd fail with their errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/fsutil.h"

static void test_sync_dir(void **state)
{
	char root[] = "/tmp/twinfs-fsutil.XXXXXX", file[64], missing[64];
	int fd;

	assert_non_null(mkdtemp(root));
	snprintf(file, sizeof file, "%s/f", root);
	snprintf(missing, sizeof missing, "%s/missing", root);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(fsutil_sync_dir(root), 0);
	assert_int_equal(fsutil_sync_dir(missing), -ENOENT);
	assert_int_equal(fsutil_sync_dir(file), -ENOTDIR);

	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fsutil_sync_dirfd(fd), 0);
	close(fd);
	assert_int_equal(fsutil_sync_dirfd(fd), -EBADF);
	/* an O_PATH fd cannot be synced */
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fsutil_sync_dirfd(fd), -EBADF);
	close(fd);

	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
