/*
 * control — the UNIX control socket of a daemon and its blocking client.
 * The server owns the listening socket STATE/control.sock and one
 * bufferevent per client; it runs on the daemon's event loop and never
 * touches daemon state itself: it parses the request line and calls the
 * handler the daemon registered. The client (control_call) is plain
 * blocking socket code with poll() timeouts for the CLI.
 */
#include "netsync/control/control.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "common/array.h"
#include "common/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "netsync/control/ctljson.h"

#define CONTROL_READ_TIMEOUT_MS 5000

struct control_server {
	struct event_base *base;
	struct evconnlistener *lis;
	const struct control_cmd *cmds;
	void *arg;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct control_req *reqs;	/* every live request (list) */
	int read_timeout_ms;		/* for the request line only */
};

/* One client connection. After the reply it lingers until the output is
 * written, then frees itself. */
struct control_req {
	struct control_server *srv;	/* NULL once the server stopped */
	struct bufferevent *bev;	/* NULL once the client is gone */
	struct evbuffer *out;		/* reply being built */
	bool dispatched;		/* a handler got it */
	bool replied;
	struct control_req *next, **pprev;
};

static int control_sock_path(const char *state_dir, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", state_dir,
		     CONTROL_SOCK_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

static void control_req_unlink(struct control_req *r)
{
	if (r->pprev) {
		*r->pprev = r->next;
		if (r->next)
			r->next->pprev = r->pprev;
		r->pprev = NULL;
		r->next = NULL;
	}
}

static void control_req_free(struct control_req *r)
{
	control_req_unlink(r);
	if (r->bev)
		bufferevent_free(r->bev);
	evbuffer_free(r->out);
	free(r);
}

/* The client went away or timed out. A request a handler still holds
 * stays allocated (without its connection) until it is answered. */
static void control_req_drop_conn(struct control_req *r)
{
	if (r->bev) {
		bufferevent_free(r->bev);
		r->bev = NULL;
	}
	if (!r->dispatched || r->replied)
		control_req_free(r);
}

static void control_write_cb(struct bufferevent *bev, void *arg)
{
	struct control_req *r = arg;

	if (r->replied && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		control_req_free(r);
}

static void control_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct control_req *r = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		control_req_drop_conn(r);
}

struct evbuffer *control_req_out(struct control_req *req)
{
	return req->out;
}

void control_req_send(struct control_req *req)
{
	req->replied = true;
	if (!req->bev) {
		control_req_free(req);
		return;
	}
	bufferevent_disable(req->bev, EV_READ);
	bufferevent_write_buffer(req->bev, req->out);
	/* control_write_cb frees once the reply is out */
}

void control_req_error(struct control_req *req, const char *fmt, ...)
{
	char text[512];
	struct ctljson j;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	evbuffer_drain(req->out, evbuffer_get_length(req->out));
	ctljson_begin(&j, req->out);
	ctljson_bool(&j, "ok", false);
	ctljson_str(&j, "error", text);
	ctljson_end(&j);
	control_req_send(req);
}

static void control_dispatch(struct control_req *r, char *line)
{
	char *argv[CONTROL_MAX_ARGS + 1];
	int argc = 0, rc;
	char *save = NULL;
	const struct control_cmd *c;

	for (char *t = strtok_r(line, " \t", &save); t && argc < CONTROL_MAX_ARGS;
	     t = strtok_r(NULL, " \t", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	r->dispatched = true;
	if (argc == 0) {
		control_req_error(r, "empty request");
		return;
	}
	if (strcmp(argv[0], "ping") == 0) {
		struct ctljson j;

		ctljson_begin(&j, r->out);
		ctljson_bool(&j, "ok", true);
		ctljson_i64(&j, "pid", getpid());
		ctljson_end(&j);
		control_req_send(r);
		return;
	}
	for (c = r->srv->cmds; c && c->name; c++)
		if (strcmp(c->name, argv[0]) == 0)
			break;
	if (!c || !c->name) {
		control_req_error(r, "unknown command '%s'", argv[0]);
		return;
	}
	rc = c->fn(r, argc, argv, r->srv->arg);
	if (rc < 0)
		control_req_error(r, "%s: %s", argv[0], strerror(-rc));
}

static void control_read_cb(struct bufferevent *bev, void *arg)
{
	struct control_req *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n;
	char *line;

	if (r->dispatched) {
		/* nothing more is expected; a client that keeps talking goes */
		if (evbuffer_get_length(in) > CONTROL_LINE_MAX)
			control_req_drop_conn(r);
		return;
	}
	line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
	if (!line) {
		if (evbuffer_get_length(in) > CONTROL_LINE_MAX) {
			log_warn("control request too long; closing",
				 "bytes=%zu", evbuffer_get_length(in));
			control_req_drop_conn(r);
		}
		return;
	}
	if (n > CONTROL_LINE_MAX) {
		free(line);
		control_req_drop_conn(r);
		return;
	}
	/* The timeout is for the request line. A deferred reply (sync) may
	 * take as long as the request asked for; EOF still ends it. */
	bufferevent_set_timeouts(bev, NULL, NULL);
	control_dispatch(r, line);
	free(line);
}

static void control_accept_cb(struct evconnlistener *lis, evutil_socket_t fd,
			      struct sockaddr *sa, int salen, void *arg)
{
	struct control_server *s = arg;
	struct timeval tv = { s->read_timeout_ms / 1000, (s->read_timeout_ms % 1000) * 1000 };
	struct control_req *r = calloc(1, sizeof(*r));

	if (!r || !(r->out = evbuffer_new())) {
		free(r);
		evutil_closesocket(fd);
		return;
	}
	r->srv = s;
	r->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!r->bev) {
		evbuffer_free(r->out);
		free(r);
		evutil_closesocket(fd);
		return;
	}
	r->next = s->reqs;
	if (r->next)
		r->next->pprev = &r->next;
	r->pprev = &s->reqs;
	s->reqs = r;
	bufferevent_setcb(r->bev, control_read_cb, control_write_cb,
			  control_event_cb, r);
	bufferevent_set_timeouts(r->bev, &tv, NULL);
	bufferevent_enable(r->bev, EV_READ | EV_WRITE);
}

/* Is somebody answering on this socket path? */
static bool control_sock_alive(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	alive = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return alive;
}

int control_server_start(struct event_base *base, const char *state_dir,
			 const struct control_cmd *cmds, void *arg,
			 struct control_server **out)
{
	struct control_server *s;
	struct sockaddr_un sa;
	int fd, rc;

	rc = control_sock_path(state_dir, &sa);
	if (rc < 0)
		return rc;
	if (control_sock_alive(&sa))
		return -EADDRINUSE;
	if (unlink(sa.sun_path) < 0 && errno != ENOENT)
		return -errno;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	/* Not umask(): it is process-wide, and in a mount other threads are
	 * creating files. The state directory is 0700 anyway; chmod right
	 * after bind closes the remaining window. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		goto out_close;
	}
	if (chmod(sa.sun_path, 0600) < 0) {
		rc = -errno;
		unlink(sa.sun_path);
		goto out_close;
	}
	s->lis = evconnlistener_new(base, control_accept_cb, s,
				    LEV_OPT_CLOSE_ON_FREE, 16, fd);
	if (!s->lis) {
		rc = -errno ? -errno : -ENOMEM;
		unlink(sa.sun_path);
		goto out_close;
	}
	s->base = base;
	s->read_timeout_ms = CONTROL_READ_TIMEOUT_MS;
	s->cmds = cmds;
	s->arg = arg;
	memcpy(s->path, sa.sun_path, sizeof(s->path));
	*out = s;
	return 0;

out_close:
	close(fd);
out_free:
	free(s);
	return rc;
}

void control_server_set_read_timeout(struct control_server *s, int ms)
{
	s->read_timeout_ms = ms;
}

void control_server_stop(struct control_server *s)
{
	if (!s)
		return;
	evconnlistener_free(s->lis);
	unlink(s->path);
	while (s->reqs) {
		struct control_req *r = s->reqs;

		control_req_unlink(r);
		r->srv = NULL;
		if (r->bev) {
			bufferevent_free(r->bev);
			r->bev = NULL;
		}
		if (!r->dispatched || r->replied)
			control_req_free(r);
	}
	free(s);
}

/* Milliseconds left until deadline (monotonic ns), at least 0. */
static int control_ms_left(uint64_t deadline)
{
	uint64_t now = clock_mono_ns();

	return now >= deadline ? 0 : (int)((deadline - now) / 1000000);
}

int control_call(const char *state_dir, const char *request, int timeout_ms,
		 char **reply)
{
	struct sockaddr_un sa;
	uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000;
	char *buf = NULL, *nl;
	size_t len = 0, cap = 0;
	size_t reqlen = strlen(request);
	int fd, rc;

	rc = control_sock_path(state_dir, &sa);
	if (rc < 0)
		return rc;
	if (reqlen > CONTROL_LINE_MAX || strchr(request, '\n'))
		return -EINVAL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		goto out_close;
	}
	if (send(fd, request, reqlen, MSG_NOSIGNAL) != (ssize_t)reqlen ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		rc = errno ? -errno : -EIO;
		goto out_close;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		rc = poll(&pfd, 1, control_ms_left(deadline));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			rc = -errno;
			goto out_free;
		}
		if (rc == 0) {
			rc = -ETIMEDOUT;
			goto out_free;
		}
		if (ARRAY_GROW(buf, cap, len + 4096 + 1, 8192) < 0) {
			rc = -ENOMEM;
			goto out_free;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (memchr(buf, '\n', len))
			break;
		if (len > (1u << 20)) {
			rc = -EPROTO;
			goto out_free;
		}
	}
	if (len == 0) {
		rc = -EPROTO;
		goto out_free;
	}
	buf[len] = '\0';
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	*reply = buf;
	close(fd);
	return 0;

out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

/* Prints why the daemon of STATE could not be asked by CMD (rc from
 * control_call) and returns the exit code: 69 no daemon, 75 timeout. */
int control_cmd_error(const char *cmd, const char *state, int rc)
{
	switch (-rc) {
	case ENOENT:
	case ECONNREFUSED:
		fprintf(stderr, "twinfs %s: no twinfs daemon runs with state directory "
			"%s (no live %s/control.sock); start it with 'twinfs mount' or "
			"'twinfs serve'\n", cmd, state, state);
		return EX_UNAVAILABLE;
	case ETIMEDOUT:
		fprintf(stderr, "twinfs %s: the daemon using %s did not answer in time\n",
			cmd, state);
		return EX_TEMPFAIL;
	default:
		fprintf(stderr, "twinfs %s: cannot talk to the daemon using %s: %s\n",
			cmd, state, strerror(-rc));
		return cli_exit_code(rc);
	}
}
