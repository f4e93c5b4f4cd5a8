/* Unit tests for the convergence engine's pieces (netsync/delta/ and the
 * delta frames of netsync/wire/proto_delta.c): hash-list frames and their
 * consistency rules, the assembly of a peer's list, block hashes of a
 * file (both threads), the plan of two inventories (new, changed, type
 * changes, links, renames, deletes, excludes), --exclude patterns, the
 * hash cache's file, the confinement of paths a peer sends, and the
 * xattrs an inventory walk sees (short and long lists, symlinks). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "netsync/delta/blockhash.h"
#include "netsync/delta/exclude.h"
#include "netsync/delta/hashcache.h"
#include "netsync/delta/inventory.h"
#include "netsync/delta/plan.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

/* Encodes M and decodes it back through a real frame. */
static int hashes_roundtrip(const struct proto_hashes *m, struct proto_hashes *out,
			    struct evbuffer *b)
{
	struct proto_frame f;

	evbuffer_drain(b, evbuffer_get_length(b));
	if (proto_encode_hashes(b, m) < 0)
		return -EINVAL;
	assert_int_equal(proto_frame_next(b, &f), 1);
	return proto_decode_hashes(&f, out);
}

static void test_hashes_rules(void **state)
{
	static uint8_t h[PROTO_HASHES_CHUNK * 16 + 16];
	static const struct {
		const char *what;
		uint64_t size;
		uint32_t bs, first, count, flags, err;
		int rc;
	} cases[] = {
		{ "one short list", 10000, 4096, 0, 3, PROTO_HASHES_F_LAST, 0, 0 },
		{ "an empty file", 0, 4096, 0, 0, PROTO_HASHES_F_LAST, 0, 0 },
		{ "an error, no hashes", 0, 4096, 0, 0, PROTO_HASHES_F_LAST, ENOENT, 0 },
		{ "an error with hashes", 10000, 4096, 0, 3, PROTO_HASHES_F_LAST, ENOENT, -EINVAL },
		{ "block size not a power of two", 10000, 5000, 0, 2, PROTO_HASHES_F_LAST, 0, -EINVAL },
		{ "block size too small", 10000, 2048, 0, 5, PROTO_HASHES_F_LAST, 0, -EINVAL },
		{ "past the file's blocks", 10000, 4096, 2, 2, PROTO_HASHES_F_LAST, 0, -EINVAL },
		{ "last frame ending early", 10000, 4096, 0, 2, PROTO_HASHES_F_LAST, 0, -EINVAL },
		{ "a short frame not last", 1 << 30, 4096, 0, 5, 0, 0, -EINVAL },
		{ "a full frame not last", 1ull << 30, 4096, 0, PROTO_HASHES_CHUNK, 0, 0, 0 },
		{ "over a frame's hashes", 1ull << 30, 4096, 0, PROTO_HASHES_CHUNK + 1, 0, 0, -EINVAL },
	};
	struct evbuffer *b = evbuffer_new();

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proto_hashes m = { .path = "dir/file", .size = cases[i].size,
					  .block_size = cases[i].bs, .first = cases[i].first,
					  .count = cases[i].count, .flags = cases[i].flags,
					  .err = cases[i].err, .hashes = h }, out;
		int rc = hashes_roundtrip(&m, &out, b);

		if (rc != cases[i].rc)
			fail_msg("%s: %d, expected %d", cases[i].what, rc, cases[i].rc);
		if (rc == 0) {
			assert_string_equal(out.path, "dir/file");
			assert_int_equal(out.count, cases[i].count);
		}
	}
	evbuffer_free(b);
}

/* A decoder must refuse a frame whose blob does not match its count, or
 * whose path is empty, even with a valid check. */
static void test_hashes_malformed(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_frame f;
	struct proto_hashes m = { .path = "f", .size = 8192, .block_size = 4096, .count = 2,
				  .flags = PROTO_HASHES_F_LAST,
				  .hashes = (const uint8_t *)"0123456789abcdef0123456789abcdef" }, out;
	struct proto_hash_req q;
	struct proto_tree_req t;

	(void)state;
	assert_int_equal(proto_encode_hashes(b, &m), 0);
	assert_int_equal(proto_frame_next(b, &f), 1);
	f.h.len -= 16;	/* the blob says 32 bytes; 16 are there */
	assert_int_equal(proto_decode_hashes(&f, &out), -EBADMSG);
	evbuffer_drain(b, evbuffer_get_length(b));
	assert_int_equal(proto_encode_hash_req(b, &(struct proto_hash_req){ .path = "",
								     .block_size = 4096 }), -EINVAL);
	assert_int_equal(proto_encode_hash_req(b, &(struct proto_hash_req){ .path = "x",
								     .block_size = 4096 }), 0);
	assert_int_equal(proto_frame_next(b, &f), 1);
	assert_int_equal(proto_decode_hash_req(&f, &q), 0);
	assert_string_equal(q.path, "x");
	assert_int_equal(q.flags, 0);
	assert_int_equal(proto_decode_tree_req(&f, &t), -EBADMSG);	/* wrong type */
	proto_frame_consume(b, &f);
	/* ONE_NAME is the only flag; any other bit is a bad frame */
	assert_int_equal(proto_encode_hash_req(b, &(struct proto_hash_req){
		.path = "x", .block_size = 4096, .flags = PROTO_HASH_F_ONE_NAME }), 0);
	assert_int_equal(proto_frame_next(b, &f), 1);
	assert_int_equal(proto_decode_hash_req(&f, &q), 0);
	assert_int_equal(q.flags, PROTO_HASH_F_ONE_NAME);
	proto_frame_consume(b, &f);
	assert_int_equal(proto_encode_hash_req(b, &(struct proto_hash_req){
		.path = "x", .block_size = 4096, .flags = 1u << 1 }), 0);
	assert_int_equal(proto_frame_next(b, &f), 1);
	assert_int_equal(proto_decode_hash_req(&f, &q), -EBADMSG);
	proto_frame_consume(b, &f);
	/* a HASHES flag other than LAST (the former SAME) is refused */
	m.flags = PROTO_HASHES_F_LAST | (1u << 1);
	assert_int_equal(proto_encode_hashes(b, &m), -EINVAL);
	evbuffer_free(b);
}

static void test_list_assembly(void **state)
{
	static uint8_t h[PROTO_HASHES_CHUNK * 16];
	uint64_t size = (uint64_t)(PROTO_HASHES_CHUNK + 3) * 4096;
	struct proto_hashes a = { .path = "f", .size = size, .block_size = 4096, .first = 0,
				  .count = PROTO_HASHES_CHUNK, .hashes = h };
	struct proto_hashes z = { .path = "f", .size = size, .block_size = 4096,
				  .first = PROTO_HASHES_CHUNK, .count = 3,
				  .flags = PROTO_HASHES_F_LAST, .hashes = h };
	struct proto_hashes err = { .path = "f", .block_size = 4096, .err = ENOENT,
				    .flags = PROTO_HASHES_F_LAST };
	struct blockhash b = { 0 };

	(void)state;
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &a), 0);
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &z), 1);
	assert_int_equal(b.n, PROTO_HASHES_CHUNK + 3);
	blockhash_free(&b);
	/* out of order, another path, another size, another block size */
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &z), -EBADMSG);
	assert_int_equal(blockhash_add_frame(&b, "g", 4096, &a), -EBADMSG);
	assert_int_equal(blockhash_add_frame(&b, "f", 8192, &a), -EBADMSG);
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &a), 0);
	z.size += 1;
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &z), -EBADMSG);
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &err), -EBADMSG);
	blockhash_free(&b);
	assert_int_equal(blockhash_add_frame(&b, "f", 4096, &err), -ENOENT);
	blockhash_free(&b);
}

static void test_blockhash_file(void **state)
{
	char path[] = "/tmp/twinfs-bh-XXXXXX";
	size_t size = BLOCKHASH_PARALLEL_MIN + 5000;
	uint8_t *data = malloc(size), one[16];
	struct blockhash b, c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0 && data);
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	assert_int_equal(blockhash_fd(fd, 1u << 20, &b), 0);	/* two threads */
	assert_int_equal(b.n, proto_blocks(size, 1u << 20));
	assert_int_equal(b.bytes_read, size);
	for (uint32_t i = 0; i < b.n; i++) {
		size_t len = i + 1 < b.n ? 1u << 20 : size - (size_t)i * (1u << 20);

		blockhash_one(data + (size_t)i * (1u << 20), len, one);
		assert_memory_equal(one, b.h + (size_t)i * 16, 16);
	}
	/* one byte changed: exactly its block differs */
	assert_int_equal(pwrite(fd, "!", 1, 3u << 20), 1);
	assert_int_equal(blockhash_fd(fd, 1u << 20, &c), 0);
	for (uint32_t i = 0; i < b.n; i++)
		assert_int_equal(blockhash_same(&b, &c, i), i != 3);
	blockhash_free(&c);	/* blockhash_fd clears its output first */
	assert_int_equal(blockhash_fd(fd, 3000, &c), -EINVAL);
	blockhash_free(&b);
	blockhash_free(&c);
	close(fd);
	unlink(path);
	free(data);
}

static void test_exclude(void **state)
{
	static const struct { const char *pat, *path; bool dir, match; } cases[] = {
		{ "*.tmp", "a.tmp", false, true },
		{ "*.tmp", "d/e/a.tmp", false, true },
		{ "*.tmp", "a.tmpx", false, false },
		{ "cache/", "x/cache", true, true },
		{ "cache/", "x/cache", false, false },
		{ "/top", "top", false, true },
		{ "/top", "d/top", false, false },
		{ "d/*.o", "d/x.o", false, true },
		{ "d/*.o", "d/e/x.o", false, false },
		{ "d/**.o", "d/e/x.o", false, true },
	};
	struct exclude x = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&x, 0, sizeof(x));
		assert_int_equal(exclude_add(&x, cases[i].pat), 0);
		if (exclude_match(&x, cases[i].path, cases[i].dir) != cases[i].match)
			fail_msg("%s on %s", cases[i].pat, cases[i].path);
		exclude_free(&x);
	}
	assert_int_equal(exclude_add(&x, "/"), -EINVAL);
	assert_int_equal(exclude_add(&x, ""), -EINVAL);
}

static void ent(struct inventory *inv, const char *path, uint32_t mode, uint64_t size,
		int64_t mtime, const char *link, uint32_t nlink)
{
	struct proto_entry e = { .path = path, .mode = mode, .size = size, .mtime_ns = mtime,
				 .link = link, .nlink = nlink };

	assert_int_equal(inventory_add(inv, &e), 0);
}

static const struct plan_item *find_item(const struct plan *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct proto_entry *e = p->it[i].s ? p->it[i].s : p->it[i].p;

		if (!strcmp(e->path, path))
			return &p->it[i];
	}
	return NULL;
}

static void test_plan(void **state)
{
	struct inventory s = { 0 }, p = { 0 };
	struct exclude x = { 0 };
	struct plan_opts o = { .delete = true, .delta_min = 1000, .exclude = &x };
	struct plan pl;
	const struct plan_item *it;

	(void)state;
	assert_int_equal(exclude_add(&x, "*.keep"), 0);
	ent(&s, "d", S_IFDIR | 0755, 0, 1, NULL, 1);
	ent(&s, "d/same", S_IFREG | 0644, 10, 5, NULL, 1);
	ent(&s, "d/grown", S_IFREG | 0644, 5000, 6, NULL, 1);
	ent(&s, "d/small", S_IFREG | 0644, 20, 7, NULL, 1);
	ent(&s, "d/perm", S_IFREG | 0600, 10, 5, NULL, 1);
	ent(&s, "d/moved", S_IFREG | 0644, 77, 9, NULL, 1);
	ent(&s, "d/link", S_IFREG | 0644, 10, 5, "d/same", 2);
	ent(&s, "t", S_IFDIR | 0755, 0, 1, NULL, 1);
	ent(&p, "d", S_IFDIR | 0755, 0, 1, NULL, 1);
	ent(&p, "d/gone", S_IFREG | 0644, 3, 3, NULL, 1);
	ent(&p, "d/grown", S_IFREG | 0644, 4000, 6, NULL, 1);
	ent(&p, "d/old", S_IFREG | 0644, 77, 9, NULL, 1);
	ent(&p, "d/perm", S_IFREG | 0644, 10, 5, NULL, 1);
	ent(&p, "d/same", S_IFREG | 0644, 10, 5, NULL, 1);
	ent(&p, "d/small", S_IFREG | 0644, 21, 7, NULL, 1);
	ent(&p, "d/x.keep", S_IFREG | 0644, 1, 1, NULL, 1);
	ent(&p, "t", S_IFREG | 0644, 1, 1, NULL, 1);
	inventory_sort(&s);
	inventory_sort(&p);
	assert_int_equal(plan_build(&s, &p, &o, &pl), 0);
	assert_null(find_item(&pl, "d/same"));
	assert_int_equal(find_item(&pl, "d/grown")->act, PLAN_DELTA);
	assert_int_equal(find_item(&pl, "d/small")->act, PLAN_REPLACE);
	it = find_item(&pl, "d/perm");
	assert_int_equal(it->act, PLAN_META);
	assert_int_equal(it->why, PLAN_W_PERMS);
	it = find_item(&pl, "d/moved");
	assert_int_equal(it->act, PLAN_RENAME);
	assert_string_equal(it->from, "d/old");
	assert_null(find_item(&pl, "d/old"));	/* moved, not deleted */
	assert_int_equal(find_item(&pl, "d/gone")->act, PLAN_DELETE);
	assert_int_equal(find_item(&pl, "d/link")->act, PLAN_LINK);
	it = find_item(&pl, "t");
	assert_int_equal(it->act, PLAN_MKDIR);
	assert_true(it->why & PLAN_W_TYPE);
	assert_null(find_item(&pl, "d/x.keep"));	/* excluded: kept */
	/* d's PRUNE keeps the source's names and the excluded one */
	assert_int_equal(pl.n_pr, 1);
	assert_string_equal(pl.pr[0].dir, "d");
	{
		bool keep = false, gone = false;

		for (size_t i = 0; i < pl.pr[0].len; i += strlen(pl.pr[0].names + i) + 1) {
			keep |= !strcmp(pl.pr[0].names + i, "x.keep");
			gone |= !strcmp(pl.pr[0].names + i, "gone");
		}
		assert_true(keep);
		assert_false(gone);
	}
	plan_free(&pl);
	/* without --delete: no deletes, no renames */
	o.delete = false;
	assert_int_equal(plan_build(&s, &p, &o, &pl), 0);
	assert_null(find_item(&pl, "d/gone"));
	assert_int_equal(find_item(&pl, "d/moved")->act, PLAN_FILE);
	assert_int_equal(pl.n_pr, 0);
	plan_free(&pl);
	inventory_free(&s);
	inventory_free(&p);
	exclude_free(&x);
}

static void test_hashcache(void **state)
{
	char dir[] = "/tmp/twinfs-hc-XXXXXX", file[64];
	struct hashcache *c;
	struct stat st = { .st_dev = 1, .st_ino = 2, .st_size = 3 };
	struct blockhash b = { .size = 3, .block_size = 4096, .n = 1 }, got;
	uint64_t n, hits, lookups;
	int rootfd, otherfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	b.h = (uint8_t *)"fedcba9876543210";
	rootfd = open(dir, O_RDONLY | O_DIRECTORY);
	otherfd = open("/proc", O_RDONLY | O_DIRECTORY);	/* another mount */
	assert_true(rootfd >= 0 && otherfd >= 0);
	assert_int_equal(hashcache_open(dir, rootfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 0);
	hashcache_store_blocks(c, &st, &b);
	{
		/* 0600 under the mount's umask 0 too */
		mode_t old = umask(0);
		struct stat fst;

		assert_int_equal(hashcache_save(c), 0);
		umask(old);
		snprintf(file, sizeof(file), "%s/hashcache", dir);
		assert_int_equal(stat(file, &fst), 0);
		assert_int_equal(fst.st_mode & 07777, 0600);
	}
	hashcache_close(c);
	/* written by hashcache_save: not believed on another file system
	 * instance (the page cache it was made from may be gone) */
	assert_int_equal(hashcache_open(dir, otherfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 0);
	hashcache_close(c);
	assert_int_equal(hashcache_open(dir, rootfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 1);
	assert_memory_equal(got.h, b.h, 16);
	blockhash_free(&got);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 8192, &got), 0);
	st.st_ctim.tv_nsec = 1;	/* written since: no longer matches */
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 0);
	hashcache_stats(c, &n, &hits, &lookups);
	assert_int_equal(n, 1);
	assert_int_equal(hits, 1);
	{
		/* a file changed within the timestamp granularity: not kept */
		struct stat fresh = st;

		fresh.st_ino = 9;
		clock_gettime(CLOCK_REALTIME, &fresh.st_ctim);
		fresh.st_ctim.tv_sec -= 1;
		hashcache_store_blocks(c, &fresh, &b);
		assert_int_equal(hashcache_lookup_blocks(c, &fresh, 4096, &got), 0);
		fresh.st_ctim.tv_sec -= 2;
		hashcache_store_blocks(c, &fresh, &b);
		assert_int_equal(hashcache_lookup_blocks(c, &fresh, 4096, &got), 1);
		blockhash_free(&got);
		hashcache_stats(c, &n, &hits, &lookups);
		assert_int_equal(n, 2);
	}
	/* written after a syncfs of the tree: believed on any instance, once
	 * (the file goes at open: the tree changes from then on) */
	st.st_ctim.tv_nsec = 0;
	hashcache_store_blocks(c, &st, &b);
	assert_int_equal(hashcache_save_synced(c), 0);
	hashcache_close(c);
	snprintf(file, sizeof(file), "%s/hashcache", dir);
	assert_int_equal(hashcache_open(dir, otherfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 1);
	blockhash_free(&got);
	assert_int_equal(access(file, F_OK), -1);
	hashcache_close(c);
	assert_int_equal(hashcache_open(dir, otherfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 0);
	hashcache_store_blocks(c, &st, &b);
	assert_int_equal(hashcache_save(c), 0);
	hashcache_close(c);
	/* a damaged file is an empty cache */
	{
		int fd = open(file, O_WRONLY);

		assert_int_equal(pwrite(fd, "X", 1, 140), 1);
		close(fd);
	}
	assert_int_equal(hashcache_open(dir, otherfd, &c), 0);
	assert_int_equal(hashcache_lookup_blocks(c, &st, 4096, &got), 0);
	hashcache_close(c);
	unlink(file);
	close(rootfd);
	close(otherfd);
	rmdir(dir);
}

/* Paths a peer's entries or a client's requests may carry: the client
 * and the session check each with path_check before use. */
static void test_confinement(void **state)
{
	static const struct { const char *p; int rc; } cases[] = {
		{ "a/b", 0 }, { "../x", -EINVAL }, { "/etc/passwd", -EINVAL },
		{ "a/../b", -EINVAL }, { "a//b", -EINVAL }, { "a/", -EINVAL },
		{ ".", -EINVAL }, { "", -EINVAL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (path_check(cases[i].p, false) != cases[i].rc)
			fail_msg("path_check(%s)", cases[i].p);
	assert_int_equal(path_check("", true), 0);	/* TREE_REQ of the whole store */
}

/* The walk lists xattrs with a small buffer first (inventory.c): a list
 * longer than it is read again whole; a symlink's own xattrs are listed,
 * never its target's; a changed value changes the digest. */
static void test_inventory_xattrs(void **state)
{
	char dir[] = "/tmp/twinfs-inv-XXXXXX", path[128], name[64];
	struct inventory inv;
	struct inventory_opts io = { .replicated_xattrs = true };
	uint8_t before[16];
	long at;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/long", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	if (setxattr(path, "user.probe", "1", 1, 0) < 0) {
		unlink(path);
		rmdir(dir);
		skip();	/* no user xattrs on this filesystem */
	}
	/* 60 names of ~40 bytes: a list of ~2,400 bytes */
	for (int i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "user.a-rather-long-attribute-name-%03d", i);
		assert_int_equal(setxattr(path, name, "v", 1, 0), 0);
	}
	snprintf(path, sizeof(path), "%s/short", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(setxattr(path, "user.one", "1", 1, 0), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("long", path), 0);

	assert_int_equal(inventory_walk(dir, &io, &inv), 0);
	at = inventory_find(&inv, "long");
	assert_true(at >= 0);
	assert_int_equal(inv.e[at].n_xattrs, 61);
	assert_int_equal(inv.e[at].err, 0);
	memcpy(before, inv.e[at].xattrs, 16);
	at = inventory_find(&inv, "short");
	assert_true(at >= 0);
	assert_int_equal(inv.e[at].n_xattrs, 1);
	at = inventory_find(&inv, "link");
	assert_true(at >= 0);
	assert_int_equal(inv.e[at].n_xattrs, 0);
	inventory_free(&inv);

	snprintf(path, sizeof(path), "%s/long", dir);
	assert_int_equal(setxattr(path, "user.a-rather-long-attribute-name-059", "w", 1, 0), 0);
	assert_int_equal(inventory_walk(dir, &io, &inv), 0);
	at = inventory_find(&inv, "long");
	assert_true(at >= 0);
	assert_int_equal(inv.e[at].n_xattrs, 61);
	assert_memory_not_equal(inv.e[at].xattrs, before, 16);
	inventory_free(&inv);

	unlink(path);
	snprintf(path, sizeof(path), "%s/short", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/link", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashes_rules),
		cmocka_unit_test(test_hashes_malformed),
		cmocka_unit_test(test_list_assembly),
		cmocka_unit_test(test_blockhash_file),
		cmocka_unit_test(test_exclude),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_hashcache),
		cmocka_unit_test(test_confinement),
		cmocka_unit_test(test_inventory_xattrs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
