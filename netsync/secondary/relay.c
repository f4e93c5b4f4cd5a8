/*
 * relay — two bufferevents on serve's loop, the connection and the loop's
 * end of a socketpair, each copying what it reads into the other's output
 * (relay.h). Reading stops while the other's output holds RELAY_HIGH
 * bytes and resumes when it drained below half of that. Loop thread only.
 */
#include "netsync/secondary/relay.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#define RELAY_HIGH (4u << 20)

struct relay {
	struct bufferevent *a;	/* the connection */
	struct bufferevent *b;	/* the loop's end of the pair */
	bool closing;
	bool done;
};

static struct bufferevent *relay_other(struct relay *r, struct bufferevent *bev)
{
	return bev == r->a ? r->b : r->a;
}

static void relay_close(struct relay *r)
{
	if (r->a)
		bufferevent_free(r->a);
	if (r->b)
		bufferevent_free(r->b);
	r->a = r->b = NULL;
	r->done = true;
}

static void relay_read_cb(struct bufferevent *bev, void *arg)
{
	struct relay *r = arg;
	struct bufferevent *o = relay_other(r, bev);
	struct evbuffer *out = bufferevent_get_output(o);

	evbuffer_add_buffer(out, bufferevent_get_input(bev));
	if (evbuffer_get_length(out) >= RELAY_HIGH)
		bufferevent_disable(bev, EV_READ);
}

static void relay_write_cb(struct bufferevent *bev, void *arg)
{
	struct relay *r = arg;

	if (r->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			relay_close(r);
		return;
	}
	/* below the low mark: the other side may read again */
	bufferevent_enable(relay_other(r, bev), EV_READ);
}

static void relay_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct relay *r = arg;
	struct bufferevent *o;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	o = relay_other(r, bev);
	/* what came before the end still goes through, then both close */
	evbuffer_add_buffer(bufferevent_get_output(o), bufferevent_get_input(bev));
	r->closing = true;
	if (evbuffer_get_length(bufferevent_get_output(o)) == 0) {
		relay_close(r);
		return;
	}
	bufferevent_disable(bev, EV_READ);
	bufferevent_enable(o, EV_WRITE);
}

int relay_start(struct event_base *base, struct bufferevent *bev, struct evbuffer *in,
		int *thread_fd, struct relay **out)
{
	struct relay *r = calloc(1, sizeof(*r));
	int sp[2] = { -1, -1 };

	if (!r || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		goto fail;
	evutil_make_socket_nonblocking(sp[0]);
	r->a = bev;
	r->b = bufferevent_socket_new(base, sp[0], BEV_OPT_CLOSE_ON_FREE);
	if (!r->b)
		goto fail;
	sp[0] = -1;
	if (in && evbuffer_add_buffer(bufferevent_get_output(r->b), in) < 0)
		goto fail;
	if (in)
		evbuffer_free(in);
	for (int i = 0; i < 2; i++) {
		struct bufferevent *e = i ? r->b : r->a;

		bufferevent_setcb(e, relay_read_cb, relay_write_cb, relay_event_cb, r);
		bufferevent_setwatermark(e, EV_WRITE, RELAY_HIGH / 2, 0);
		bufferevent_enable(e, EV_READ | EV_WRITE);
	}
	*thread_fd = sp[1];
	*out = r;
	return 0;
fail:
	if (sp[0] >= 0)
		close(sp[0]);
	if (sp[1] >= 0)
		close(sp[1]);
	if (r && r->b)
		bufferevent_free(r->b);
	free(r);
	bufferevent_free(bev);
	if (in)
		evbuffer_free(in);
	return -ENOMEM;
}

bool relay_done(const struct relay *r)
{
	return r->done;
}

void relay_free(struct relay *r)
{
	if (!r)
		return;
	relay_close(r);
	free(r);
}
