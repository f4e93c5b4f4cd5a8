/*
 * treedigest — the demo's one-line proof that two trees hold the same
 * thing, as a client of the convergence engine: the tree's inventory
 * (netsync/delta/inventory.h, every file read and hashed fresh) folded
 * into one XXH3-128, entry by entry in tree order. Mtimes and xattrs are
 * left out: the demo digests a mount, whose kernel cache keeps its own
 * times (`twinfs verify` compares everything). Any thread; reads only.
 */
#include "src/treedigest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "common/log.h"
#include "netsync/delta/inventory.h"

/* The fields of E that the digest covers, in a fixed layout. */
static void tree_digest_entry(XXH3_state_t *st, const struct proto_entry *e)
{
	struct {
		uint32_t mode, uid, gid, err;
		uint64_t size, rdev;
		uint8_t hash[16];
	} f;

	memset(&f, 0, sizeof(f));
	f.mode = e->mode;
	f.uid = e->uid;
	f.gid = e->gid;
	f.err = e->err;
	f.size = e->size;
	f.rdev = e->rdev;
	memcpy(f.hash, e->hash, 16);
	XXH3_128bits_update(st, e->path, strlen(e->path) + 1);
	XXH3_128bits_update(st, &f, sizeof(f));
	XXH3_128bits_update(st, e->target ? e->target : "", e->target ? strlen(e->target) + 1 : 1);
	XXH3_128bits_update(st, e->link ? e->link : "", e->link ? strlen(e->link) + 1 : 1);
}

int tree_digest(const char *root, struct tree_digest *out)
{
	struct inventory inv;
	XXH3_state_t *st;
	XXH128_hash_t h;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = inventory_build(root, NULL, &inv);
	if (rc < 0) {
		log_error("cannot read a tree to digest it", "root=%s err=%s", root,
			  strerror(-rc));
		return rc;
	}
	st = XXH3_createState();
	if (!st) {
		inventory_free(&inv);
		return -ENOMEM;
	}
	XXH3_128bits_reset(st);
	for (size_t i = 0; i < inv.n; i++) {
		const struct proto_entry *e = &inv.e[i];

		if (e->err && !rc) {
			log_error("cannot read an entry to digest it", "root=%s path=%s err=%s",
				  root, e->path, strerror((int)e->err));
			rc = -(int)e->err;
		}
		tree_digest_entry(st, e);
		if (S_ISREG(e->mode))
			out->files++;
		else if (S_ISDIR(e->mode))
			out->dirs++;
		else if (S_ISLNK(e->mode))
			out->symlinks++;
		else
			out->others++;
	}
	out->bytes = inv.bytes_read;
	h = XXH3_128bits_digest(st);
	snprintf(out->hex, sizeof(out->hex), "%016llx%016llx", (unsigned long long)h.high64,
		 (unsigned long long)h.low64);
	XXH3_freeState(st);
	inventory_free(&inv);
	return rc;
}
