/*
 * tree — rm -rf and mkdir -p for the benchmark's own folders (the dataset
 * it generated, the copies it made on a target). Main thread only; never
 * follows a symlink out of the tree it was given.
 */
#include "bench/tree.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

static int tree_remove_err;

static int tree_remove_one(const char *path, const struct stat *st, int flag,
			   struct FTW *ftw)
{
	int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);

	if (rc < 0 && errno != ENOENT && !tree_remove_err) {
		tree_remove_err = -errno;
		log_error("cannot remove benchmark file", "path=\"%s\" err=\"%s\"",
			  path, strerror(errno));
	}
	return 0;
}

int tree_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	tree_remove_err = 0;
	if (nftw(path, tree_remove_one, 32, FTW_DEPTH | FTW_PHYS) < 0 &&
	    !tree_remove_err)
		tree_remove_err = -errno;
	return tree_remove_err;
}

int tree_mkdirs(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int tree_same_fs(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return -errno;
	return sa.st_dev == sb.st_dev;
}
