/*
 * hostile_peer — a peer that tries to make a twinfs daemon hold more than
 * it should, for tests/e2e/netsync_caps.sh. It speaks the real protocol
 * (netsync/wire/proto.h) over plaintext TCP on loopback and reports what
 * happened on stdout as KEY=VALUE lines; the script measures the daemon.
 * Against `twinfs serve` (it plays a primary or a verifier):
 *   hostile_peer HOST PORT noread SECS      HELLO, then BATCH_ENDs that each
 *                                           earn an ACK, never reading one
 *   hostile_peer HOST PORT bigframe SECS    HELLO, then a DATA frame of the
 *                                           largest size that never ends
 *   hostile_peer HOST PORT syncflood SECS N batches of N new files as fast as
 *                                           serve reads, acks drained
 *   hostile_peer HOST PORT conns N SECS     N connections held open from
 *                                           127.0.0.2..127.0.0.9
 *   hostile_peer HOST PORT verifier SECS    a verifier that reads nothing for
 *                                           SECS, then what is left
 * Against a mount (it plays the secondary the mount connects to):
 *   hostile_peer serve PORT bigframe SECS   a frame header far larger than
 *                                           a secondary ever sends
 *   hostile_peer serve PORT flood SECS      HEARTBEATs as fast as the mount
 *                                           reads, never reading its stream
 *   hostile_peer serve PORT version SECS    a HELLO of protocol version 99
 *   hostile_peer serve PORT errors SECS     the same ERROR on every connection
 *                                           for SECS; prints how many came
 * Exit 0 when the run went as scripted (the script judges the daemon), 2
 * on a usage or local error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "netsync/wire/proto.h"
#include "netsync/wire/wire.h"

static const char *host, *port;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "hostile_peer: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* A connection to HOST:PORT from SRC (NULL: any address). */
static int conn_open_from(const char *src)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd;

	if (getaddrinfo(host, port, &hints, &res) != 0) {
		fprintf(stderr, "hostile_peer: cannot resolve %s\n", host);
		exit(2);
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (src) {
		struct sockaddr_in a = { .sin_family = AF_INET };

		inet_pton(AF_INET, src, &a.sin_addr);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			die("bind");
	}
	if (connect(fd, res->ai_addr, res->ai_addrlen) < 0)
		die("connect");
	freeaddrinfo(res);
	return fd;
}

/* Writes all of B (blocking); -errno once the peer is gone. */
static int send_all(int fd, struct evbuffer *b)
{
	while (evbuffer_get_length(b))
		if (evbuffer_write(b, fd) < 0)
			return -errno;
	return 0;
}

/* Writes what fits of B without blocking: 0, or -errno once the peer is
 * gone. */
static int send_some(int fd, struct evbuffer *b)
{
	while (evbuffer_get_length(b)) {
		int n = evbuffer_write(b, fd);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (n == 0)
			return -EPIPE;
	}
	return 0;
}

/* Reads frames until one of TYPE (copied into IN's front) or the end. */
static int recv_type(int fd, struct evbuffer *in, unsigned type, struct proto_frame *f,
		     int timeout_ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int rc = proto_frame_next(in, f);

		if (rc < 0)
			return -EBADMSG;
		if (rc == 1 && f->h.type == type)
			return 1;
		if (rc == 1) {
			proto_frame_consume(in, f);
			continue;
		}
		if (poll(&p, 1, timeout_ms) <= 0)
			return 0;
		if (evbuffer_read(in, fd, 65536) <= 0)
			return -ECONNRESET;
	}
}

static void send_hello(int fd, uint8_t role)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_hello h = {
		.version = PROTO_VERSION, .role = role, .generation = 1, .name = "hostile",
	};

	memcpy(h.node_id, "hostile-peer-id!", 16);
	proto_encode_hello(b, &h);
	if (send_all(fd, b) < 0)
		die("send HELLO");
	evbuffer_free(b);
}

/* serve's HELLO: its applied seq. */
static uint64_t expect_hello(int fd, struct evbuffer *in)
{
	struct proto_frame f;
	struct proto_hello h;
	uint64_t seq;

	if (recv_type(fd, in, PROTO_HELLO, &f, 5000) != 1 || proto_decode_hello(&f, &h) < 0) {
		fprintf(stderr, "hostile_peer: no HELLO from serve\n");
		exit(2);
	}
	seq = h.applied_seq;
	proto_frame_consume(in, &f);
	return seq;
}

/* Until SECS pass or serve closes: true if it closed, after how long. */
static int wait_closed(int fd, double secs, double *after)
{
	double t0 = now_s();
	char buf[65536];

	while (now_s() - t0 < secs) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) > 0 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0) {
			*after = now_s() - t0;
			return 1;
		}
	}
	return 0;
}

/* BATCH_END of a seq serve holds earns an ACK at once: 32 bytes sent for
 * 32 queued, for ever, unless serve stops reading from a peer that does
 * not read. */
static int mode_noread(double secs)
{
	int fd = conn_open_from(NULL);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	uint64_t seq, sent = 0;
	double t0, stalled_at = 0;
	int rc = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4096 }, sizeof(int));
	send_hello(fd, PROTO_ROLE_PRIMARY);
	seq = expect_hello(fd, in);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	t0 = now_s();
	while (now_s() - t0 < secs) {
		size_t before;

		while (evbuffer_get_length(out) < (256u << 10))
			proto_encode_batch_end(out, seq);
		before = evbuffer_get_length(out);
		rc = send_some(fd, out);
		if (rc < 0)
			break;
		sent += before - evbuffer_get_length(out);
		if (before == evbuffer_get_length(out)) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (!stalled_at)
				stalled_at = now_s() - t0;
			poll(&p, 1, 100);
		} else {
			stalled_at = 0;
		}
	}
	printf("sent_bytes=%llu\nclosed=%d\nstalled_after_s=%.1f\nseconds=%.1f\n",
	       (unsigned long long)sent, rc < 0, stalled_at, now_s() - t0);
	close(fd);
	evbuffer_free(in);
	evbuffer_free(out);
	return 0;
}

/* The largest DATA frame's header and all of its bytes but the last:
 * what serve must buffer to wait for one frame, and no more. */
static int mode_bigframe(double secs)
{
	int fd = conn_open_from(NULL);
	struct evbuffer *in = evbuffer_new();
	uint8_t hdr[PROTO_HDR_LEN];
	struct proto_hdr h = { .type = PROTO_DATA, .len = PROTO_MAX_DATA_PAYLOAD,
			       .clen = PROTO_MAX_DATA_PAYLOAD - PROTO_MAX_BLOCK };
	static uint8_t chunk[1 << 16];
	size_t left = PROTO_MAX_DATA_PAYLOAD - 1, sent = 0;
	double after = 0;
	int closed;

	send_hello(fd, PROTO_ROLE_PRIMARY);
	expect_hello(fd, in);
	proto_hdr_write(hdr, &h);
	if (send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != (ssize_t)sizeof(hdr))
		die("send header");
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
		ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		left -= (size_t)w;
		sent += (size_t)w;
	}
	closed = wait_closed(fd, secs, &after);
	printf("sent_bytes=%zu\nclosed=%d\nclosed_after_s=%.1f\n", sent, closed, after);
	close(fd);
	evbuffer_free(in);
	return 0;
}

/* Reads what serve sent within 100 ms: its last ACK into *ACKED. 0, or
 * -ECONNRESET / -EPROTO (closed, or an ERROR frame). */
static int syncflood_read(int fd, struct pollfd *p, struct evbuffer *in, uint64_t *acked)
{
	struct proto_frame f;
	ssize_t r;
	int rc = 0;

	if (poll(p, 1, 100) <= 0 || !(p->revents & POLLIN))
		return 0;
	r = evbuffer_read(in, fd, 65536);
	if (r == 0 || (r < 0 && errno != EAGAIN))
		rc = -ECONNRESET;
	while (proto_frame_next(in, &f) == 1) {
		if (f.h.type == PROTO_ACK)
			proto_decode_seq(&f, acked);
		if (f.h.type == PROTO_ERROR)
			rc = -EPROTO;
		proto_frame_consume(in, &f);
	}
	return rc;
}

/* Batches of N new empty files as fast as serve takes them, acks read and
 * dropped: serve's durability work (files held open for fsync, batches
 * queued) must not grow without bound behind a slow disk. */
static int mode_syncflood(double secs, unsigned n)
{
	int fd = conn_open_from(NULL);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	uint64_t seq, batches = 0, acked = 0, first;
	char path[128];
	double t0;
	int rc = 0;

	send_hello(fd, PROTO_ROLE_PRIMARY);
	seq = first = expect_hello(fd, in);
	snprintf(path, sizeof(path), "flood");
	proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_MKDIR, .path = path,
							 .mode = 040755 });
	fcntl(fd, F_SETFL, O_NONBLOCK);
	t0 = now_s();
	while (now_s() - t0 < secs && rc == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		if (evbuffer_get_length(out) < (64u << 10)) {
			snprintf(path, sizeof(path), "flood/b%llu", (unsigned long long)batches);
			proto_encode_op(out, ++seq, &(struct journal_op){ .type = JOP_MKDIR,
									 .path = path, .mode = 040755 });
			for (unsigned i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "flood/b%llu/f%u",
					 (unsigned long long)batches, i);
				proto_encode_op(out, ++seq, &(struct journal_op){
						.type = JOP_CREATE, .path = path, .mode = 0100644 });
			}
			proto_encode_batch_end(out, ++seq);
			batches++;
		}
		rc = send_some(fd, out);
		if (rc == 0)
			rc = syncflood_read(fd, &p, in, &acked);
	}
	/* On a loaded machine the first batch may not be durable yet when
	 * the flood ends: wait (sending nothing more) for its ACK, bounded. */
	t0 = now_s();
	while (rc == 0 && acked == 0 && now_s() - t0 < 60) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (evbuffer_get_length(out))
			rc = send_some(fd, out);
		if (rc == 0)
			rc = syncflood_read(fd, &p, in, &acked);
	}
	printf("batches=%llu\nfiles=%llu\nacked_seq=%llu\nlast_seq=%llu\nclosed=%d\n",
	       (unsigned long long)batches, (unsigned long long)batches * n,
	       (unsigned long long)acked, (unsigned long long)seq, rc < 0);
	(void)first;
	close(fd);
	evbuffer_free(in);
	evbuffer_free(out);
	return 0;
}

/* N connections from eight loopback addresses, reopened when dropped. */
static int mode_conns(unsigned n, double secs)
{
	int *fds = calloc(n, sizeof(*fds));
	unsigned opened = 0, dropped = 0;
	double t0 = now_s();
	char src[32];

	if (!fds)
		die("calloc");
	for (unsigned i = 0; i < n; i++)
		fds[i] = -1;
	while (now_s() - t0 < secs) {
		for (unsigned i = 0; i < n; i++) {
			char b;

			if (fds[i] >= 0 && recv(fds[i], &b, 1, MSG_DONTWAIT) == 0) {
				close(fds[i]);
				fds[i] = -1;
				dropped++;
			}
			if (fds[i] < 0) {
				snprintf(src, sizeof(src), "127.0.0.%u", 2 + i % 8);
				fds[i] = conn_open_from(src);
				opened++;
			}
		}
		usleep(100000);
	}
	printf("opened=%u\ndropped=%u\n", opened, dropped);
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
}

/* A verifier that reads nothing of its inventory for SECS, then reads
 * what serve had queued: cut=1 if the connection ended without
 * ENTRIES_END (serve dropped it), 0 if the inventory came whole. */
static int mode_verifier(double secs)
{
	int fd = conn_open_from(NULL);
	struct evbuffer *in = evbuffer_new();
	struct proto_frame f;
	int rc, ended = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4096 }, sizeof(int));
	send_hello(fd, PROTO_ROLE_VERIFIER);
	expect_hello(fd, in);
	usleep((useconds_t)(secs * 1e6));
	for (;;) {
		rc = recv_type(fd, in, PROTO_ENTRIES_END, &f, 5000);
		if (rc != 1)
			break;
		ended = 1;
		proto_frame_consume(in, &f);
	}
	printf("cut=%d\nended=%d\n", !ended && rc != 0, ended);
	close(fd);
	evbuffer_free(in);
	return 0;
}

/* ---- as the secondary a mount connects to ---- */

static int serve_accept(int lfd, double secs)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, (int)(secs * 1000)) <= 0) {
		fprintf(stderr, "hostile_peer: no mount connected\n");
		exit(2);
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		die("accept");
	return fd;
}

static void send_secondary_hello(int fd, uint32_t version)
{
	struct evbuffer *b = evbuffer_new();
	struct proto_hello h = {
		.version = version, .role = PROTO_ROLE_SECONDARY, .generation = 1,
		.applied_seq = 0, .name = "hostile",
	};

	memcpy(h.node_id, "hostile-second!!", 16);
	proto_encode_hello(b, &h);
	if (send_all(fd, b) < 0)
		die("send HELLO");
	evbuffer_free(b);
}

/* Every connection in SECS gets a HELLO and then the same ERROR{APPLY}
 * (a failing disk), and is closed: how often does the mount come back? */
static int mode_serve_errors(int lfd, double secs)
{
	double t0 = now_s();
	unsigned accepted = 0;
	struct evbuffer *b = evbuffer_new();

	while (now_s() - t0 < secs) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		char junk[4096];
		int fd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		accepted++;
		send_secondary_hello(fd, PROTO_VERSION);
		usleep(20000);	/* its HELLO, so the close is no reset */
		while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
		proto_encode_error(b, PROTO_E_APPLY, "sync of the store on hostile failed: "
				   "Input/output error");
		send_all(fd, b);
		shutdown(fd, SHUT_WR);
		usleep(20000);
		close(fd);
	}
	printf("accepted=%u\nseconds=%.1f\n", accepted, now_s() - t0);
	evbuffer_free(b);
	return 0;
}

static int mode_serve(const char *what, double secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd, closed = 0;
	double after = 0, t0;
	uint64_t sent = 0;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)) < 0 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4) < 0)
		die("listen");
	printf("listening=1\n");
	fflush(stdout);
	if (strcmp(what, "errors") == 0) {
		mode_serve_errors(lfd, secs);
		close(lfd);
		return 0;
	}
	fd = serve_accept(lfd, 30);
	send_secondary_hello(fd, strcmp(what, "version") == 0 ? 99 : PROTO_VERSION);
	t0 = now_s();
	if (strcmp(what, "version") == 0) {
		closed = wait_closed(fd, secs, &after);
	} else if (strcmp(what, "bigframe") == 0) {
		uint8_t hdr[PROTO_HDR_LEN];
		struct proto_hdr h = { .type = PROTO_DATA, .len = PROTO_MAX_DATA_PAYLOAD,
				       .clen = PROTO_MAX_DATA_PAYLOAD - PROTO_MAX_BLOCK };
		static uint8_t chunk[1 << 16];
		size_t left = PROTO_MAX_DATA_PAYLOAD - 1;

		proto_hdr_write(hdr, &h);
		if (send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) == (ssize_t)sizeof(hdr))
			sent += sizeof(hdr);
		fcntl(fd, F_SETFL, O_NONBLOCK);
		while (left && now_s() - t0 < secs) {
			size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
			ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);
			char junk[65536];

			if (w < 0 && errno != EAGAIN) {
				closed = 1;
				break;
			}
			if (w > 0) {
				left -= (size_t)w;
				sent += (size_t)w;
			}
			/* the mount's stream is read and dropped */
			if (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) == 0) {
				closed = 1;
				break;
			}
			if (w < 0)
				usleep(10000);
		}
		after = now_s() - t0;
		if (!closed)
			closed = wait_closed(fd, secs - after, &after);
	} else if (strcmp(what, "flood") == 0) {
		struct evbuffer *out = evbuffer_new();

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4096 }, sizeof(int));
		fcntl(fd, F_SETFL, O_NONBLOCK);
		while (now_s() - t0 < secs) {
			size_t before;
			int rc;

			while (evbuffer_get_length(out) < (256u << 10))
				proto_encode_heartbeat(out, 1);
			before = evbuffer_get_length(out);
			rc = send_some(fd, out);
			if (rc < 0) {
				closed = 1;
				after = now_s() - t0;
				break;
			}
			sent += before - evbuffer_get_length(out);
			if (before == evbuffer_get_length(out)) {
				struct pollfd p = { .fd = fd, .events = POLLOUT };

				poll(&p, 1, 100);
			}
		}
		evbuffer_free(out);
	} else {
		fprintf(stderr, "hostile_peer: unknown serve mode %s\n", what);
		return 2;
	}
	printf("sent_bytes=%llu\nclosed=%d\nclosed_after_s=%.1f\n", (unsigned long long)sent,
	       closed, after);
	close(fd);
	close(lfd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 4) {
		fprintf(stderr, "usage: hostile_peer HOST PORT MODE ARGS | serve PORT MODE SECS\n");
		return 2;
	}
	if (strcmp(argv[1], "serve") == 0 && argc == 5) {
		port = argv[2];
		return mode_serve(argv[3], atof(argv[4]));
	}
	host = argv[1];
	port = argv[2];
	mode = argv[3];
	if (strcmp(mode, "noread") == 0 && argc == 5)
		return mode_noread(atof(argv[4]));
	if (strcmp(mode, "bigframe") == 0 && argc == 5)
		return mode_bigframe(atof(argv[4]));
	if (strcmp(mode, "syncflood") == 0 && argc == 6)
		return mode_syncflood(atof(argv[4]), (unsigned)atoi(argv[5]));
	if (strcmp(mode, "conns") == 0 && argc == 6)
		return mode_conns((unsigned)atoi(argv[4]), atof(argv[5]));
	if (strcmp(mode, "verifier") == 0 && argc == 5)
		return mode_verifier(atof(argv[4]));
	fprintf(stderr, "hostile_peer: unknown mode or arguments: %s\n", mode);
	return 2;
}
