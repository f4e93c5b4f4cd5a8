/* Unit tests for netsync/wire/limits: the caps that stop serve reading
 * (with their low marks), the fd budgets under an open-file limit, and
 * the frame cap by the sender's role, decided from the header alone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "netsync/wire/limits.h"
#include "netsync/wire/proto.h"

static void test_check_caps(void **state)
{
	size_t fds = limits_sync_fds_max();
	static const struct {
		struct limits_use u;
		bool paused;
		enum limits_over want;
	} cases[] = {
		{ { 0, 0, 0 }, false, LIMITS_OK },
		{ { LIMITS_OUT_MAX, 0, 0 }, false, LIMITS_OK },
		{ { LIMITS_OUT_MAX + 1, 0, 0 }, false, LIMITS_OVER_OUTPUT },
		/* paused: over until below the low mark */
		{ { LIMITS_OUT_LOW + 1, 0, 0 }, true, LIMITS_OVER_OUTPUT },
		{ { LIMITS_OUT_LOW, 0, 0 }, true, LIMITS_OK },
		{ { 0, 0, LIMITS_SYNC_JOBS_MAX - 1 }, false, LIMITS_OK },
		{ { 0, 0, LIMITS_SYNC_JOBS_MAX }, false, LIMITS_OVER_SYNC_JOBS },
		{ { 0, 0, LIMITS_SYNC_JOBS_MAX / 2 }, true, LIMITS_OVER_SYNC_JOBS },
		{ { 0, 0, LIMITS_SYNC_JOBS_MAX / 2 - 1 }, true, LIMITS_OK },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(limits_check(&cases[i].u, cases[i].paused), cases[i].want);
	assert_int_equal(limits_check(&(struct limits_use){ .sync_fds = fds - 1 }, false),
			 LIMITS_OK);
	assert_int_equal(limits_check(&(struct limits_use){ .sync_fds = fds }, false),
			 LIMITS_OVER_SYNC_FDS);
	assert_int_equal(limits_check(&(struct limits_use){ .sync_fds = fds / 2 }, true),
			 LIMITS_OVER_SYNC_FDS);
	assert_int_equal(limits_check(&(struct limits_use){ .sync_fds = fds / 2 - 1 }, true),
			 LIMITS_OK);
	assert_string_equal(limits_over_name(LIMITS_OVER_OUTPUT), "output");
}

/* The fd budgets follow the open-file limit: a quarter and an eighth,
 * within their ceilings. */
static void test_fd_budgets(void **state)
{
	struct rlimit old, rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(limits_sync_fds_max(), 256);
	assert_int_equal(limits_touch_max(), 128);
	if (old.rlim_max == RLIM_INFINITY || old.rlim_max >= 1u << 17) {
		rl.rlim_cur = 1u << 17;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
		assert_int_equal(limits_sync_fds_max(), 8192);
		assert_int_equal(limits_touch_max(), 4096);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void put_header(struct evbuffer *b, uint16_t type, uint32_t len)
{
	uint8_t hdr[PROTO_HDR_LEN];
	struct proto_hdr h = { .type = type, .len = len, .clen = len };

	if (type == PROTO_DATA)
		h.clen = 8192;	/* fixed fields and path; the rest is the block */
	proto_hdr_write(hdr, &h);
	evbuffer_add(b, hdr, sizeof(hdr));
}

/* From a secondary: a type it never sends, or a size over the cap, is
 * refused at the header, before any payload arrived; from a primary the
 * same headers only wait for their payload. */
static void test_frame_cap(void **state)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_frame f;

	/* a secondary sends DATA in 1 MiB blocks (a resolution), never 16 */
	put_header(b, PROTO_DATA, PROTO_MAX_DATA_PAYLOAD);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), -EMSGSIZE);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_PRIMARY, &f), 0);
	evbuffer_drain(b, evbuffer_get_length(b));
	put_header(b, PROTO_DATA, PROTO_BLOCK_SIZE + 8192);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), 0);
	evbuffer_drain(b, evbuffer_get_length(b));

	/* a type a secondary never sends */
	put_header(b, PROTO_PRUNE, 100);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), -EPROTO);
	evbuffer_drain(b, evbuffer_get_length(b));

	put_header(b, PROTO_ERROR, LIMITS_FROM_SECONDARY_MAX + 1);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), -EMSGSIZE);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_PRIMARY, &f), 0);
	evbuffer_drain(b, evbuffer_get_length(b));

	put_header(b, PROTO_ERROR, LIMITS_FROM_SECONDARY_MAX);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), 0);	/* waits */
	evbuffer_drain(b, evbuffer_get_length(b));

	/* a whole ACK passes as proto_frame_next has it */
	proto_encode_ack(b, 42);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), 1);
	assert_int_equal(f.h.type, PROTO_ACK);
	proto_frame_consume(b, &f);

	/* garbage is still garbage */
	evbuffer_add(b, "XYZW", 4);
	assert_int_equal(limits_frame_next(b, PROTO_ROLE_SECONDARY, &f), -EBADMSG);
	assert_string_equal(limits_frame_error(-EMSGSIZE),
			    "a frame larger than a secondary ever sends");
	evbuffer_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_caps),
		cmocka_unit_test(test_fd_budgets),
		cmocka_unit_test(test_frame_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
