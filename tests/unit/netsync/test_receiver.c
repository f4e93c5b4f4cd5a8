/* Unit tests for netsync/path and netsync/receiver: the path table (no
 * escape by "..", absolute paths or symlinks), a crafted stream of frames
 * applied to a real temporary store, applied again after a simulated crash
 * (idempotent), and a bad block hash that writes nothing. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "netsync/wire/limits.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"
#include "netsync/secondary/receiver.h"
#include "netsync/roles/state.h"
#include "netsync/secondary/syncer.h"

struct fx {
	char top[64];
	char store[96], state[96], outside[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->top, "/tmp/twinfs-recv.XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->store, sizeof(f->store), "%s/store", f->top);
	snprintf(f->state, sizeof(f->state), "%s/state", f->top);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->top);
	assert_int_equal(mkdir(f->store, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	assert_int_equal(state_dir_prepare(f->state), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->top);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void test_path_check_table(void **state)
{
	static const struct { const char *p; int root_ok; int rc; } cases[] = {
		{ "a", 0, 0 }, { "a/b/c", 0, 0 }, { "a.b/..c/.d", 0, 0 },
		{ "", 1, 0 }, { "", 0, -EINVAL },
		{ "/etc/passwd", 0, -EINVAL }, { "..", 0, -EINVAL },
		{ "../x", 0, -EINVAL }, { "a/../../x", 0, -EINVAL },
		{ "a/..", 0, -EINVAL }, { ".", 0, -EINVAL }, { "a/./b", 0, -EINVAL },
		{ "a//b", 0, -EINVAL }, { "a/", 0, -EINVAL }, { "/", 1, -EINVAL },
	};
	char longname[300], longpath[5000];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = path_check(cases[i].p, cases[i].root_ok);

		if (rc != cases[i].rc)
			fail_msg("path_check(\"%s\") = %d, want %d", cases[i].p, rc, cases[i].rc);
	}
	memset(longname, 'n', 256);
	longname[256] = '\0';
	assert_int_equal(path_check(longname, false), -EINVAL);
	longname[255] = '\0';
	assert_int_equal(path_check(longname, false), 0);
	for (size_t i = 0; i < 4098; i += 2) {
		longpath[i] = 'p';
		longpath[i + 1] = '/';
	}
	longpath[4095] = '\0';	/* 4095 bytes: the longest allowed */
	assert_int_equal(path_check(longpath, false), 0);
	longpath[4095] = '/';
	longpath[4097] = '\0';	/* 4097 bytes */
	assert_int_equal(path_check(longpath, false), -EINVAL);
}

static void test_path_resolve_symlinks(void **state)
{
	struct fx *f = *state;
	struct path_ref ref;
	char p[200];
	int root = open(f->store, O_RDONLY | O_DIRECTORY);

	snprintf(p, sizeof(p), "%s/esc", f->store);
	assert_int_equal(symlink(f->outside, p), 0);	/* store/esc -> outside */
	snprintf(p, sizeof(p), "%s/sub", f->store);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/inner", f->store);
	assert_int_equal(symlink("sub", p), 0);	/* even a symlink inside */

	assert_int_equal(path_resolve(root, "esc/x", false, &ref), -ELOOP);
	assert_int_equal(path_resolve(root, "inner/x", false, &ref), -ELOOP);
	assert_int_equal(path_resolve(root, "../outside/x", false, &ref), -EINVAL);
	assert_int_equal(path_resolve(root, "/etc/passwd", false, &ref), -EINVAL);
	assert_int_equal(path_resolve(root, "missing/x", false, &ref), -ENOENT);
	assert_int_equal(path_resolve(root, "sub/x", false, &ref), 0);
	assert_string_equal(ref.name, "x");
	path_put(&ref);
	/* the final component is left to the caller, which never follows it */
	assert_int_equal(path_resolve(root, "esc", false, &ref), 0);
	assert_string_equal(ref.name, "esc");
	path_put(&ref);
	close(root);
}

/* The folder an apply error names as missing: the highest one on the
 * way that is absent, a file or a symlink; none when all are folders. */
static void test_path_blocked_at(void **state)
{
	struct fx *f = *state;
	char p[200], at[64];
	int root = open(f->store, O_RDONLY | O_DIRECTORY);

	snprintf(p, sizeof(p), "%s/d", f->store);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d/file", f->store);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY, 0644)), 0);
	snprintf(p, sizeof(p), "%s/d/link", f->store);
	assert_int_equal(symlink(".", p), 0);

	assert_int_equal(path_blocked_at(root, "d/x/y/z", at, sizeof(at)), 1);
	assert_string_equal(at, "d/x");
	assert_int_equal(path_blocked_at(root, "gone/y", at, sizeof(at)), 1);
	assert_string_equal(at, "gone");
	assert_int_equal(path_blocked_at(root, "d/file/y", at, sizeof(at)), 1);
	assert_string_equal(at, "d/file");
	assert_int_equal(path_blocked_at(root, "d/link/y/z", at, sizeof(at)), 1);
	assert_string_equal(at, "d/link");
	assert_int_equal(path_blocked_at(root, "d/missing", at, sizeof(at)), 0);
	assert_int_equal(path_blocked_at(root, "top", at, sizeof(at)), 0);
	assert_int_equal(path_blocked_at(root, "../d/x", at, sizeof(at)), -EINVAL);
	assert_int_equal(path_blocked_at(root, "d/x/y", at, 3), -ENAMETOOLONG);
	close(root);
}

/* ---- frames ---- */

static void op(struct evbuffer *b, uint64_t seq, struct journal_op o)
{
	assert_int_equal(proto_encode_op(b, seq, &o), 0);
}

static void data(struct evbuffer *b, const char *path, uint64_t off, const char *s)
{
	assert_int_equal(proto_encode_data(b, path, off, s, (uint32_t)strlen(s),
					   NULL, NULL, NULL), 0);
}

/* Applies every frame in b like serve does; returns the first error. */
static int apply_all(struct receiver *r, struct evbuffer *b)
{
	struct proto_frame f;
	int rc = 0, n;

	while ((n = proto_frame_next(b, &f)) == 1) {
		switch (f.h.type) {
		case PROTO_OP: {
			struct proto_op m;

			assert_int_equal(proto_decode_op(&f, &m), 0);
			rc = receiver_op(r, &m);
			break;
		}
		case PROTO_DATA: {
			struct proto_data m;

			assert_int_equal(proto_decode_data(&f, &m), 0);
			rc = receiver_data(r, &m);
			break;
		}
		case PROTO_ATTR: {
			struct proto_attr m;

			assert_int_equal(proto_decode_attr(&f, &m), 0);
			rc = receiver_attr(r, &m);
			break;
		}
		case PROTO_BATCH_END: {
			uint64_t seq;

			assert_int_equal(proto_decode_seq(&f, &seq), 0);
			rc = receiver_batch_end(r, seq);
			break;
		}
		default:
			fail_msg("unexpected frame %u", f.h.type);
		}
		proto_frame_consume(b, &f);
		if (rc < 0)
			return rc;
	}
	assert_int_equal(n, 0);
	return 0;
}

static struct evbuffer *crafted_stream(void)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_attr a = {
		.path = "d/f", .mask = JATTR_SIZE | JATTR_MODE | JATTR_MTIME | JATTR_ATIME |
		JATTR_UID | JATTR_GID, .size = 11, .mode = 0100640, .uid = 1234, .gid = 5678,
		.atime = { 1000000000, 5 }, .mtime = { 1100000000, 7 },
	};

	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "d", .mode = 040750 });
	op(b, 2, (struct journal_op){ .type = JOP_CREATE, .path = "d/f", .mode = 0100600 });
	data(b, "d/f", 0, "hello");
	data(b, "d/f", 5, " world, and more");	/* then cut to 11 bytes by ATTR */
	assert_int_equal(proto_encode_attr(b, &a), 0);
	op(b, 3, (struct journal_op){ .type = JOP_SETXATTR, .path = "d/f",
				      .xname = "user.k", .xvalue = "v1", .xsize = 2 });
	op(b, 4, (struct journal_op){ .type = JOP_SETXATTR, .path = "d/f",
				      .xname = "user.gone", .xvalue = "x", .xsize = 1 });
	op(b, 5, (struct journal_op){ .type = JOP_REMOVEXATTR, .path = "d/f",
				      .xname = "user.gone" });
	op(b, 6, (struct journal_op){ .type = JOP_SYMLINK, .path = "d/s", .path2 = "f" });
	op(b, 7, (struct journal_op){ .type = JOP_LINK, .path = "d/f", .path2 = "d/h" });
	op(b, 8, (struct journal_op){ .type = JOP_RENAME, .path = "d/h", .path2 = "d/h2" });
	op(b, 9, (struct journal_op){ .type = JOP_MKNOD, .path = "d/p", .mode = S_IFIFO | 0644 });
	op(b, 10, (struct journal_op){ .type = JOP_CREATE, .path = "x", .mode = 0100644 });
	op(b, 11, (struct journal_op){ .type = JOP_UNLINK, .path = "x" });
	op(b, 12, (struct journal_op){ .type = JOP_MKDIR, .path = "e", .mode = 040755 });
	op(b, 13, (struct journal_op){ .type = JOP_RMDIR, .path = "e" });
	assert_int_equal(proto_encode_batch_end(b, 13), 0);
	return b;
}

static void check_store(const struct fx *f)
{
	char p[200], buf[64], lnk[64];
	struct stat st, st2;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/d", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);

	snprintf(p, sizeof(p), "%s/d/f", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(st.st_mtim.tv_sec, 1100000000);
	assert_int_equal(st.st_mtim.tv_nsec, 7);
	assert_int_equal(st.st_atim.tv_sec, 1000000000);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, 1234);
		assert_int_equal(st.st_gid, 5678);
	}
	fd = open(p, O_RDONLY);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, 11);
	assert_memory_equal(buf, "hello world", 11);
	n = lgetxattr(p, "user.k", buf, sizeof(buf));
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "v1", 2);
	assert_int_equal(lgetxattr(p, "user.gone", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);

	snprintf(p, sizeof(p), "%s/d/s", f->store);
	n = readlink(p, lnk, sizeof(lnk) - 1);
	assert_int_equal(n, 1);
	assert_memory_equal(lnk, "f", 1);

	snprintf(p, sizeof(p), "%s/d/h2", f->store);	/* hard link, renamed */
	assert_int_equal(lstat(p, &st2), 0);
	snprintf(p, sizeof(p), "%s/d/f", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_ino, st2.st_ino);
	assert_int_equal(st.st_nlink, 2);
	snprintf(p, sizeof(p), "%s/d/h", f->store);
	assert_int_equal(access(p, F_OK), -1);

	snprintf(p, sizeof(p), "%s/d/p", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	snprintf(p, sizeof(p), "%s/x", f->store);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/e", f->store);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_apply_and_replay(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct receiver_stats st;
	struct evbuffer *b;
	uint64_t seq;
	bool dirty;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	b = crafted_stream();
	assert_int_equal(apply_all(r, b), 0);
	evbuffer_free(b);
	receiver_get_stats(r, &st);
	assert_int_equal(st.applied_seq, 13);
	assert_false(st.dirty);
	assert_int_equal(st.ops, 13);
	assert_int_equal(st.batches, 1);
	receiver_close(r);
	check_store(f);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 13);
	assert_false(dirty);

	/* resume: a primary that rewinds to 13 and re-sends skips nothing new */
	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	b = crafted_stream();
	assert_int_equal(apply_all(r, b), 0);
	evbuffer_free(b);
	receiver_get_stats(r, &st);
	assert_int_equal(st.ops, 0);	/* every OP was <= applied_seq */
	receiver_close(r);
	check_store(f);

	/* crash after applying, before STATE/applied said so (it still says
	 * dirty): the whole stream is applied again on top of its own result
	 * and converges to the same store */
	assert_int_equal(state_applied_write(f->state, 0, true), 0);
	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	b = crafted_stream();
	assert_int_equal(apply_all(r, b), 0);
	evbuffer_free(b);
	receiver_get_stats(r, &st);
	assert_int_equal(st.ops, 13);
	assert_int_equal(st.applied_seq, 13);
	receiver_close(r);
	check_store(f);
}

static void test_dirty_mark_until_batch_end(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	uint64_t seq;
	bool dirty;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "d", .mode = 040755 });
	assert_int_equal(apply_all(r, b), 0);
	/* applied but not yet durable: STATE/applied says dirty */
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 0);
	assert_true(dirty);
	receiver_close(r);
	/* a restarted receiver still knows */
	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	assert_int_equal(proto_encode_batch_end(b, 1), 0);
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 1);
	assert_false(dirty);
	receiver_close(r);
	evbuffer_free(b);
}

static void test_bad_hash_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct proto_frame fr;
	struct proto_data d;
	char p[200];
	uint8_t *raw;
	size_t n;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	data(b, "victim", 0, "this block is corrupted in flight");
	n = evbuffer_get_length(b);
	raw = malloc(n);
	evbuffer_remove(b, raw, n);
	raw[n - 3] ^= 0x01;
	evbuffer_add(b, raw, n);
	free(raw);
	assert_int_equal(proto_frame_next(b, &fr), 1);	/* the frame check passes */
	assert_int_equal(proto_decode_data(&fr, &d), 0);
	assert_int_equal(receiver_data(r, &d), -EBADMSG);
	assert_string_equal(receiver_failed_path(r), "victim");
	snprintf(p, sizeof(p), "%s/victim", f->store);
	assert_int_equal(access(p, F_OK), -1);	/* not even created */
	receiver_close(r);
	evbuffer_free(b);
}

static void test_no_escape_through_symlinks(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	char p[200], q[200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/esc", f->store);
	assert_int_equal(symlink(f->outside, p), 0);	/* dir symlink out */
	snprintf(q, sizeof(q), "%s/target", f->outside);
	assert_int_equal(close(open(q, O_CREAT | O_WRONLY, 0644)), 0);
	snprintf(p, sizeof(p), "%s/lnk", f->store);
	assert_int_equal(symlink(q, p), 0);	/* file symlink out */

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	data(b, "esc/target", 0, "pwned");
	assert_int_equal(apply_all(r, b), -ELOOP);
	evbuffer_drain(b, evbuffer_get_length(b));
	data(b, "lnk", 0, "pwned");
	assert_int_equal(apply_all(r, b), -ELOOP);
	evbuffer_drain(b, evbuffer_get_length(b));
	op(b, 1, (struct journal_op){ .type = JOP_CREATE, .path = "esc/new", .mode = 0100644 });
	assert_int_equal(apply_all(r, b), -ELOOP);
	evbuffer_drain(b, evbuffer_get_length(b));
	op(b, 2, (struct journal_op){ .type = JOP_RENAME, .path = "lnk", .path2 = "../stolen" });
	assert_int_equal(apply_all(r, b), -EINVAL);
	evbuffer_drain(b, evbuffer_get_length(b));
	op(b, 3, (struct journal_op){ .type = JOP_SETATTR, .path = "lnk",
				      .attr_mask = JATTR_MODE, .mode = 0777 });
	assert_int_equal(apply_all(r, b), 0);	/* a symlink's mode: nothing to do */
	evbuffer_drain(b, evbuffer_get_length(b));
	op(b, 4, (struct journal_op){ .type = JOP_SETATTR, .path = "lnk",
				      .attr_mask = JATTR_SIZE, .size = 0 });
	assert_int_equal(apply_all(r, b), -ELOOP);
	evbuffer_drain(b, evbuffer_get_length(b));
	/* the outside file is untouched */
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	snprintf(p, sizeof(p), "%s/new", f->outside);
	assert_int_equal(access(p, F_OK), -1);
	receiver_close(r);
	evbuffer_free(b);
}

static void test_rename_replay_and_errors(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_CREATE, .path = "a", .mode = 0100644 });
	op(b, 2, (struct journal_op){ .type = JOP_RENAME, .path = "a", .path2 = "b" });
	op(b, 3, (struct journal_op){ .type = JOP_RENAME, .path = "a", .path2 = "b" });
	op(b, 4, (struct journal_op){ .type = JOP_UNLINK, .path = "zzz" });
	op(b, 5, (struct journal_op){ .type = JOP_RMDIR, .path = "zzz" });
	assert_int_equal(apply_all(r, b), 0);
	/* a rename whose source and target are both missing is a real error */
	op(b, 6, (struct journal_op){ .type = JOP_RENAME, .path = "q", .path2 = "r" });
	assert_int_equal(apply_all(r, b), -ENOENT);
	assert_string_equal(receiver_failed_path(r), "q");
	evbuffer_drain(b, evbuffer_get_length(b));
	/* a missing parent directory */
	op(b, 7, (struct journal_op){ .type = JOP_CREATE, .path = "no/such", .mode = 0100644 });
	assert_int_equal(apply_all(r, b), -ENOENT);
	receiver_close(r);
	evbuffer_free(b);
}

/* The receiver keeps the last parent directory and the files it wrote
 * open across frames; every op that changes what a path names must drop
 * them, or data lands in a renamed directory or an unlinked inode. */
static void read_file(const struct fx *f, const char *rel, char *buf, size_t len,
		      struct stat *st)
{
	char p[200];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", f->store, rel);
	assert_int_equal(lstat(p, st), 0);
	assert_true(S_ISREG(st->st_mode));
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
}

static void test_cached_paths_follow_renames(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct proto_attr a = {
		.path = "a/f", .mask = JATTR_SIZE | JATTR_MODE | JATTR_MTIME, .size = 3,
		.mode = 0644, .mtime = { 1200000000, 9 },
	};
	struct stat st, st2;
	char buf[32];

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "a", .mode = 040755 });
	op(b, 2, (struct journal_op){ .type = JOP_CREATE, .path = "a/f", .mode = 0100600 });
	data(b, "a/f", 0, "one");
	op(b, 3, (struct journal_op){ .type = JOP_RENAME, .path = "a", .path2 = "b" });
	op(b, 4, (struct journal_op){ .type = JOP_MKDIR, .path = "a", .mode = 040755 });
	op(b, 5, (struct journal_op){ .type = JOP_CREATE, .path = "a/f", .mode = 0100640 });
	data(b, "a/f", 0, "two and more");
	assert_int_equal(proto_encode_attr(b, &a), 0);
	op(b, 6, (struct journal_op){ .type = JOP_SETATTR, .path = "b/f",
				      .attr_mask = JATTR_MODE, .mode = 0100604 });
	/* a create over a symlink in the way replaces it */
	op(b, 7, (struct journal_op){ .type = JOP_SYMLINK, .path = "a/s", .path2 = "f" });
	op(b, 8, (struct journal_op){ .type = JOP_CREATE, .path = "a/s", .mode = 0100644 });
	data(b, "a/s", 0, "z");
	/* unlink + create: a new inode, not the cached one */
	op(b, 9, (struct journal_op){ .type = JOP_UNLINK, .path = "b/f" });
	op(b, 10, (struct journal_op){ .type = JOP_CREATE, .path = "b/f", .mode = 0100644 });
	data(b, "b/f", 0, "3");
	op(b, 11, (struct journal_op){ .type = JOP_SETXATTR, .path = "b/f",
				       .xname = "user.k", .xvalue = "v", .xsize = 1 });
	assert_int_equal(proto_encode_batch_end(b, 11), 0);
	assert_int_equal(apply_all(r, b), 0);

	read_file(f, "a/f", buf, sizeof(buf), &st);
	assert_string_equal(buf, "two");
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(st.st_mtim.tv_nsec, 9);
	read_file(f, "b/f", buf, sizeof(buf), &st2);
	assert_string_equal(buf, "3");
	assert_int_equal(st2.st_mode & 07777, 0644);
	assert_true(st.st_ino != st2.st_ino);
	{
		char p[200];

		snprintf(p, sizeof(p), "%s/b/f", f->store);
		assert_int_equal(lgetxattr(p, "user.k", buf, sizeof(buf)), 1);
	}
	read_file(f, "a/s", buf, sizeof(buf), &st);
	assert_string_equal(buf, "z");
	receiver_close(r);
	evbuffer_free(b);
}

/* The pipelined form, as serve uses it: seal, the syncer thread syncs
 * and records (seq, dirty) itself, the loop calls committed; while batch 2
 * is applied during batch 1's sync, STATE/applied says (1, dirty); it is
 * written clean only when idle. */
struct synced { uint64_t seq; int err; int calls; struct event_base *base;
		struct receiver *r; };

static void on_synced(uint64_t seq, int err, void *arg)
{
	struct synced *sy = arg;

	sy->seq = seq;
	sy->err = err;
	sy->calls++;
	event_base_loopbreak(sy->base);
}

static int on_commit(uint64_t seq, void *arg)
{
	struct synced *sy = arg;

	return state_applied_put(receiver_applied_file(sy->r), seq, true);
}

static void test_async_seal_and_commit(void **state)
{
	struct fx *f = *state;
	struct event_base *base = event_base_new();
	struct synced sy = { .base = base };
	struct receiver *r;
	struct syncer *sc;
	struct evbuffer *b = evbuffer_new();
	struct receiver_stats st;
	struct sync_set set;
	uint64_t seq;
	bool dirty;
	int err;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	sy.r = r;
	assert_int_equal(syncer_start(base, receiver_store_fd(r), on_synced, on_commit,
				      &sy, &sc), 0);
	assert_false(receiver_beyond_applied(r));
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "a", .mode = 040755 });
	assert_int_equal(apply_all(r, b), 0);
	assert_true(receiver_beyond_applied(r));
	assert_int_equal(receiver_batch_seal(r, 1, &set), 1);
	assert_false(set.whole_fs);
	assert_int_equal(set.n, 2);	/* the root (new entry) and "a" itself */
	assert_int_equal(syncer_request(sc, 1, &set), 0);
	/* batch 2 starts before batch 1 is durable */
	op(b, 2, (struct journal_op){ .type = JOP_MKDIR, .path = "b", .mode = 040755 });
	assert_int_equal(apply_all(r, b), 0);
	event_base_dispatch(base);
	assert_int_equal(sy.calls, 1);
	assert_int_equal(sy.seq, 1);
	assert_int_equal(sy.err, 0);
	receiver_batch_committed(r, 1);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 1);
	assert_true(dirty);	/* "b" may be on disk already */
	assert_int_equal(receiver_idle(r), 0);	/* not idle: "b" is unsealed */
	assert_int_equal(receiver_batch_seal(r, 2, &set), 1);
	assert_int_equal(syncer_request(sc, 2, &set), 0);
	event_base_dispatch(base);
	assert_int_equal(sy.seq, 2);
	receiver_batch_committed(r, 2);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 2);
	assert_true(dirty);	/* stays dirty while the stream is active */
	assert_false(receiver_beyond_applied(r));
	assert_int_equal(receiver_idle(r), 1);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 2);
	assert_false(dirty);
	/* a seq-less job (the early fsync of a big batch's files) records
	 * and reports nothing */
	{
		struct timeval tv = { 0, 300000 };

		set.fds = malloc(sizeof(*set.fds));
		assert_non_null(set.fds);
		set.fds[0] = open(f->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(set.fds[0] >= 0);
		set.n = 1;
		set.whole_fs = false;
		assert_int_equal(syncer_request(sc, 0, &set), 0);
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
		assert_int_equal(syncer_pending_fds(sc), 0);	/* counted out again */
		assert_int_equal(sy.calls, 2);
		assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
		assert_int_equal(seq, 2);
		assert_false(dirty);
	}
	/* nothing new: a repeated or older BATCH_END is acked at once, even
	 * while the file still says dirty */
	assert_int_equal(state_applied_put(receiver_applied_file(r), 2, true), 0);
	assert_int_equal(receiver_batch_seal(r, 2, &set), 0);
	assert_int_equal(receiver_batch_seal(r, 1, &set), 0);
	receiver_get_stats(r, &st);
	assert_int_equal(st.applied_seq, 2);
	/* a request still in flight at stop is finished, not lost */
	set.whole_fs = true;
	assert_int_equal(syncer_request(sc, 3, &set), 0);
	assert_int_equal(syncer_stop(sc, &err), 3);
	assert_int_equal(err, 0);
	receiver_close(r);
	evbuffer_free(b);
	event_base_free(base);
}

struct spilled {
	int calls;
	size_t n;
};

/* A spill target that fsyncs at once, and counts. */
static int count_spill(struct sync_set *set, void *arg)
{
	struct spilled *sp = arg;

	sp->calls++;
	sp->n += set->n;
	return sync_set_run(set, -1);
}

/* Creates COUNT files PREFIX%05zu (with the given seqs) in one batch. */
static void create_many(struct receiver *r, struct evbuffer *b, const char *prefix,
			size_t count, bool with_data, uint64_t *seq)
{
	char path[32];

	for (size_t i = 0; i < count; i++) {
		snprintf(path, sizeof path, "%s%05zu", prefix, i);
		op(b, ++*seq, (struct journal_op){ .type = JOP_CREATE, .path = path,
						   .mode = 0100644 });
		if (with_data) {
			data(b, path, 0, "x");
			op(b, ++*seq, (struct journal_op){ .type = JOP_SETXATTR, .path = path,
							   .xname = "user.k", .xvalue = "v",
							   .xsize = 1 });
		}
		if (i % 512 == 511)	/* keep the frames buffered small */
			assert_int_equal(apply_all(r, b), 0);
	}
	assert_int_equal(apply_all(r, b), 0);
}

/*
 * A bulk copy's batch touches thousands of files: each is listed once,
 * however many of its frames touch it (the touch index), and up to
 * SYNCER_FSYNC_MAX (fewer under a low open-file limit: limits_touch_max)
 * the set is fsynced at the seal (on several threads).
 * Past that, the set so far is handed off early (receiver_set_spill, or
 * fsynced on the spot without one) and the batch goes on with a new set:
 * never a syncfs. Order of touches per CREATE: the file, then its
 * directory (the root here).
 */
static void test_large_touch_set(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct spilled sp = { 0 };
	struct sync_set set;
	uint64_t seq = 0;
	/* the set's size under this process's open-file limit */
	size_t tmax = limits_touch_max() < SYNCER_FSYNC_MAX ? limits_touch_max() :
		      SYNCER_FSYNC_MAX;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	create_many(r, b, "f", tmax - 1, true, &seq);	/* + the root */
	assert_int_equal(receiver_batch_seal(r, seq, &set), 1);
	assert_false(set.whole_fs);
	assert_int_equal(set.n, tmax);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	assert_int_equal(set.n, 0);
	assert_int_equal(receiver_batch_durable(r, seq), 0);

	/* two past the limit: one set of SYNCER_FSYNC_MAX handed off, the
	 * seal gets the last two files and the root */
	receiver_set_spill(r, count_spill, &sp);
	create_many(r, b, "g", tmax + 1, false, &seq);
	assert_int_equal(sp.calls, 1);
	assert_int_equal(sp.n, tmax);
	assert_int_equal(receiver_batch_seal(r, seq, &set), 1);
	assert_false(set.whole_fs);
	assert_int_equal(set.n, 3);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	assert_int_equal(receiver_batch_durable(r, seq), 0);

	/* the same without a spill target: fsynced on the spot */
	receiver_set_spill(r, NULL, NULL);
	create_many(r, b, "h", tmax + 1, false, &seq);
	assert_int_equal(sp.calls, 1);
	assert_int_equal(receiver_batch_seal(r, seq, &set), 1);
	assert_false(set.whole_fs);
	assert_int_equal(set.n, 3);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	receiver_close(r);
	evbuffer_free(b);
}

static void attr(struct evbuffer *b, const char *path, uint32_t mask, uint32_t mode,
		 uint64_t size)
{
	struct proto_attr a = { .path = path, .mask = mask, .mode = mode,
				.uid = (uint32_t)geteuid(), .gid = (uint32_t)getegid(),
				.size = size, .atime = { 1000, 0 }, .mtime = { 2000, 0 } };

	assert_int_equal(proto_encode_attr(b, &a), 0);
}

/*
 * A file's frames check "already in the touch set?" once per set (the
 * slot and the cached directory remember the set's generation), so each
 * new set must list them again: a file written in batch 1 and again in
 * batch 2 is fsynced at both seals. Owner and mode already right are not
 * set again, but a different mode, set-id bits and a size change are.
 */
static void test_touch_once_per_set(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct sync_set set;
	char full[PATH_MAX];
	struct stat st;
	const uint32_t all = JATTR_MODE | JATTR_UID | JATTR_GID | JATTR_SIZE |
			     JATTR_ATIME | JATTR_MTIME;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "d", .mode = 040755 });
	op(b, 2, (struct journal_op){ .type = JOP_CREATE, .path = "d/f", .mode = 0100644,
				      .uid = geteuid(), .gid = getegid() });
	data(b, "d/f", 0, "hello");
	attr(b, "d/f", all, 0100644, 5);
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(receiver_batch_seal(r, 2, &set), 1);
	assert_int_equal(set.n, 3);	/* the root, d, d/f */
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	assert_int_equal(receiver_batch_durable(r, 2), 0);

	/* batch 2: more data for the cached d/f, a new d/g */
	data(b, "d/f", 5, " world");
	op(b, 3, (struct journal_op){ .type = JOP_CREATE, .path = "d/g", .mode = 0100600,
				      .uid = geteuid(), .gid = getegid() });
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(receiver_batch_seal(r, 3, &set), 1);
	assert_false(set.whole_fs);
	assert_int_equal(set.n, 3);	/* d/f again, d/g, d again */
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	assert_int_equal(receiver_batch_durable(r, 3), 0);

	/* batch 3: only the attributes of d/f */
	attr(b, "d/f", all, 0104750, 11);
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(receiver_batch_seal(r, 3, &set), 1);
	assert_int_equal(set.n, 1);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	snprintf(full, sizeof full, "%s/d/f", f->store);
	assert_int_equal(stat(full, &st), 0);
	assert_int_equal(st.st_mode & 07777, 04750);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(st.st_mtim.tv_sec, 2000);
	/* same size, same owner: only the mode and times change; a smaller
	 * size still truncates */
	attr(b, "d/f", all, 0100640, 11);
	attr(b, "d/g", all, 0100600, 0);
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(stat(full, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 11);
	attr(b, "d/f", all, 0100640, 4);
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(stat(full, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(st.st_mtim.tv_sec, 2000);
	assert_int_equal(receiver_batch_seal(r, 3, &set), 1);
	assert_int_equal(set.n, 2);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	receiver_close(r);
	evbuffer_free(b);
}

/* Pages of FD in [off, off + len) that are in the page cache. */
static size_t resident_pages(int fd, off_t off, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = len / (size_t)pg, count = 0;
	unsigned char *vec = malloc(n);
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);

	assert_true(map != MAP_FAILED);
	assert_non_null(vec);
	assert_int_equal(mincore(map, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	munmap(map, len);
	free(vec);
	return count;
}

/*
 * A long contiguous run of DATA into one file: the pages more than
 * RECV_DROP_LAG (8 MiB) behind the last writeback kick leave the page
 * cache while the run goes on, the recent ones stay, and the file reads
 * back intact. (Skipped on tmpfs, whose pages cannot be dropped.)
 */
static void test_long_run_drops_written_pages(void **state)
{
	struct fx *f = *state;
	const size_t blk = 1u << 20, nblk = 24;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct sync_set set;
	struct statfs sfs;
	char p[200], *buf = malloc(blk), *back = malloc(blk);
	int fd;

	assert_non_null(buf);
	assert_non_null(back);
	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_CREATE, .path = "big", .mode = 0100644 });
	assert_int_equal(apply_all(r, b), 0);
	for (size_t i = 0; i < nblk; i++) {
		memset(buf, 'a' + (int)i, blk);
		assert_int_equal(proto_encode_data(b, "big", i * blk, buf, (uint32_t)blk,
						   NULL, NULL, NULL), 0);
		assert_int_equal(apply_all(r, b), 0);
	}
	snprintf(p, sizeof(p), "%s/big", f->store);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstatfs(fd, &sfs), 0);
	if (sfs.f_type != TMPFS_MAGIC) {
		/* the last kick ended at 24 MiB, so [0, 16 MiB) was dropped;
		 * dropping is best effort (a page the kick skipped stays), so
		 * allow a few of the first 8 MiB's 2048 pages */
		assert_true(resident_pages(fd, 0, 8 * blk) < 64);
		assert_true(resident_pages(fd, 20 * blk, 4 * blk) > 0);
	}
	for (size_t i = 0; i < nblk; i++) {
		memset(buf, 'a' + (int)i, blk);
		assert_int_equal(pread(fd, back, blk, (off_t)(i * blk)), (ssize_t)blk);
		assert_memory_equal(back, buf, blk);
	}
	close(fd);
	assert_int_equal(receiver_batch_seal(r, 1, &set), 1);
	assert_int_equal(sync_set_run(&set, receiver_store_fd(r)), 0);
	assert_int_equal(receiver_batch_durable(r, 1), 0);
	receiver_close(r);
	evbuffer_free(b);
	free(buf);
	free(back);
}

static void test_applied_file_torn_slot(void **state)
{
	struct fx *f = *state;
	char p[200];
	uint64_t seq;
	bool dirty;
	int fd;

	assert_int_equal(state_applied_write(f->state, 41, false), 0);
	assert_int_equal(state_applied_write(f->state, 42, true), 0);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 42);
	assert_true(dirty);
	/* tear the newest slot: the previous value comes back */
	snprintf(p, sizeof(p), "%s/applied", f->state);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	{
		char buf[129];
		off_t off = -1;

		for (off_t o = 0; o <= 4096; o += 4096) {
			assert_int_equal(pread(fd, buf, 128, o), 128);
			buf[128] = '\0';
			if (strstr(buf, "seq=00000000000000000042"))
				off = o;
		}
		assert_true(off >= 0);
		assert_int_equal(pwrite(fd, "X", 1, off + 30), 1);
	}
	close(fd);
	assert_int_equal(state_applied_read(f->state, &seq, &dirty), 0);
	assert_int_equal(seq, 41);
	assert_false(dirty);
}

/* Results: mtimes of new entries and of changed directories are the
 * primary's after the op; a whiteout rename leaves a 0:0 char device with
 * the primary's owner; a fifo in the way of data is never opened. */
static void test_results_whiteout_fifo(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	char p[200];
	struct stat st;
	const struct timespec t1 = { 1500000000, 11 }, t2 = { 1500000001, 22 },
			      t3 = { 1500000002, 33 };

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "d", .mode = 040755,
		.res_mask = JRES_BIT(JRES_PATH) | JRES_BIT(JRES_DIR),
		.res_mtime = { t1, { 0, 0 }, t2 } });
	op(b, 2, (struct journal_op){ .type = JOP_SYMLINK, .path = "d/s", .path2 = "x",
		.res_mask = JRES_BIT(JRES_PATH) | JRES_BIT(JRES_DIR),
		.res_mtime = { t2, { 0, 0 }, t3 } });
	op(b, 3, (struct journal_op){ .type = JOP_CREATE, .path = "d/f", .mode = 0100644 });
	op(b, 4, (struct journal_op){ .type = JOP_RENAME, .path = "d/f", .path2 = "g",
		.flags = RENAME_WHITEOUT, .uid = 12, .gid = 34,
		.res_mask = 0xf, .res_mtime = { t3, t1, t2, t1 } });
	op(b, 5, (struct journal_op){ .type = JOP_MKNOD, .path = "fifo", .mode = 010644 });
	data(b, "fifo", 0, "never");
	assert_int_equal(apply_all(r, b), -EISDIR);	/* refused, not blocked */
	snprintf(p, sizeof(p), "%s/d/s", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, t2.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, t2.tv_nsec);
	snprintf(p, sizeof(p), "%s/d/f", f->store);	/* the whiteout */
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, 0);
	assert_int_equal(st.st_mtim.tv_nsec, t3.tv_nsec);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, 12);
		assert_int_equal(st.st_gid, 34);
	}
	snprintf(p, sizeof(p), "%s/d", f->store);	/* the last op's value */
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mtim.tv_nsec, t2.tv_nsec);
	snprintf(p, sizeof(p), "%s/g", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mtim.tv_nsec, t1.tv_nsec);
	receiver_close(r);
	evbuffer_free(b);
}

/* REMOVEXATTR without a name keeps only the listed user/trusted xattrs. */
static void test_xattr_keep_list(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	char p[200], v[8];

	snprintf(p, sizeof(p), "%s/f", f->store);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY, 0644)), 0);
	if (setxattr(p, "user.keep", "1", 1, 0) < 0 || setxattr(p, "user.stale", "2", 1, 0) < 0 ||
	    setxattr(p, "user.old", "3", 1, 0) < 0) {
		evbuffer_free(b);
		skip();		/* no user xattrs on this filesystem */
	}
	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_REMOVEXATTR, .path = "f",
		.xvalue = "user.keep\0user.new\0", .xsize = 20 });
	op(b, 2, (struct journal_op){ .type = JOP_SETXATTR, .path = "f", .xname = "user.new",
		.xvalue = "4", .xsize = 1 });
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(getxattr(p, "user.keep", v, sizeof(v)), 1);
	assert_int_equal(getxattr(p, "user.new", v, sizeof(v)), 1);
	assert_int_equal(getxattr(p, "user.stale", v, sizeof(v)), -1);
	assert_int_equal(getxattr(p, "user.old", v, sizeof(v)), -1);
	/* an empty list removes them all */
	op(b, 3, (struct journal_op){ .type = JOP_REMOVEXATTR, .path = "f" });
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(listxattr(p, v, sizeof(v)), 0);
	receiver_close(r);
	evbuffer_free(b);
}

/* A folder's times read from the primary's store now may name a folder
 * the secondary does not hold at that point of the stream: flagged
 * PROTO_ATTR_IF_PRESENT it is skipped, unflagged it fails (a path that
 * should be there). A PRUNE of a folder that is not there, or whose parent
 * is not, removes nothing and succeeds. */
static void test_absent_folder_fixups(void **state)
{
	struct fx *f = *state;
	struct receiver *r;
	struct evbuffer *b = evbuffer_new();
	struct proto_attr a = { .path = "gone/sub", .mask = JATTR_MTIME | JATTR_ATIME,
				.mtime = { 1200000000, 9 } };
	struct proto_prune pr = { .seq = 3, .flags = PROTO_PRUNE_F_LAST, .path = "gone/sub" };
	struct proto_frame fr;
	struct proto_prune m;
	char p[200];
	struct stat st;

	assert_int_equal(receiver_open(f->store, f->state, &r), 0);
	op(b, 1, (struct journal_op){ .type = JOP_MKDIR, .path = "d", .mode = 040755 });
	assert_int_equal(apply_all(r, b), 0);
	assert_int_equal(proto_encode_attr(b, &a), 0);
	assert_int_equal(apply_all(r, b), -ENOENT);	/* strict: the path is missing */
	evbuffer_drain(b, evbuffer_get_length(b));
	a.mask |= PROTO_ATTR_IF_PRESENT;
	assert_int_equal(proto_encode_attr(b, &a), 0);
	a.path = "d";		/* present: set */
	assert_int_equal(proto_encode_attr(b, &a), 0);
	assert_int_equal(apply_all(r, b), 0);
	snprintf(p, sizeof(p), "%s/d", f->store);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(st.st_mtim.tv_nsec, 9);

	assert_int_equal(proto_encode_prune(b, &pr), 0);
	assert_int_equal(proto_frame_next(b, &fr), 1);
	assert_int_equal(proto_decode_prune(&fr, &m), 0);
	assert_int_equal(receiver_prune(r, &m), 0);	/* parent missing */
	proto_frame_consume(b, &fr);
	pr.path = "d/none";
	assert_int_equal(proto_encode_prune(b, &pr), 0);
	assert_int_equal(proto_frame_next(b, &fr), 1);
	assert_int_equal(proto_decode_prune(&fr, &m), 0);
	assert_int_equal(receiver_prune(r, &m), 0);	/* folder missing */
	proto_frame_consume(b, &fr);
	receiver_close(r);
	evbuffer_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_check_table),
		cmocka_unit_test_setup_teardown(test_path_blocked_at, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_resolve_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_and_replay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirty_mark_until_batch_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_hash_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_escape_through_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_replay_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cached_paths_follow_renames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_seal_and_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_applied_file_torn_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_touch_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_touch_once_per_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_run_drops_written_pages, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_results_whiteout_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattr_keep_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absent_folder_fixups, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
