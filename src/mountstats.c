/*
 * mountstats — renders fs/stats.c's counters for /metrics (mountstats.h).
 * Runs on the replication thread (tw-send) answering a scrape; only reads
 * the counters the FUSE threads add to.
 */
#include "src/mountstats.h"

#include <stdio.h>

#include "common/log.h"
#include "fs/stats.h"
#include "netsync/control/metrics.h"

static void mountstats_render(void *arg, struct evbuffer *out)
{
	char labels[64];
	struct histo_snap h;

	(void)arg;
	metrics_put_help(out, "twinfs_fuse_requests_total", "counter",
			 "FUSE requests the kernel sent, by operation");
	for (size_t i = 0; i < FS_STATS_OPS; i++) {
		uint64_t n = fs_stats_requests(i);

		if (n)
			evbuffer_add_printf(out, "twinfs_fuse_requests_total{op=\"%s\"} %llu\n",
					    fs_stats_op_name(i), (unsigned long long)n);
	}
	metrics_put_help(out, "twinfs_fuse_request_duration_seconds", "histogram",
			 "time twinfs took to answer a FUSE request, from reading it to "
			 "writing the reply, by operation");
	for (size_t i = 0; i < FS_STATS_OPS; i++) {
		if (!fs_stats_requests(i))
			continue;
		histo_read(fs_stats_latency(i), &h);
		snprintf(labels, sizeof(labels), "op=\"%s\"", fs_stats_op_name(i));
		metrics_put_histo(out, "twinfs_fuse_request_duration_seconds", labels, &h);
	}
	metrics_put_help(out, "twinfs_fuse_errors_total", "counter",
			 "FUSE replies that carried an error, by errno (ENOENT from a "
			 "lookup is a normal answer)");
	for (size_t k = 0; k < FS_STATS_ERRS; k++)
		evbuffer_add_printf(out, "twinfs_fuse_errors_total{errno=\"%s\"} %llu\n",
				    fs_stats_err_name(k), (unsigned long long)fs_stats_errors(k));
}

void mountstats_register(void)
{
	if (metrics_add_source(mountstats_render, NULL) < 0)
		log_warn("no room for the FUSE request metrics in /metrics", "sources=4");
}

void mountstats_unregister(void)
{
	metrics_remove_source(mountstats_render, NULL);
}
