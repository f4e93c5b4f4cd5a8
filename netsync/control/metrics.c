/*
 * metrics — the Prometheus exposition of a daemon's status (metrics.h).
 * One table names every metric: the status key it reads, its Prometheus
 * name, type and help. A key the daemon does not report (the other role's,
 * or a value it does not know yet) is left out, never shown as 0. Runs on
 * the daemon's loop thread.
 */
#include "netsync/control/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "common/log.h"
#include "netsync/control/ctljson.h"
#include "netsync/wire/addr.h"

enum metric_kind { M_GAUGE, M_COUNTER, M_BOOL };

struct metric_def {
	const char *key;	/* in the status JSON */
	const char *name;
	enum metric_kind kind;
	const char *help;
};

static const struct metric_def metric_defs[] = {
	{ "connected", "twinfs_connected", M_BOOL,
	  "1 while the replication link is up (HELLO exchanged)" },
	{ "degraded", "twinfs_sync_degraded", M_BOOL,
	  "1 while a sync-mode mount runs async because the peer did not ack in time" },
	{ "split_brain", "twinfs_split_brain", M_BOOL, "1 when both nodes wrote while apart" },
	{ "generation", "twinfs_generation", M_GAUGE, "this node's generation" },
	{ "lag_ops", "twinfs_lag_operations", M_GAUGE,
	  "journal records the peer has not acknowledged" },
	{ "lag_bytes", "twinfs_lag_bytes", M_GAUGE, "data bytes the peer has not acknowledged" },
	{ "dirty_files", "twinfs_dirty_files", M_GAUGE, "files with data the peer lacks" },
	{ "acked_seq", "twinfs_acked_sequence", M_GAUGE, "last journal seq the peer acknowledged" },
	{ "head_seq", "twinfs_head_sequence", M_GAUGE, "last journal seq written" },
	{ "applied_seq", "twinfs_applied_sequence", M_GAUGE,
	  "secondary: last seq durably applied" },
	{ "send_rate", "twinfs_send_rate_bytes_per_second", M_GAUGE,
	  "data bytes sent per second over the last 5 s" },
	{ "bytes_sent", "twinfs_sent_bytes_total", M_COUNTER, "file data put on the wire" },
	{ "bytes_held", "twinfs_held_bytes_total", M_COUNTER,
	  "changed data not sent because the peer already held those blocks" },
	{ "bytes_received", "twinfs_received_bytes_total", M_COUNTER,
	  "secondary: frame bytes received" },
	{ "ops_applied", "twinfs_applied_operations_total", M_COUNTER,
	  "secondary: operations applied" },
	{ "reconnects", "twinfs_reconnects_total", M_COUNTER, "replication links lost" },
	{ "connections", "twinfs_connections_total", M_COUNTER,
	  "secondary: primary connections admitted" },
	{ "connections_refused", "twinfs_refused_connections_total", M_COUNTER,
	  "secondary: connections refused before admission (handshake, HELLO, caps)" },
	{ "connections_waiting", "twinfs_waiting_connections", M_GAUGE,
	  "secondary: connections not yet admitted" },
	{ "read_pauses", "twinfs_read_pauses_total", M_COUNTER,
	  "secondary: times it stopped reading from its primary over a cap or a full store" },
	{ "needs_scan", "twinfs_needs_scan_paths", M_GAUGE,
	  "paths recorded for a rescan (the journal was full or records were lost)" },
	{ "resync_files", "twinfs_resync_files_total", M_COUNTER,
	  "files sent by resyncs (baselines, repairs)" },
	{ "resync_bytes", "twinfs_resync_bytes_total", M_COUNTER,
	  "data bytes sent by resyncs" },
	{ "uptime_s", "twinfs_uptime_seconds", M_GAUGE, "seconds since the daemon started" },
	{ "last_ack_age_s", "twinfs_last_ack_age_seconds", M_GAUGE,
	  "seconds since the last acknowledgement" },
};

struct metrics {
	struct evhttp *http;
	metrics_status_fn *fn;
	void *arg;
};

void metrics_render(const char *js, struct evbuffer *out)
{
	char role[32] = "", version[64] = "", name[256] = "";
	double v;
	bool b;

	ctljson_get_str(js, "role", role, sizeof(role));
	ctljson_get_str(js, "version", version, sizeof(version));
	ctljson_get_str(js, "node_name", name, sizeof(name));
	evbuffer_add_printf(out, "# HELP twinfs_info the daemon: its role and version\n"
			    "# TYPE twinfs_info gauge\n"
			    "twinfs_info{role=\"%s\",version=\"%s\"} 1\n", role, version);
	for (size_t i = 0; i < sizeof(metric_defs) / sizeof(metric_defs[0]); i++) {
		const struct metric_def *d = &metric_defs[i];

		if (d->kind == M_BOOL) {
			if (ctljson_get_bool(js, d->key, &b) < 0)
				continue;
			v = b;
		} else if (ctljson_get_double(js, d->key, &v) < 0) {
			continue;
		}
		evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", d->name,
				    d->help, d->name, d->kind == M_COUNTER ? "counter" : "gauge",
				    d->name, v);
	}
}

static void metrics_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evbuffer *st = evbuffer_new(), *out = evbuffer_new();

	if (!st || !out) {
		evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
		goto out;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "only GET");
		goto out;
	}
	m->fn(m->arg, st);
	evbuffer_add(st, "", 1);	/* NUL-terminate for the reader */
	metrics_render((const char *)evbuffer_pullup(st, -1), out);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", out);
out:
	if (st)
		evbuffer_free(st);
	if (out)
		evbuffer_free(out);
}

static void metrics_other_cb(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, HTTP_NOTFOUND, "try /metrics");
}

int metrics_check(const char *listen, bool allow_remote, char *why, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (addr_resolve(listen, 0, &ss, &sl, NULL) < 0) {
		snprintf(why, len, "metrics address %s: expected HOST:PORT", listen);
		return -EINVAL;
	}
	if (!allow_remote && !addr_is_loopback((struct sockaddr *)&ss)) {
		snprintf(why, len, "metrics address %s is not a loopback address; the "
			 "numbers are for this host unless --insecure says otherwise", listen);
		return -EPERM;
	}
	return 0;
}

int metrics_start(struct event_base *base, const char *listen, bool allow_remote,
		  metrics_status_fn *fn, void *arg, struct metrics **out,
		  char *why, size_t len)
{
	char host[256];
	uint16_t port;
	struct metrics *m;
	int rc = metrics_check(listen, allow_remote, why, len);

	if (rc < 0)
		return rc;
	if (addr_parse(listen, host, sizeof(host), &port) < 0) {
		snprintf(why, len, "metrics address %s: expected HOST:PORT", listen);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fn = fn;
	m->arg = arg;
	m->http = evhttp_new(base);
	if (!m->http || evhttp_bind_socket(m->http, host, port) < 0) {
		snprintf(why, len, "cannot serve metrics on %s: %s", listen, strerror(errno));
		if (m->http)
			evhttp_free(m->http);
		free(m);
		return -EADDRINUSE;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
	evhttp_set_cb(m->http, "/metrics", metrics_cb, m);
	evhttp_set_gencb(m->http, metrics_other_cb, m);
	log_notice("serving Prometheus metrics", "listen=%s path=/metrics", listen);
	*out = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	evhttp_free(m->http);
	free(m);
}
