/*
 * statusinfo — the facts about a daemon that `twinfs status` shows for
 * both roles: version, pid, uptime, start time, state and store folders,
 * and when the last acknowledgement moved (the primary received one, the
 * secondary sent one). The daemon keeps one struct statusinfo on its loop
 * thread, notes acks on it and adds statusinfo_json to its status reply.
 * With the journal (the primary), also the lag in seconds: the age of
 * the oldest change the peer does not hold (journal/jage.c).
 */
#ifndef TWINFS_STATUSINFO_H
#define TWINFS_STATUSINFO_H

#include <stdbool.h>
#include <stdint.h>

struct ctljson;
struct journal;

struct statusinfo {
	bool acked;		/* an ack moved since the daemon started */
	uint64_t ack_seq;	/* the last acknowledged seq seen */
	uint64_t ack_ns;	/* clock_mono_ns when it moved (or was first read) */
	/* Unix times (0: not yet): the peer last held every change (the
	 * primary's tick and status notice it), a `twinfs sync` last
	 * succeeded. */
	double caught_up_at, sync_ok_at;
};

/* A `twinfs sync` answered success now. */
void statusinfo_sync_ok(struct statusinfo *si);

/* An ack for SEQ was sent or received now. */
void statusinfo_ack(struct statusinfo *si, uint64_t seq);
/* The primary's once-a-second sample of the journal's acked seq (acks
 * arrive in the sender; sampling keeps the age within a second). */
void statusinfo_tick_journal(struct statusinfo *si, struct journal *j);
/* Adds "version", "pid", "uptime_s", "started", "state_dir",
 * "store_dir", with j "lag_seconds" (0 when the peer holds everything)
 * and "caught_up_at" once it did, "sync_ok_at" once a sync succeeded,
 * and, once an ack moved, "last_ack_seq" and "last_ack_age_s" to an open
 * status object. With the journal j (the primary), first takes
 * a sample as the tick does, so an ack since the last tick is counted. */
void statusinfo_json(struct ctljson *w, struct statusinfo *si, struct journal *j,
		     const char *state_dir, const char *store_dir);
/* Seconds this process has run (from /proc/self/stat), or -1. */
double statusinfo_uptime_s(void);

#endif
