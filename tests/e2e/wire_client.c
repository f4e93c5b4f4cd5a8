/*
 * wire_client — a scripted primary for the e2e tests of `twinfs serve`.
 * It speaks the real protocol through netsync/proto.h (or deliberately
 * breaks it) over a real TCP connection and checks how serve answers:
 *   wire_client HOST PORT MODE      (exit 0: serve behaved as expected)
 *   wire_client ctl STATE_DIR REQUEST   (prints the control socket reply)
 * Modes: valid NAME (mkdir+create+data+attr+batch, expects ACK), stream
 * NAME MIB (throughput: MIB MiB in 1 MiB blocks, waits for the ACK), small
 * NAME N SIZE PER (N files in 20 folders, a batch every PER), latency NAME
 * N SIZE (N one-file batches, each waiting for its ACK), silent
 * (HELLO then nothing: expects heartbeats, then a drop), garbage,
 * http, truncated, badcheck, badhash, escape, oversized, version, busy;
 * mirror-bad KIND, a mirror client sending what must be refused (KIND:
 * dotdot, absolute, symlink, nul, tree-escape, hash-escape, hashes).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "netsync/control/control.h"
#include "netsync/wire/proto.h"
#include "netsync/wire/wire.h"

#define TIMEOUT_MS 5000

static const char *host, *port;

static int conn_open(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd;

	if (getaddrinfo(host, port, &hints, &res) != 0) {
		fprintf(stderr, "wire_client: cannot resolve %s\n", host);
		exit(2);
	}
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		fprintf(stderr, "wire_client: connect %s:%s: %s\n", host, port, strerror(errno));
		exit(2);
	}
	freeaddrinfo(res);
	return fd;
}

static int send_buf_try(int fd, struct evbuffer *b)
{
	while (evbuffer_get_length(b))
		if (evbuffer_write(b, fd) < 0)
			return -errno;
	return 0;
}

/* Sends B while reading what serve says: a serve that holds the stream
 * (a full store: ERROR with RETRY, no close) stops reading, and a blocking
 * send would wait for ever. -1 once an ERROR arrived (it stays in IN) or
 * the connection failed. */
static int send_buf_watch(int fd, struct evbuffer *b, struct evbuffer *in)
{
	while (evbuffer_get_length(b)) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
		struct proto_frame f;

		if (poll(&p, 1, TIMEOUT_MS) <= 0)
			return -1;
		if (p.revents & POLLIN) {
			if (evbuffer_read(in, fd, 65536) <= 0)
				return -1;
			while (proto_frame_next(in, &f) == 1) {
				if (f.h.type == PROTO_ERROR)
					return -1;
				proto_frame_consume(in, &f);
			}
		}
		if ((p.revents & POLLOUT) && evbuffer_write(b, fd) < 0 && errno != EAGAIN)
			return -1;
	}
	return 0;
}

static void send_buf(int fd, struct evbuffer *b)
{
	int rc = send_buf_try(fd, b);

	if (rc < 0) {
		fprintf(stderr, "wire_client: send: %s\n", strerror(-rc));
		exit(2);
	}
}

static void send_raw(int fd, const void *p, size_t n)
{
	if (send(fd, p, n, MSG_NOSIGNAL) != (ssize_t)n) {
		fprintf(stderr, "wire_client: send: %s\n", strerror(errno));
		exit(2);
	}
}

/* Reads the next frame (type in *type; payload copied to the caller's
 * frame buffer). Returns 1, 0 on EOF/timeout, -1 on a bad frame. */
static int recv_frame(int fd, struct evbuffer *in, struct proto_frame *f)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int rc = proto_frame_next(in, f);

		if (rc != 0)
			return rc < 0 ? -1 : 1;
		if (poll(&p, 1, TIMEOUT_MS) <= 0)
			return 0;
		if (evbuffer_read(in, fd, 65536) <= 0)
			return 0;
	}
}

/* Waits for serve's HELLO; returns its applied_seq. */
static uint64_t expect_hello(int fd, struct evbuffer *in)
{
	struct proto_frame f;
	struct proto_hello h;
	uint64_t seq;

	if (recv_frame(fd, in, &f) != 1 || f.h.type != PROTO_HELLO ||
	    proto_decode_hello(&f, &h) < 0 || h.role != PROTO_ROLE_SECONDARY) {
		fprintf(stderr, "wire_client: no valid HELLO from serve\n");
		exit(1);
	}
	seq = h.applied_seq;
	proto_frame_consume(in, &f);
	return seq;
}

static void send_hello(int fd, uint32_t version)
{
	struct evbuffer *b = evbuffer_new();
	/* one primary with one generation, whose journal reaches far: a
	 * store it fed before is a prefix of it on every run */
	struct proto_hello h = {
		.version = version, .role = PROTO_ROLE_PRIMARY, .generation = 1,
		.name = "wire-client", .head_seq = 1ull << 40, .hist_n = 1,
		.hist = { { .num = 1, .id = 0x77697265636c6e74ull, .start = 0 } },
	};

	memcpy(h.node_id, "wire-client-node", 16);
	memcpy(h.hist[0].node, "wire-client-node", 16);
	proto_encode_hello(b, &h);
	send_buf(fd, b);
	evbuffer_free(b);
}

/* Expects an ERROR with CODE (0: any error) and then the connection
 * closed by serve. Returns 0 if so. */
static int expect_error_and_close(int fd, struct evbuffer *in, uint32_t code)
{
	struct proto_frame f;
	struct proto_error e;
	char c;
	int rc;

	for (;;) {
		rc = recv_frame(fd, in, &f);
		if (rc != 1) {
			fprintf(stderr, "wire_client: connection ended without an ERROR\n");
			return code ? 1 : 0;
		}
		if (f.h.type == PROTO_ERROR)
			break;
		proto_frame_consume(in, &f);	/* e.g. a HELLO or heartbeat */
	}
	if (proto_decode_error(&f, &e) < 0)
		return 1;
	printf("error %s: %s\n", proto_err_name(e.code), e.text);
	if (code && e.code != code && e.code == PROTO_E_BUSY)
		return 3;	/* the slot is still taken: the caller may retry */
	if (code && e.code != code) {
		fprintf(stderr, "wire_client: expected ERROR %s, got %s\n",
			proto_err_name(code), proto_err_name(e.code));
		return 1;
	}
	proto_frame_consume(in, &f);
	/* serve must close now */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, TIMEOUT_MS) <= 0 || recv(fd, &c, 1, 0) != 0) {
			fprintf(stderr, "wire_client: serve did not close after ERROR\n");
			return 1;
		}
	}
	return 0;
}

/* Expects serve to close the connection (EOF) without us sending more. */
static int expect_close(int fd)
{
	char buf[4096];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, TIMEOUT_MS) <= 0) {
			fprintf(stderr, "wire_client: serve kept the connection open\n");
			return 1;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return 0;
	}
}

static int mode_valid(const char *name)
{
	int fd = conn_open();
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	static const char content[] = "replicated by the wire client\n";
	char path[256];
	uint64_t seq;
	struct proto_frame f;
	struct proto_attr a = { .mask = JATTR_SIZE | JATTR_MODE | JATTR_MTIME,
				.size = sizeof(content) - 1, .mode = 0100640,
				.mtime = { 1234567890, 0 } };

	send_hello(fd, PROTO_VERSION);
	seq = expect_hello(fd, in);
	snprintf(path, sizeof(path), "%s/file", name);
	a.path = path;
	proto_encode_op(out, seq + 1, &(struct journal_op){ .type = JOP_MKDIR, .path = name,
							   .mode = 040755 });
	proto_encode_op(out, seq + 2, &(struct journal_op){ .type = JOP_CREATE, .path = path,
							   .mode = 0100600 });
	proto_encode_data(out, path, 0, content, sizeof(content) - 1, NULL, NULL, NULL);
	proto_encode_attr(out, &a);
	proto_encode_batch_end(out, seq + 3);
	send_buf(fd, out);
	for (;;) {
		uint64_t acked;

		if (recv_frame(fd, in, &f) != 1) {
			fprintf(stderr, "wire_client: no ACK\n");
			return 1;
		}
		if (f.h.type == PROTO_ERROR) {
			struct proto_error e;

			proto_decode_error(&f, &e);
			fprintf(stderr, "wire_client: ERROR %s: %s\n", proto_err_name(e.code), e.text);
			return 1;
		}
		if (f.h.type == PROTO_ACK && proto_decode_seq(&f, &acked) == 0) {
			printf("acked %llu\n", (unsigned long long)acked);
			if (acked != seq + 3)
				return 1;
			break;
		}
		proto_frame_consume(in, &f);
	}
	proto_frame_consume(in, &f);
	proto_encode_goodbye(out, "done");
	send_buf(fd, out);
	close(fd);
	evbuffer_free(in);
	evbuffer_free(out);
	return 0;
}

/* Streams MIB MiB into NAME in 1 MiB DATA blocks (batches of 64 MiB),
 * waits for the last ACK and prints the rate. For measuring serve. */
static int mode_stream(const char *name, unsigned mib)
{
	int fd = conn_open();
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t bs = PROTO_BLOCK_SIZE;
	uint8_t *block = malloc(bs);
	uint64_t seq, last = 0;
	struct proto_frame f;
	struct timespec t0, t1;
	int rc = 1;
	double s;

	for (size_t i = 0; i < bs; i++)
		block[i] = (uint8_t)(i * 2654435761u >> 13);
	send_hello(fd, PROTO_VERSION);
	seq = expect_hello(fd, in);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);	/* send_buf_watch */
	proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_CREATE, .path = name,
							 .mode = 0100644 });
	for (unsigned i = 0; i < mib; i++) {
		/* the block is added by reference: the same buffer is sent again,
		 * which is fine because it never changes */
		proto_encode_data(out, name, (uint64_t)i * bs, block, (uint32_t)bs,
				  NULL, NULL, NULL);
		if ((i + 1) % 64 == 0 || i + 1 == mib)
			proto_encode_batch_end(out, last = ++seq);
		if (send_buf_watch(fd, out, in) < 0)
			break;	/* serve closed, or said ERROR: read it below */
	}
	for (;;) {
		uint64_t acked;

		if (recv_frame(fd, in, &f) != 1)
			goto out_free;
		if (f.h.type == PROTO_ERROR) {
			struct proto_error e;

			if (proto_decode_error(&f, &e) == 0)
				printf("error %s: %s\n", proto_err_name(e.code), e.text);
			goto out_free;
		}
		if (f.h.type == PROTO_ACK && proto_decode_seq(&f, &acked) == 0 && acked >= last)
			break;
		proto_frame_consume(in, &f);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("streamed %u MiB in %.3f s: %.1f MiB/s (acked %llu, durable on serve)\n",
	       mib, s, mib / s, (unsigned long long)last);
	rc = 0;
out_free:
	close(fd);
	evbuffer_free(in);
	evbuffer_free(out);	/* before the block it references */
	free(block);
	return rc;
}

/* Creates N files of SIZE bytes in 20 folders (CREATE, DATA, ATTR each),
 * a BATCH_END every PER files, waits for the last ACK, prints files/s. */
static int mode_small(const char *name, unsigned n, unsigned size, unsigned per)
{
	int fd = conn_open();
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	uint8_t *block = malloc(size ? size : 1);
	uint64_t seq, last = 0;
	struct proto_frame f;
	struct timespec t0, t1;
	char path[512];
	double s;

	memset(block, 'q', size);
	send_hello(fd, PROTO_VERSION);
	seq = expect_hello(fd, in);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_MKDIR, .path = name,
							 .mode = 040755 });
	for (unsigned d = 0; d < 20; d++) {
		snprintf(path, sizeof(path), "%s/d%02u", name, d);
		proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_MKDIR,
								 .path = path, .mode = 040755 });
	}
	for (unsigned i = 0; i < n; i++) {
		struct proto_attr a = { .path = path, .mask = JATTR_SIZE | JATTR_MODE | JATTR_MTIME,
					.size = size, .mode = 0100644, .mtime = { 1700000000, 0 } };

		snprintf(path, sizeof(path), "%s/d%02u/f%05u", name, i % 20, i);
		proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_CREATE,
								 .path = path, .mode = 0100644 });
		proto_encode_data(out, path, 0, block, size, NULL, NULL, NULL);
		proto_encode_attr(out, &a);
		if ((i + 1) % per == 0 || i + 1 == n)
			proto_encode_batch_end(out, last = ++seq);
		if (evbuffer_get_length(out) > (1u << 20) || i + 1 == n)
			send_buf(fd, out);
	}
	for (;;) {
		uint64_t acked;

		if (recv_frame(fd, in, &f) != 1 || f.h.type == PROTO_ERROR)
			return 1;
		if (f.h.type == PROTO_ACK && proto_decode_seq(&f, &acked) == 0 && acked >= last)
			break;
		proto_frame_consume(in, &f);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("applied %u files of %u bytes (batches of %u) in %.3f s: %.0f files/s\n",
	       n, size, per, s, n / s);
	close(fd);
	free(block);
	evbuffer_free(in);
	evbuffer_free(out);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sync-mode round trips: N times one file of SIZE bytes (CREATE, DATA,
 * ATTR, BATCH_END) and wait for its ACK; prints median/p99/max in ms. */
static int mode_latency(const char *name, unsigned n, unsigned size)
{
	int fd = conn_open();
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	uint8_t *block = malloc(size ? size : 1);
	double *ms = calloc(n, sizeof(*ms));
	struct proto_frame f;
	char path[512];
	uint64_t seq;

	memset(block, 'l', size);
	send_hello(fd, PROTO_VERSION);
	seq = expect_hello(fd, in);
	proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_MKDIR, .path = name,
							 .mode = 040755 });
	for (unsigned i = 0; i < n; i++) {
		struct proto_attr a = { .path = path, .mask = JATTR_SIZE | JATTR_MTIME,
					.size = size, .mtime = { 1700000000, 0 } };
		struct timespec t0, t1;
		uint64_t acked = 0;

		snprintf(path, sizeof(path), "%s/f%05u", name, i);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_CREATE,
								 .path = path, .mode = 0100644 });
		proto_encode_data(out, path, 0, block, size, NULL, NULL, NULL);
		proto_encode_attr(out, &a);
		proto_encode_batch_end(out, ++seq);
		send_buf(fd, out);
		while (acked < seq) {
			if (recv_frame(fd, in, &f) != 1 || f.h.type == PROTO_ERROR)
				return 1;
			if (f.h.type == PROTO_ACK)
				proto_decode_seq(&f, &acked);
			proto_frame_consume(in, &f);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	}
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf("%u round trips of one %u-byte file: median %.2f ms, p99 %.2f ms, max %.2f ms\n",
	       n, size, ms[n / 2], ms[(size_t)(n * 0.99)], ms[n - 1]);
	close(fd);
	free(ms);
	free(block);
	evbuffer_free(in);
	evbuffer_free(out);
	return 0;
}

/* Says HELLO, then nothing: serve must send heartbeats and drop the
 * connection after 5 silent heartbeat intervals. */
static int mode_silent(void)
{
	int fd = conn_open();
	struct evbuffer *in = evbuffer_new();
	struct timespec t0, t1;
	struct proto_frame f;
	int beats = 0, rc;
	double s;

	send_hello(fd, PROTO_VERSION);
	expect_hello(fd, in);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((rc = recv_frame(fd, in, &f)) == 1) {
		if (f.h.type == PROTO_HEARTBEAT)
			beats++;
		proto_frame_consume(in, &f);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("dropped after %.1f s, %d heartbeats\n", s, beats);
	close(fd);
	evbuffer_free(in);
	/* 5 intervals of 1 s; slack for a loaded machine */
	return beats >= 3 && s >= 4.0 && s <= 12.0 ? 0 : 1;
}

/* A valid CREATE op frame as raw bytes. */
static size_t op_bytes(uint8_t *buf, size_t cap, const char *path)
{
	struct evbuffer *b = evbuffer_new();
	size_t n;

	proto_encode_op(b, 1, &(struct journal_op){ .type = JOP_CREATE, .path = path,
						    .mode = 0100644 });
	n = evbuffer_get_length(b);
	if (n > cap)
		exit(2);
	evbuffer_remove(b, buf, n);
	evbuffer_free(b);
	return n;
}

/* Re-computes the check of the frame in BUF (after a payload byte was
 * patched), so that only the payload's meaning is wrong. */
static void frame_recheck(uint8_t *buf, size_t n)
{
	memset(buf + 16, 0, 8);
	wire_le64(buf + 16, XXH3_64bits(buf, n));
}

/* A mirror client that sends one thing serve must refuse; expects the
 * ERROR (PATH or BADFRAME) and the close. */
static int mode_mirror_bad(int fd, struct evbuffer *in, const char *kind)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_hello h = { .version = PROTO_VERSION, .role = PROTO_ROLE_MIRROR,
				 .name = "wire-client" };
	uint32_t code = PROTO_E_BADFRAME;
	uint8_t buf[4096];
	size_t n;
	int rc;

	proto_encode_hello(b, &h);
	send_buf(fd, b);
	expect_hello(fd, in);
	if (!strcmp(kind, "dotdot") || !strcmp(kind, "absolute") || !strcmp(kind, "symlink")) {
		code = PROTO_E_PATH;
		n = op_bytes(buf, sizeof(buf), !strcmp(kind, "dotdot") ? "../escaped" :
			     !strcmp(kind, "absolute") ? "/tmp/escaped" : "link/escaped");
		send_raw(fd, buf, n);
	} else if (!strcmp(kind, "nul")) {
		n = op_bytes(buf, sizeof(buf), "aXb");
		for (size_t i = PROTO_HDR_LEN; i + 2 < n; i++)
			if (!memcmp(buf + i, "aXb", 3))
				buf[i + 1] = 0;
		frame_recheck(buf, n);
		send_raw(fd, buf, n);
	} else if (!strcmp(kind, "tree-escape")) {
		proto_encode_tree_req(b, &(struct proto_tree_req){ .path = "../" });
		send_buf(fd, b);
	} else if (!strcmp(kind, "hash-escape")) {
		proto_encode_hash_req(b, &(struct proto_hash_req){ .path = "../../etc/passwd",
								    .block_size = 4096 });
		send_buf(fd, b);
	} else if (!strcmp(kind, "hashes")) {
		/* a hash list is an answer; from a client it is a bad frame */
		proto_encode_hashes(b, &(struct proto_hashes){ .path = "x", .block_size = 4096,
							       .flags = PROTO_HASHES_F_LAST });
		send_buf(fd, b);
	} else {
		fprintf(stderr, "wire_client: unknown kind %s\n", kind);
		evbuffer_free(b);
		return 2;
	}
	evbuffer_free(b);
	rc = expect_error_and_close(fd, in, code);
	return rc;
}

int main(int argc, char **argv)
{
	struct evbuffer *in;
	const char *mode;
	uint8_t buf[8192];
	int fd, rc = 1;
	size_t n;

	if (argc == 4 && strcmp(argv[1], "ctl") == 0) {
		char *reply = NULL;

		rc = control_call(argv[2], argv[3], TIMEOUT_MS, &reply);
		if (rc < 0) {
			fprintf(stderr, "wire_client: control %s: %s\n", argv[2], strerror(-rc));
			return 1;
		}
		printf("%s\n", reply);
		free(reply);
		return 0;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: wire_client HOST PORT MODE [NAME] | ctl STATE REQUEST\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	host = argv[1];
	port = argv[2];
	mode = argv[3];
	if (strcmp(mode, "valid") == 0)
		return mode_valid(argc > 4 ? argv[4] : "dir");
	if (strcmp(mode, "small") == 0 && argc == 8)
		return mode_small(argv[4], (unsigned)atoi(argv[5]), (unsigned)atoi(argv[6]),
				  (unsigned)atoi(argv[7]));
	if (strcmp(mode, "latency") == 0 && argc == 7)
		return mode_latency(argv[4], (unsigned)atoi(argv[5]), (unsigned)atoi(argv[6]));
	if (strcmp(mode, "silent") == 0)
		return mode_silent();
	if (strcmp(mode, "stream") == 0 && argc == 6)
		return mode_stream(argv[4], (unsigned)atoi(argv[5]));

	in = evbuffer_new();
	fd = conn_open();
	if (strcmp(mode, "garbage") == 0) {
		int r = open("/dev/urandom", O_RDONLY);

		if (r < 0 || read(r, buf, 4096) != 4096)
			return 2;
		close(r);
		buf[0] = 'X';	/* never the magic by chance */
		send_raw(fd, buf, 4096);
		rc = expect_error_and_close(fd, in, PROTO_E_BADFRAME);
	} else if (strcmp(mode, "http") == 0) {
		send_raw(fd, "GET / HTTP/1.0\r\n\r\n", 18);
		rc = expect_error_and_close(fd, in, PROTO_E_BADFRAME);
	} else if (strcmp(mode, "truncated") == 0) {
		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		n = op_bytes(buf, sizeof(buf), "truncated-file");
		send_raw(fd, buf, n - 5);
		shutdown(fd, SHUT_WR);
		rc = expect_close(fd);
	} else if (strcmp(mode, "badcheck") == 0) {
		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		n = op_bytes(buf, sizeof(buf), "badcheck-file");
		buf[20] ^= 0x40;	/* inside the check field */
		send_raw(fd, buf, n);
		rc = expect_error_and_close(fd, in, PROTO_E_BADFRAME);
	} else if (strcmp(mode, "badpayload") == 0) {
		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		n = op_bytes(buf, sizeof(buf), "badpayload-file");
		buf[n - 1] ^= 0x40;	/* payload byte: the check no longer matches */
		send_raw(fd, buf, n);
		rc = expect_error_and_close(fd, in, PROTO_E_BADFRAME);
	} else if (strcmp(mode, "badhash") == 0) {
		struct evbuffer *b = evbuffer_new();
		static char block[65536];

		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		memset(block, 'z', sizeof(block));
		proto_encode_data(b, "badhash-file", 0, block, sizeof(block), NULL, NULL, NULL);
		n = evbuffer_get_length(b);
		{
			uint8_t *all = malloc(n);

			evbuffer_remove(b, all, n);
			all[n - 10] ^= 1;	/* corrupt the block, not the header */
			send_raw(fd, all, n);
			free(all);
		}
		evbuffer_free(b);
		rc = expect_error_and_close(fd, in, PROTO_E_BADHASH);
	} else if (strcmp(mode, "escape") == 0) {
		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		n = op_bytes(buf, sizeof(buf), "../escaped-file");
		send_raw(fd, buf, n);
		rc = expect_error_and_close(fd, in, PROTO_E_PATH);
	} else if (strcmp(mode, "oversized") == 0) {
		struct proto_hdr h = { .type = PROTO_OP, .len = 0x7fffffff, .clen = 0x7fffffff };

		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		proto_hdr_write(buf, &h);
		send_raw(fd, buf, PROTO_HDR_LEN);
		rc = expect_error_and_close(fd, in, PROTO_E_BADFRAME);
	} else if (strcmp(mode, "mirror-bad") == 0 && argc == 5) {
		/* the previous client's session may still be ending on serve's
		 * thread (busy): a new connection, for up to TIMEOUT_MS */
		for (int tries = TIMEOUT_MS / 100; (rc = mode_mirror_bad(fd, in, argv[4])) == 3 &&
		     tries > 0; tries--) {
			close(fd);
			evbuffer_drain(in, evbuffer_get_length(in));
			usleep(100 * 1000);
			fd = conn_open();
		}
	} else if (strcmp(mode, "version") == 0) {
		send_hello(fd, 99);
		rc = expect_error_and_close(fd, in, PROTO_E_VERSION);
	} else if (strcmp(mode, "busy") == 0) {
		struct evbuffer *in2 = evbuffer_new();
		int fd2;

		send_hello(fd, PROTO_VERSION);
		expect_hello(fd, in);
		/* a second primary is refused once its HELLO shows it is one */
		fd2 = conn_open();
		send_hello(fd2, PROTO_VERSION);
		rc = expect_error_and_close(fd2, in2, PROTO_E_BUSY);
		close(fd2);
		evbuffer_free(in2);
	} else {
		fprintf(stderr, "wire_client: unknown mode %s\n", mode);
		rc = 2;
	}
	close(fd);
	evbuffer_free(in);
	return rc;
}
