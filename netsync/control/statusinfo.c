/*
 * statusinfo — daemon facts for the status reply. Runs on the daemon's
 * loop thread (the only one that touches its struct statusinfo); reads
 * /proc/self/stat and /proc/uptime, nothing else.
 */
#include "netsync/control/statusinfo.h"
#include "netsync/control/rolestatus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "journal/journal.h"
#include "netsync/control/ctljson.h"
#include "version.h"

void statusinfo_ack(struct statusinfo *si, uint64_t seq)
{
	si->acked = true;
	si->ack_seq = seq;
	si->ack_ns = clock_mono_ns();
}

static double statusinfo_now(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

void statusinfo_sync_ok(struct statusinfo *si)
{
	si->sync_ok_at = statusinfo_now();
}

void statusinfo_tick_journal(struct statusinfo *si, struct journal *j)
{
	struct journal_stats js;

	journal_get_stats(j, &js);
	if (!js.oldest_change_ns)
		si->caught_up_at = statusinfo_now();
	/* The first sample only learns where acks stand: the acked seq read
	 * back from the journal at start-up is not an ack that arrived. */
	if (!si->ack_ns) {
		si->ack_seq = js.acked_seq;
		si->ack_ns = clock_mono_ns();
		return;
	}
	if (js.acked_seq != si->ack_seq)
		statusinfo_ack(si, js.acked_seq);
}

double statusinfo_uptime_s(void)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	double up = -1;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields count from the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++;
	for (int field = 3; field < 22 && p; field++)	/* starttime is field 22 */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return -1;
	f = fopen("/proc/uptime", "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lf", &up) != 1)
		up = -1;
	fclose(f);
	if (up < 0 || tck <= 0)
		return -1;
	up -= (double)start / (double)tck;
	return up < 0 ? 0 : up;
}

void statusinfo_json(struct ctljson *w, struct statusinfo *si, struct journal *j,
		     const char *state_dir, const char *store_dir)
{
	double up = statusinfo_uptime_s();
	char started[40] = "";

	if (j)
		statusinfo_tick_journal(si, j);
	if (up >= 0) {
		time_t t = time(NULL) - (time_t)up;
		struct tm tm;

		long off;
		size_t n;

		localtime_r(&t, &tm);
		n = strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%S", &tm);
		off = tm.tm_gmtoff / 60;
		snprintf(started + n, sizeof started - n, "%c%02ld:%02ld",
			 off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
	}
	ctljson_str(w, "version", TWINFS_VERSION);
	ctljson_i64(w, "pid", getpid());
	if (up >= 0)
		ctljson_double(w, "uptime_s", up);
	ctljson_str(w, "started", started[0] ? started : NULL);
	ctljson_str(w, "state_dir", state_dir);
	if (state_dir)
		rolestatus_conflicts_json(w, state_dir);
	ctljson_str(w, "store_dir", store_dir);
	if (j) {
		struct journal_stats js;
		double now = statusinfo_now(), lag = 0;

		journal_get_stats(j, &js);
		if (js.oldest_change_ns) {
			lag = now - (double)js.oldest_change_ns / 1e9;
			if (lag < 0)	/* the wall clock stepped back */
				lag = 0;
		} else if (si) {
			si->caught_up_at = now;
		}
		ctljson_double(w, "lag_seconds", lag);
		if (si && si->caught_up_at)
			ctljson_double(w, "caught_up_at", si->caught_up_at);
	}
	if (si && si->sync_ok_at)
		ctljson_double(w, "sync_ok_at", si->sync_ok_at);
	if (si && si->acked) {
		ctljson_u64(w, "last_ack_seq", si->ack_seq);
		ctljson_double(w, "last_ack_age_s",
			       (double)(clock_mono_ns() - si->ack_ns) / 1e9);
	}
}
