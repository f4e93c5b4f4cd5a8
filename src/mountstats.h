/*
 * mountstats — the mount's FUSE request metrics (fs/stats.h) in /metrics:
 * requests by operation, their latency histograms and reply errors by
 * errno, rendered as a metrics source (netsync/control/metrics.h) on the
 * replication thread when /metrics is scraped. Registered by mount_cmd.c
 * before replication starts and removed after it stops.
 */
#ifndef TWINFS_MOUNTSTATS_H
#define TWINFS_MOUNTSTATS_H

void mountstats_register(void);
void mountstats_unregister(void);

#endif
