/*
 * tree — recursive folder helpers the benchmarks share: remove a tree they
 * created, create a folder and its parents. Main thread only; they touch
 * only the paths they are given.
 */
#ifndef TWINFS_BENCH_TREE_H
#define TWINFS_BENCH_TREE_H

/* rm -rf path (does not follow symlinks). Returns 0, or the first -errno
 * (logged with the path that failed); missing path is 0. */
int tree_remove(const char *path);
/* mkdir -p path with mode; an existing folder is fine. 0 or -errno. */
int tree_mkdirs(const char *path, unsigned mode);
/* 1 if a and b are on the same filesystem (st_dev), 0 if not, -errno. */
int tree_same_fs(const char *a, const char *b);

#endif
