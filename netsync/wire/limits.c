/*
 * limits — the per-connection caps (limits.h): the check serve's loop runs
 * before each frame it applies, the fd budgets derived from the open-file
 * limit, and the frame-size cap by the sender's role. Stateless; any
 * thread.
 */
#include "netsync/wire/limits.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* The most the syncer's queue and one touch set may hold, whatever the
 * open-file limit (the syncer fsyncs at most 4096 fds per job). */
#define LIMITS_SYNC_FDS_CEIL 8192u
#define LIMITS_TOUCH_CEIL 4096u
#define LIMITS_FDS_FLOOR 16u

static size_t limits_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1u << 20;
	return (size_t)rl.rlim_cur;
}

static size_t limits_share(size_t div, size_t ceil)
{
	size_t n = limits_nofile() / div;

	if (n > ceil)
		n = ceil;
	return n < LIMITS_FDS_FLOOR ? LIMITS_FDS_FLOOR : n;
}

size_t limits_sync_fds_max(void)
{
	return limits_share(4, LIMITS_SYNC_FDS_CEIL);
}

size_t limits_touch_max(void)
{
	return limits_share(8, LIMITS_TOUCH_CEIL);
}

enum limits_over limits_check(const struct limits_use *u, bool paused)
{
	size_t out_max = paused ? LIMITS_OUT_LOW : LIMITS_OUT_MAX;
	size_t fds_max = limits_sync_fds_max();
	size_t jobs_max = LIMITS_SYNC_JOBS_MAX;

	if (paused) {
		fds_max /= 2;
		jobs_max /= 2;
	}
	if (u->out_bytes > out_max)
		return LIMITS_OVER_OUTPUT;
	if (u->sync_fds >= fds_max)
		return LIMITS_OVER_SYNC_FDS;
	if (u->sync_jobs >= jobs_max)
		return LIMITS_OVER_SYNC_JOBS;
	return LIMITS_OK;
}

void limits_abort_on_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

const char *limits_frame_error(int rc)
{
	switch (rc) {
	case -EMSGSIZE:
		return "a frame larger than a secondary ever sends";
	case -EPROTO:
		return "a frame of a type a secondary never sends";
	default:
		return "a bad frame (magic, type, length or checksum)";
	}
}

const char *limits_over_name(enum limits_over why)
{
	switch (why) {
	case LIMITS_OK:
		return "none";
	case LIMITS_OVER_OUTPUT:
		return "output";
	case LIMITS_OVER_SYNC_FDS:
		return "sync_fds";
	case LIMITS_OVER_SYNC_JOBS:
		return "sync_jobs";
	case LIMITS_STORE_FULL:
		return "store_full";
	}
	return "?";
}

/* The largest payload of TYPE a secondary ever sends; 0 for a type it
 * never sends. Lists (HASHES, TAIL, DIVERGED) and OP (a version's xattr
 * in a split brain's resolution, values up to 64 KiB) go up to the
 * protocol's 256 KiB; DATA (its versions of files) in PROTO_BLOCK_SIZE
 * blocks. */
static uint32_t limits_secondary_max(unsigned type)
{
	switch (type) {
	case PROTO_HELLO:
	case PROTO_ACK:
	case PROTO_HEARTBEAT:
	case PROTO_GOODBYE:
	case PROTO_ERROR:
	case PROTO_ENTRY:
	case PROTO_ENTRIES_END:
	case PROTO_RESOLVE:
		return LIMITS_FROM_SECONDARY_MAX;
	case PROTO_HASHES:
	case PROTO_TAIL:
	case PROTO_DIVERGED:
	case PROTO_OP:
		return PROTO_MAX_META_PAYLOAD;
	case PROTO_DATA:
		return PROTO_BLOCK_SIZE + 8192u;
	default:
		return 0;
	}
}

int limits_frame_next(struct evbuffer *in, unsigned from, struct proto_frame *f)
{
	uint8_t hdr[PROTO_HDR_LEN];
	struct proto_hdr h;

	if (from == PROTO_ROLE_SECONDARY && evbuffer_get_length(in) >= PROTO_HDR_LEN &&
	    evbuffer_copyout(in, hdr, sizeof(hdr)) == (ev_ssize_t)sizeof(hdr) &&
	    proto_hdr_parse(hdr, &h) == 0) {
		uint32_t max = limits_secondary_max(h.type);

		if (!max)
			return -EPROTO;
		if (h.len > max)
			return -EMSGSIZE;
	}
	return proto_frame_next(in, f);
}
