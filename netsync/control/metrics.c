/*
 * metrics — the Prometheus exposition of a daemon's status (metrics.h).
 * One table names every metric: the status key it reads, its Prometheus
 * name, type and help. A key the daemon does not report (the other role's,
 * or a value it does not know yet) is left out, never shown as 0. Runs on
 * the daemon's loop thread.
 */
#include "netsync/control/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>
#include <unistd.h>

#include <event2/http.h>

#include "common/log.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/statusinfo.h"
#include "netsync/wire/addr.h"

enum metric_kind { M_GAUGE, M_COUNTER, M_BOOL };

struct metric_def {
	const char *key;	/* in the status JSON */
	const char *name;
	enum metric_kind kind;
	const char *help;
};

/* Status keys that are one labelled series of a family. */
struct metric_series {
	const char *key;
	const char *labels;
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
	{ "lag_seconds", "twinfs_lag_seconds", M_GAUGE,
	  "age of the oldest change the peer does not hold: what this node's death would lose" },
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
	{ "journal_bytes", "twinfs_journal_bytes", M_GAUGE,
	  "size of the journal's segment files on disk" },
	{ "journal_segments", "twinfs_journal_segments", M_GAUGE,
	  "journal segment files on disk" },
	{ "store_syncs", "twinfs_store_syncs_total", M_COUNTER,
	  "primary: syncfs of the store before the journal's ack file passed what the peer holds" },
	{ "needs_scan", "twinfs_needs_scan_paths", M_GAUGE,
	  "paths recorded for a rescan (the journal was full or records were lost)" },
	{ "resync_files", "twinfs_resync_files_total", M_COUNTER,
	  "files sent by resyncs (baselines, repairs)" },
	{ "resync_bytes", "twinfs_resync_bytes_total", M_COUNTER,
	  "data bytes sent by resyncs" },
	{ "resync_files_left", "twinfs_resync_left_files", M_GAUGE,
	  "files a resync has asked the peer about and not yet sent" },
	{ "resync_bytes_left", "twinfs_resync_left_bytes", M_GAUGE,
	  "bytes of those files not yet sent" },
	{ "resync_bytes_read", "twinfs_resync_read_bytes_total", M_COUNTER,
	  "bytes resyncs read from the store to compare block hashes" },
	{ "resync_bytes_matched", "twinfs_resync_matched_bytes_total", M_COUNTER,
	  "bytes resyncs did not send because the peer's blocks matched" },
	{ "uptime_s", "twinfs_uptime_seconds", M_GAUGE, "seconds since the daemon started" },
	{ "last_ack_age_s", "twinfs_last_ack_age_seconds", M_GAUGE,
	  "seconds since the last acknowledgement" },
	{ "caught_up_at", "twinfs_last_caught_up_timestamp_seconds", M_GAUGE,
	  "when the peer last held every change (now while it does), Unix time" },
	{ "sync_ok_at", "twinfs_last_sync_success_timestamp_seconds", M_GAUGE,
	  "when a `twinfs sync` last returned success, Unix time" },
};

/* twinfs_errors_total: every replication error a daemon counts, by kind. */
static const struct metric_series metric_errors[] = {
	{ "reconnects", "kind=\"link_lost\"" },
	{ "apply_errors", "kind=\"apply\"" },
	{ "connections_refused", "kind=\"refused_connection\"" },
};

struct metrics {
	struct evhttp *http;
	metrics_status_fn *fn;
	void *arg;
};

void metrics_render(const char *js, struct evbuffer *out)
{
	char role[32] = "", version[64] = "", name[256] = "";
	bool errors_help = false;
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
		metrics_put_help(out, d->name, d->kind == M_COUNTER ? "counter" : "gauge",
				 d->help);
		evbuffer_add_printf(out, "%s %.17g\n", d->name, v);
	}
	for (size_t i = 0; i < sizeof(metric_errors) / sizeof(metric_errors[0]); i++) {
		if (ctljson_get_double(js, metric_errors[i].key, &v) < 0)
			continue;
		if (!errors_help) {
			metrics_put_help(out, "twinfs_errors_total", "counter",
					 "replication errors by kind: link_lost (the link dropped), "
					 "apply (a path the peer could not apply), "
					 "refused_connection (secondary: refused before admission)");
			errors_help = true;
		}
		evbuffer_add_printf(out, "twinfs_errors_total{%s} %.17g\n",
				    metric_errors[i].labels, v);
	}
}

void metrics_put_help(struct evbuffer *out, const char *name, const char *type,
		      const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_put_histo(struct evbuffer *out, const char *name, const char *labels,
		       const struct histo_snap *h)
{
	const char *sep = labels && *labels ? "," : "";

	if (!labels)
		labels = "";
	for (int i = 0; i < HISTO_BOUNDS; i++)
		evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, labels,
				    sep, (double)histo_bound_ns[i] / 1e9,
				    (unsigned long long)h->cum[i]);
	evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
			    (unsigned long long)h->cum[HISTO_BOUNDS]);
	evbuffer_add_printf(out, "%s_sum%s%s%s %.9f\n%s_count%s%s%s %llu\n",
			    name, *labels ? "{" : "", labels, *labels ? "}" : "",
			    (double)h->sum_ns / 1e9, name, *labels ? "{" : "", labels,
			    *labels ? "}" : "", (unsigned long long)h->cum[HISTO_BOUNDS]);
}

/*
 * The process, under the names every Prometheus client library uses:
 * open fds against the limit (the mount keeps one per cached inode), the
 * resident memory, CPU time and start time.
 */
static void metrics_put_process(struct evbuffer *out)
{
	struct rlimit rl;
	struct rusage ru;
	long pages = 0, rss = 0;
	double up = statusinfo_uptime_s();
	uint64_t fds = 0;
	DIR *d = opendir("/proc/self/fd");
	FILE *f;

	if (d) {
		for (struct dirent *e; (e = readdir(d));)
			fds += e->d_name[0] != '.';
		closedir(d);
		fds--;	/* the one opendir holds */
		metrics_put_help(out, "process_open_fds", "gauge", "open file descriptors");
		evbuffer_add_printf(out, "process_open_fds %llu\n", (unsigned long long)fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		metrics_put_help(out, "process_max_fds", "gauge",
				 "the open file descriptor limit (soft)");
		evbuffer_add_printf(out, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	}
	f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%ld %ld", &pages, &rss) == 2) {
		metrics_put_help(out, "process_resident_memory_bytes", "gauge",
				 "resident memory size");
		evbuffer_add_printf(out, "process_resident_memory_bytes %lld\n",
				    (long long)rss * sysconf(_SC_PAGESIZE));
	}
	if (f)
		fclose(f);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		metrics_put_help(out, "process_cpu_seconds_total", "counter",
				 "user and system CPU time");
		evbuffer_add_printf(out, "process_cpu_seconds_total %.6f\n",
				    (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	if (up >= 0) {
		metrics_put_help(out, "process_start_time_seconds", "gauge",
				 "when the process started, Unix time");
		evbuffer_add_printf(out, "process_start_time_seconds %.3f\n",
				    (double)time(NULL) - up);
	}
}

/* ---- other sources of metrics in this process ---- */

#define METRICS_SOURCES 4

static pthread_mutex_t metrics_src_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { metrics_source_fn *fn; void *arg; } metrics_src[METRICS_SOURCES];

int metrics_add_source(metrics_source_fn *fn, void *arg)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&metrics_src_mu);
	for (int i = 0; i < METRICS_SOURCES; i++) {
		if (!metrics_src[i].fn) {
			metrics_src[i].fn = fn;
			metrics_src[i].arg = arg;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&metrics_src_mu);
	return rc;
}

void metrics_remove_source(metrics_source_fn *fn, void *arg)
{
	pthread_mutex_lock(&metrics_src_mu);
	for (int i = 0; i < METRICS_SOURCES; i++)
		if (metrics_src[i].fn == fn && metrics_src[i].arg == arg)
			metrics_src[i].fn = NULL;
	pthread_mutex_unlock(&metrics_src_mu);
}

/* Appends every registered source's exposition (the loop thread, while
 * answering a scrape; a source is removed only after its loop stopped). */
static void metrics_render_sources(struct evbuffer *out)
{
	pthread_mutex_lock(&metrics_src_mu);
	for (int i = 0; i < METRICS_SOURCES; i++)
		if (metrics_src[i].fn)
			metrics_src[i].fn(metrics_src[i].arg, out);
	pthread_mutex_unlock(&metrics_src_mu);
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
	metrics_put_process(out);
	metrics_render_sources(out);
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

int metrics_check_port(const char *listen, char *why, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, rc = 0;

	if (addr_resolve(listen, 0, &ss, &sl, NULL) < 0) {
		snprintf(why, len, "metrics address %s: expected HOST:PORT", listen);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		rc = -errno;
	else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)) < 0 ||
		 bind(fd, (struct sockaddr *)&ss, sl) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		snprintf(why, len, "cannot serve metrics on %s: %s", listen, strerror(-rc));
	return rc;
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
