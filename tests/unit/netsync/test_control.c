/* Unit tests for netsync/control and netsync/json: a real control socket
 * served by a libevent loop in a thread, queried by the blocking client. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"

struct fixture {
	char dir[64];
	struct event_base *base;
	struct control_server *srv;
	pthread_t thr;
	struct control_req *deferred;
	struct event *later;
};

static int h_status(struct control_req *req, int argc, char **argv, void *arg)
{
	struct ctljson j;

	ctljson_begin(&j, control_req_out(req));
	ctljson_bool(&j, "ok", true);
	ctljson_str(&j, "role", "secondary");
	ctljson_str(&j, "last_error", "quote \" and\nnewline");
	ctljson_u64(&j, "argc", (uint64_t)argc);
	ctljson_str(&j, "arg1", argc > 1 ? argv[1] : NULL);
	ctljson_end(&j);
	control_req_send(req);
	return 0;
}

static int h_fail(struct control_req *req, int argc, char **argv, void *arg)
{
	return -EIO;
}

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fixture *fx = arg;
	struct ctljson j;

	ctljson_begin(&j, control_req_out(fx->deferred));
	ctljson_bool(&j, "ok", true);
	ctljson_u64(&j, "acked_seq", 41);
	ctljson_end(&j);
	control_req_send(fx->deferred);
	fx->deferred = NULL;
}

/* Answers 200 ms later, from a timer on the loop, like `sync` does. */
static int h_sync(struct control_req *req, int argc, char **argv, void *arg)
{
	struct fixture *fx = arg;
	struct timeval tv = { 0, 200000 };

	fx->deferred = req;
	evtimer_add(fx->later, &tv);
	return 0;
}

static const struct control_cmd cmds[] = {
	{ "status", h_status },
	{ "fail", h_fail },
	{ "sync", h_sync },
	{ NULL, NULL },
};

static void *loop_thread(void *arg)
{
	struct fixture *fx = arg;

	event_base_loop(fx->base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	strcpy(fx->dir, "/tmp/twinfs-ctl.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	evthread_use_pthreads();
	fx->base = event_base_new();
	fx->later = evtimer_new(fx->base, later_cb, fx);
	assert_int_equal(control_server_start(fx->base, fx->dir, cmds, fx, &fx->srv), 0);
	assert_int_equal(pthread_create(&fx->thr, NULL, loop_thread, fx), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char path[128];

	/* loopexit, not loopbreak: a break before the thread enters the loop
	 * would be forgotten (event_base_loop clears it on entry) */
	event_base_loopexit(fx->base, NULL);
	pthread_join(fx->thr, NULL);
	control_server_stop(fx->srv);
	snprintf(path, sizeof(path), "%s/%s", fx->dir, CONTROL_SOCK_NAME);
	assert_int_equal(access(path, F_OK), -1);
	event_free(fx->later);
	event_base_free(fx->base);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void test_status_and_json(void **state)
{
	struct fixture *fx = *state;
	char *reply = NULL, s[64];
	uint64_t v;
	bool ok;

	assert_int_equal(control_call(fx->dir, "status extra", 2000, &reply), 0);
	assert_null(strchr(reply, '\n'));
	assert_int_equal(ctljson_get_bool(reply, "ok", &ok), 0);
	assert_true(ok);
	assert_int_equal(ctljson_get_str(reply, "role", s, sizeof(s)), 0);
	assert_string_equal(s, "secondary");
	assert_int_equal(ctljson_get_str(reply, "last_error", s, sizeof(s)), 0);
	assert_string_equal(s, "quote \" and\nnewline");
	assert_int_equal(ctljson_get_u64(reply, "argc", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(ctljson_get_str(reply, "arg1", s, sizeof(s)), 0);
	assert_string_equal(s, "extra");
	assert_int_equal(ctljson_get_u64(reply, "nope", &v), -ENOENT);
	assert_int_equal(ctljson_get_u64(reply, "role", &v), -EINVAL);
	free(reply);
}

static void test_socket_mode(void **state)
{
	struct fixture *fx = *state;
	struct stat st;
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, CONTROL_SOCK_NAME);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_ping_unknown_failing(void **state)
{
	struct fixture *fx = *state;
	char *reply = NULL, s[128];
	uint64_t pid;
	bool ok;

	assert_int_equal(control_call(fx->dir, "ping", 2000, &reply), 0);
	assert_int_equal(ctljson_get_u64(reply, "pid", &pid), 0);
	assert_int_equal(pid, (uint64_t)getpid());
	free(reply);

	assert_int_equal(control_call(fx->dir, "frobnicate", 2000, &reply), 0);
	assert_int_equal(ctljson_get_bool(reply, "ok", &ok), 0);
	assert_false(ok);
	assert_int_equal(ctljson_get_str(reply, "error", s, sizeof(s)), 0);
	assert_string_equal(s, "unknown command 'frobnicate'");
	free(reply);

	assert_int_equal(control_call(fx->dir, "fail", 2000, &reply), 0);
	assert_int_equal(ctljson_get_str(reply, "error", s, sizeof(s)), 0);
	assert_non_null(strstr(s, "Input/output error"));
	free(reply);
}

static void test_deferred_and_timeout(void **state)
{
	struct fixture *fx = *state;
	char *reply = NULL;
	uint64_t v;

	assert_int_equal(control_call(fx->dir, "sync 1000", 2000, &reply), 0);
	assert_int_equal(ctljson_get_u64(reply, "acked_seq", &v), 0);
	assert_int_equal(v, 41);
	free(reply);
	/* a deferred answer later than the request-line timeout still arrives */
	control_server_set_read_timeout(fx->srv, 100);
	assert_int_equal(control_call(fx->dir, "sync 1000", 2000, &reply), 0);
	assert_int_equal(ctljson_get_u64(reply, "acked_seq", &v), 0);
	free(reply);
	/* a client that gives up before the deferred answer */
	assert_int_equal(control_call(fx->dir, "sync 1000", 50, &reply), -ETIMEDOUT);
	usleep(300000);	/* the late answer goes nowhere, without crashing */
	assert_null(fx->deferred);
}

/* A client that connects and sends nothing is dropped after the
 * request-line timeout. */
static void test_idle_client_dropped(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char c;
	int fd;

	control_server_set_read_timeout(fx->srv, 100);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", fx->dir, CONTROL_SOCK_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	{
		struct timeval tv = { 2, 0 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	assert_int_equal(recv(fd, &c, 1, 0), 0);	/* EOF, not a 2 s timeout */
	close(fd);
}

static void test_second_server_and_missing(void **state)
{
	struct fixture *fx = *state;
	struct control_server *s2 = NULL;
	struct event_base *b2 = event_base_new();
	char *reply = NULL;

	assert_int_equal(control_server_start(b2, fx->dir, cmds, NULL, &s2), -EADDRINUSE);
	event_base_free(b2);
	assert_int_equal(control_call("/nonexistent-twinfs", "ping", 500, &reply), -ENOENT);
}

static void test_stale_socket_replaced(void **state)
{
	char dir[] = "/tmp/twinfs-ctl2.XXXXXX";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct event_base *b = event_base_new();
	struct control_server *s = NULL;
	char *reply = NULL;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, CONTROL_SOCK_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);	/* a socket file nobody listens on: a dead daemon's */
	assert_int_equal(control_call(dir, "ping", 500, &reply), -ECONNREFUSED);
	assert_int_equal(control_server_start(b, dir, cmds, NULL, &s), 0);
	control_server_stop(s);
	event_base_free(b);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status_and_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ping_unknown_failing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_and_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_server_and_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_client_dropped, setup, teardown),
		cmocka_unit_test(test_stale_socket_replaced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
