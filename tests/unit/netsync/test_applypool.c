/* Unit tests for netsync/secondary/applypool: file runs applied on worker
 * threads end the store as the same frames applied in order by one
 * receiver; a second run for a path since the last drain is refused (the
 * caller applies it after a drain); a replacement's RENAME goes with its
 * run; a failing run (a path through a symlink) is reported with the
 * words serve uses, and nothing escapes; more frames than the queues
 * hold wait for room. Frames come through a real link over a socketpair,
 * as in a mirror session. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "netsync/secondary/applypool.h"
#include "netsync/secondary/receiver.h"
#include "netsync/wire/link.h"
#include "netsync/wire/proto.h"

struct fx {
	char top[64], store[96];
	struct link tx, rx;
	struct evbuffer *out;
	struct applypool *pool;
	struct receiver *r;	/* the caller's own, for what is not a run */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int sp[2];

	strcpy(f->top, "/tmp/twinfs-pool.XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->store, sizeof(f->store), "%s/store", f->top);
	assert_int_equal(mkdir(f->store, 0755), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(link_init(&f->tx, 5000), 0);
	assert_int_equal(link_init(&f->rx, 5000), 0);
	assert_int_equal(link_adopt(&f->tx, sp[0], NULL, NULL), 0);
	assert_int_equal(link_adopt(&f->rx, sp[1], NULL, NULL), 0);
	f->out = evbuffer_new();
	assert_int_equal(applypool_start(f->store, &f->pool), 0);
	assert_int_equal(receiver_open(f->store, NULL, &f->r), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[160];

	applypool_stop(f->pool);
	receiver_close(f->r);
	link_close(&f->tx);
	link_close(&f->rx);
	evbuffer_free(f->out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->top);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* ---- the sending side ---- */

static void op(struct fx *f, enum journal_op_type type, const char *path, const char *path2,
	       uint32_t mode)
{
	struct journal_op o = { .type = type, .path = path, .path2 = path2, .mode = mode,
				.uid = getuid(), .gid = getgid() };

	assert_int_equal(proto_encode_op(f->out, 1, &o), 0);
}

static void data_free(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

/* TEXT copied: the frame holds its block by reference until sent. */
static void data(struct fx *f, const char *path, const char *text)
{
	char *copy = strdup(text);

	assert_non_null(copy);
	assert_int_equal(proto_encode_data(f->out, path, 0, copy, (uint32_t)strlen(text),
					   data_free, NULL, NULL), 0);
}

static void attr(struct fx *f, const char *path, uint64_t size, int64_t mtime)
{
	struct proto_attr a = { .path = path, .mask = JATTR_MODE | JATTR_SIZE | JATTR_MTIME,
				.mode = 0640, .size = size, .mtime = { mtime, 0 } };

	assert_int_equal(proto_encode_attr(f->out, &a), 0);
}

/* A whole file as a mirror sends it: CREATE, DATA, ATTR. */
static void file(struct fx *f, const char *path, const char *text, int64_t mtime)
{
	op(f, JOP_CREATE, path, NULL, 0600);
	data(f, path, text);
	attr(f, path, strlen(text), mtime);
}

/* ---- the session's side: every frame sent so far, as ms_dispatch ---- */

/* Offers every frame sent so far; returns how many the pool refused
 * (applied here after a drain), or stops at a failed drain (*DRAIN_RC). */
static int offer_sent(struct fx *f, int *drain_rc)
{
	struct proto_frame fr;
	int refused = 0;

	assert_int_equal(link_send(&f->tx, f->out), 0);
	*drain_rc = 0;
	while (link_recv(&f->rx, &fr, false) == 1) {
		struct link_slab *s = link_hold(&f->rx);
		int rc = applypool_offer(f->pool, &fr, s);

		if (rc == 1)
			continue;
		link_slab_put(s);
		rc = applypool_drain(f->pool);
		if (rc < 0) {
			*drain_rc = rc;
			return refused;
		}
		if (rc == 1)
			receiver_forget(f->r);
		refused++;
		if (fr.h.type == PROTO_OP) {
			struct proto_op o;

			assert_int_equal(proto_decode_op(&fr, &o), 0);
			assert_int_equal(receiver_op(f->r, &o), 0);
		} else if (fr.h.type == PROTO_DATA) {
			struct proto_data d;

			assert_int_equal(proto_decode_data(&fr, &d), 0);
			assert_int_equal(receiver_data(f->r, &d), 0);
		} else if (fr.h.type == PROTO_ATTR) {
			struct proto_attr a;

			assert_int_equal(proto_decode_attr(&fr, &a), 0);
			assert_int_equal(receiver_attr(f->r, &a), 0);
		}
		applypool_forget(f->pool);
	}
	return refused;
}

/* Returns how many frames the pool refused (applied here after a drain). */
static int apply_all(struct fx *f, int *drain_rc)
{
	int refused = offer_sent(f, drain_rc);

	if (*drain_rc < 0)
		return refused;
	*drain_rc = applypool_drain(f->pool);
	if (*drain_rc < 0) {
		const char *text;

		applypool_error(f->pool, &text);
		fprintf(stderr, "# the pool failed: %s\n", text);
	}
	return refused;
}

static void expect_file(struct fx *f, const char *path, const char *text, int64_t mtime)
{
	char full[256], buf[256] = { 0 };
	struct stat st;
	int fd;

	snprintf(full, sizeof(full), "%s/%s", f->store, path);
	assert_int_equal(stat(full, &st), 0);
	assert_int_equal(st.st_size, (off_t)strlen(text));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, mtime);
	fd = open(full, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(text));
	close(fd);
	assert_string_equal(buf, text);
}

/* Many files in two folders: all there, each as its run said. */
static void test_runs(void **state)
{
	struct fx *f = *state;
	char path[64], text[64];
	int rc;

	op(f, JOP_MKDIR, "a", NULL, 0755);
	op(f, JOP_MKDIR, "b", NULL, 0755);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "%s/f%03d", i % 2 ? "a" : "b", i);
		snprintf(text, sizeof(text), "content of file %d", i);
		file(f, path, text, 1000000 + i);
	}
	/* the two MKDIRs only: every file's frames are runs */
	assert_int_equal(apply_all(f, &rc), 2);
	assert_int_equal(rc, 1);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "%s/f%03d", i % 2 ? "a" : "b", i);
		snprintf(text, sizeof(text), "content of file %d", i);
		expect_file(f, path, text, 1000000 + i);
	}
}

/* More frames than the workers' queues hold (AP_QUEUE each), offered
 * as fast as the link gives them: the session waits for room (until a
 * queue is half empty) and goes on; nothing is lost or reordered. */
static void test_full(void **state)
{
	struct fx *f = *state;
	char path[64], text[64];
	int rc;

	for (int d = 0; d < 4; d++) {
		snprintf(path, sizeof(path), "d%d", d);
		op(f, JOP_MKDIR, path, NULL, 0755);
	}
	assert_int_equal(offer_sent(f, &rc), 4);
	assert_int_equal(rc, 0);
	for (int i = 0; i < 6000; i++) {
		snprintf(path, sizeof(path), "d%d/f%04d", i % 4, i);
		snprintf(text, sizeof(text), "file %d", i);
		file(f, path, text, 2000000 + i);
		if (i % 100 == 99) {
			assert_int_equal(offer_sent(f, &rc), 0);
			assert_int_equal(rc, 0);
		}
	}
	assert_int_equal(applypool_drain(f->pool), 1);
	for (int i = 0; i < 6000; i++) {
		snprintf(path, sizeof(path), "d%d/f%04d", i % 4, i);
		snprintf(text, sizeof(text), "file %d", i);
		expect_file(f, path, text, 2000000 + i);
	}
}

/* The same path twice, and a replacement renamed over a file: the second
 * run waits for the first (the pool refuses it), so the result is the
 * order the frames came in. */
static void test_same_path(void **state)
{
	struct fx *f = *state;
	int rc, refused;

	file(f, "x", "first", 100);
	file(f, "y", "other", 200);
	file(f, "x", "second!", 300);		/* x again before a drain */
	file(f, ".~tmp.1", "replaced", 400);	/* a replacement of y... */
	op(f, JOP_RENAME, ".~tmp.1", "y", 0);	/* ...moved over it */
	refused = apply_all(f, &rc);
	assert_int_equal(rc, 1);
	/* x's second CREATE, DATA and ATTR were applied by the caller */
	assert_int_equal(refused, 3);
	expect_file(f, "x", "second!", 300);
	expect_file(f, "y", "replaced", 400);
}

/* A run that fails (its folder is a symlink on the store: a path not
 * allowed) is reported, in the words a primary would get, and the drain
 * says so. */
static void test_failure(void **state)
{
	struct fx *f = *state;
	char full[160];
	const char *text;
	int rc;

	snprintf(full, sizeof(full), "%s/lnk", f->store);
	assert_int_equal(symlink("/tmp", full), 0);
	file(f, "lnk/escaped", "must not be written", 100);
	(void)apply_all(f, &rc);
	assert_int_equal(rc, -EIO);
	assert_int_equal(applypool_error(f->pool, &text), PROTO_E_PATH);
	assert_non_null(strstr(text, "'lnk/escaped'"));
	assert_int_equal(access("/tmp/escaped", F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
