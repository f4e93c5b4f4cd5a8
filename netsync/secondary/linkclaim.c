/*
 * linkclaim — which inodes of this store the current batch's CREATEs wrote
 * and the names each was written or linked under (linkclaim.h). Serve's
 * loop thread (the receiver's); the receiver clears it at a batch's end,
 * on a lost connection and on a RENAME, which moves names under it.
 */
#include "netsync/secondary/linkclaim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "netsync/wire/proto.h"

static void linkclaim_key(char *buf, size_t n, const struct stat *st, const char *path)
{
	if (path)
		snprintf(buf, n, "%llx:%llx:%s", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino, path);
	else
		snprintf(buf, n, "%llx:%llx", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino);
}

int linkclaim_note(struct linkclaim *lc, const struct stat *st, const char *path)
{
	char key[PROTO_PATH_MAX + 64];

	if (S_ISDIR(st->st_mode))
		return 0;
	linkclaim_key(key, sizeof(key), st, NULL);
	if (pathset_add(&lc->keys, key, 0) < 0)
		return -ENOMEM;
	linkclaim_key(key, sizeof(key), st, path);
	return pathset_add(&lc->keys, key, 0) < 0 ? -ENOMEM : 0;
}

bool linkclaim_other(const struct linkclaim *lc, const struct stat *st, const char *path)
{
	char key[PROTO_PATH_MAX + 64];

	linkclaim_key(key, sizeof(key), st, NULL);
	if (!pathset_find(&lc->keys, key))
		return false;
	linkclaim_key(key, sizeof(key), st, path);
	return !pathset_find(&lc->keys, key);
}

bool linkclaim_other_at(const struct linkclaim *lc, int dirfd, const char *name,
			const char *path)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       linkclaim_other(lc, &st, path);
}

void linkclaim_clear(struct linkclaim *lc)
{
	pathset_clear(&lc->keys);
}
