/*
 * treedigest — one XXH3-128 digest of a directory tree, from the
 * convergence engine's inventory (netsync/delta/inventory.h): every
 * entry's relative path, type and mode, owner, size, content digest
 * (XXH3-128), symlink target, device numbers and hard-link group. Two
 * trees with the same digest hold the same names, modes, owners, links
 * and bytes. Any thread; reads only.
 */
#ifndef TWINFS_TREEDIGEST_H
#define TWINFS_TREEDIGEST_H

#include <stdint.h>

struct tree_digest {
	char hex[33];		/* XXH3-128 of the manifest, 32 hex digits */
	uint64_t files, dirs, symlinks, others;
	uint64_t bytes;		/* regular file bytes hashed */
};

/* Digests the tree under ROOT (ROOT itself left out). Returns 0 or -errno
 * (the first entry that could not be read is logged). */
int tree_digest(const char *root, struct tree_digest *out);

#endif
