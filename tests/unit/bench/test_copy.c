/* Unit tests for bench/copy's copy_file: bytes, mode and mtime are kept
 * (like cp -p / xcopy), an existing destination is truncated, errors are
 * -errno. */
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

#include "bench/copy.h"
#include "bench/tree.h"

static void test_copy_keeps_bytes_mode_mtime(void **state)
{
	char dir[] = "/tmp/twinfs-test-copy.XXXXXX", src[256], dst[256];
	static unsigned char data[300001], back[300001];
	struct timespec times[2] = { { 1000000000, 123456789 }, { 1200000000, 987654321 } };
	unsigned char buf[4096];
	struct stat st;
	uint64_t done = 0;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(dst, sizeof dst, "%s/dst", dir);
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 131 + 7);
	fd = open(src, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof data), sizeof data);
	assert_int_equal(fchmod(fd, 0751), 0);
	assert_int_equal(futimens(fd, times), 0);
	close(fd);
	/* A longer existing destination must end up the source's size. */
	fd = open(dst, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, data, sizeof data), sizeof data);
	assert_int_equal(write(fd, data, 100), 100);
	close(fd);

	/* A small buffer: many read/write rounds. */
	assert_int_equal(copy_file(src, dst, buf, sizeof buf, 1, NULL, &done), sizeof data);
	assert_int_equal(done, sizeof data);
	assert_int_equal(stat(dst, &st), 0);
	assert_int_equal(st.st_size, sizeof data);
	assert_int_equal(st.st_mode & 07777, 0751);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(st.st_mtim.tv_nsec, 987654321);
	fd = open(dst, O_RDONLY);
	assert_int_equal(read(fd, back, sizeof back), sizeof data);
	close(fd);
	assert_memory_equal(data, back, sizeof data);

	/* Missing source, missing destination folder: -errno. */
	snprintf(src, sizeof src, "%s/none", dir);
	assert_int_equal(copy_file(src, dst, buf, sizeof buf, 0, NULL, NULL), -ENOENT);
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(dst, sizeof dst, "%s/no/dst", dir);
	assert_int_equal(copy_file(src, dst, buf, sizeof buf, 0, NULL, NULL), -ENOENT);
	assert_int_equal(tree_remove(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_keeps_bytes_mode_mtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
