/*
 * pathset — a hash set of relative paths, each with a small value (the
 * journal keeps marked directories, needs-scan paths and recovered dirty
 * paths in these). Not thread-safe: the owner locks.
 */
#ifndef TWINFS_PATHSET_H
#define TWINFS_PATHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pathset_entry {
	struct pathset_entry *next;	/* bucket chain */
	uint64_t hash;
	uint64_t value;
	char path[];
};

struct pathset {
	struct pathset_entry **b;
	size_t nb, n;
};

void pathset_init(struct pathset *s);
void pathset_clear(struct pathset *s);	/* frees every entry and the table */
/* Returns the entry for path or NULL. */
struct pathset_entry *pathset_find(const struct pathset *s, const char *path);
/* Adds path (copying it) with value unless present. Returns 1 if added, 0
 * if it was already there (value unchanged), -ENOMEM. */
int pathset_add(struct pathset *s, const char *path, uint64_t value);
bool pathset_remove(struct pathset *s, const char *path);
/* True if path or one of its ancestor directories ("a" for "a/b/c", and
 * "" the root) is in the set. */
bool pathset_covers(const struct pathset *s, const char *path);
/* The entry of PATH or of its nearest ancestor whose value is at least
 * MIN, or NULL. */
struct pathset_entry *pathset_covering(const struct pathset *s, const char *path,
				       uint64_t min);
/* Calls fn for every entry (any order); fn must not change the set. */
void pathset_each(const struct pathset *s,
		  void (*fn)(const struct pathset_entry *e, void *arg), void *arg);

#endif
