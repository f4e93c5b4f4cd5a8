/*
 * metrics — /metrics in the Prometheus text format, served by a daemon
 * (mount or serve) over HTTP on its own event loop (libevent's evhttp).
 * Every value comes from the daemon's status reply, the same numbers
 * `twinfs status --json` shows, so the two never disagree; this module
 * only names them (Prometheus conventions: _total, _bytes, _seconds).
 * Loopback only unless the daemon was told --insecure. The loop thread
 * that starts it runs it.
 */
#ifndef TWINFS_METRICS_H
#define TWINFS_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/histo.h"

struct metrics;

/* Writes the daemon's status JSON (one flat object) into OUT. */
typedef void metrics_status_fn(void *arg, struct evbuffer *out);

/* Checks LISTEN as metrics_start would, without opening anything (a
 * refusal before anything is created). 0, -EINVAL or -EPERM with WHY. */
int metrics_check(const char *listen, bool allow_remote, char *why, size_t len);

/* Can the metrics listener bind LISTEN? Binds and closes a throw-away
 * socket as metrics_start will (SO_REUSEADDR), so that a port in use is
 * refused before anything is created. 0, or -errno (EADDRINUSE...) with
 * WHY. */
int metrics_check_port(const char *listen, char *why, size_t len);

/* Listens on LISTEN (HOST:PORT); a non-loopback address needs ALLOW_REMOTE.
 * 0, or -errno with a one-line reason in WHY. */
int metrics_start(struct event_base *base, const char *listen, bool allow_remote,
		  metrics_status_fn *fn, void *arg, struct metrics **out,
		  char *why, size_t len);
void metrics_stop(struct metrics *m);

/* The exposition of one status reply (for tests): appends to OUT. */
void metrics_render(const char *status_json, struct evbuffer *out);

/*
 * Metrics that are not status keys (histograms, labelled counters) come
 * from sources registered in this process: each appends whole metric
 * families to OUT, on the loop thread answering a scrape. At most four;
 * metrics_add_source returns 0 or -ENOSPC. Remove a source before what
 * ARG points to goes away. Any thread.
 */
typedef void metrics_source_fn(void *arg, struct evbuffer *out);
int metrics_add_source(metrics_source_fn *fn, void *arg);
void metrics_remove_source(metrics_source_fn *fn, void *arg);
/* Helpers for sources: "# HELP"/"# TYPE" lines, and one histogram's
 * series (LABELS like `op="read"`, or NULL). */
void metrics_put_help(struct evbuffer *out, const char *name, const char *type,
		      const char *help);
void metrics_put_histo(struct evbuffer *out, const char *name, const char *labels,
		       const struct histo_snap *h);

#endif
