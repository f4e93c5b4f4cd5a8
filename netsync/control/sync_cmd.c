/*
 * sync_cmd — `twinfs sync`: returns once the peer holds, durably, every
 * change made to the mount before the call. Flushes the kernel's cache of
 * the mount first (syncfs on the mountpoint the daemon reports), then asks
 * the mount daemon to barrier + wait over STATE/control.sock. Main thread;
 * talks to the daemon only through the control socket.
 */
#include "netsync/control/sync_cmd.h"
#include "netsync/control/verify_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/progress.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"

#define SYNC_ASK_TIMEOUT_MS 5000
/* Without --timeout the wait is unbounded; the socket wait gets a day. */
#define SYNC_FOREVER_MS (24 * 3600 * 1000)

static void sync_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs sync --state DIR [--timeout SEC] [--verify]\n"
		"       twinfs sync --config FILE [--timeout SEC] [--verify]\n"
		"Blocks until the peer has acknowledged, durably, every change made to\n"
		"the mount using state directory DIR before this call.\n\n"
		"  --state DIR     the mount's state directory\n"
		"  --config FILE   the YAML file the mount was started from (its\n"
		"                  state:); --state wins\n"
		"  --timeout SEC   give up after SEC seconds (default: wait as long as\n"
		"                  it takes)\n"
		"  --progress WHEN auto (default: when stderr is a terminal and not\n"
		"                  --quiet), always, never: one line with the bytes and\n"
		"                  files the peer still lacks, rate and ETA\n"
		"  --verify        then prove it: read both stores again and compare\n"
		"                  them entry by entry ('twinfs verify --state DIR');\n"
		"                  every path that differs is printed, exit 65\n"
		"  -q, --quiet     print nothing on success\n"
		"  -h, --help      show this help\n\n"
		"Exit: 0 the peer has everything, 75 timed out (the reason is printed),\n"
		"65 --verify found a difference,\n"
		"69 no mount runs with DIR, 74 flushing the mount failed, 64 usage,\n"
		"66 the config file is missing, 78 it names no state directory.\n");
}

/*
 * The mount's writeback cache may hold data the daemon has not seen yet;
 * the journal cannot know about it. syncfs() on the mountpoint makes the
 * kernel hand every dirty page to the daemon (which marks it dirty in the
 * journal) before we take the barrier, so "before the call" includes
 * writes still in the page cache.
 */
static int sync_flush_mount(const char *mountpoint)
{
	int fd, rc = 0;

	fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syncfs(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* The sync request, made on its own thread while the main one draws. */
struct sync_call {
	const char *state;
	char req[64];
	int timeout_ms;
	char *reply;
	int rc;
	volatile int done;	/* set last, read by the drawing loop */
};

static void *sync_call_main(void *arg)
{
	struct sync_call *sc = arg;

	sc->rc = control_call(sc->state, sc->req, sc->timeout_ms, &sc->reply);
	__atomic_store_n(&sc->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* What the peer still lacks, from one status request. */
static int sync_lag(const char *state, uint64_t *bytes, uint64_t *files)
{
	char *reply = NULL;
	uint64_t b = 0, f = 0;
	int rc = control_call(state, "status", SYNC_ASK_TIMEOUT_MS, &reply);

	if (rc < 0)
		return rc;
	ctljson_get_u64(reply, "lag_bytes", &b);
	ctljson_get_u64(reply, "dirty_files", &f);
	free(reply);
	*bytes = b;
	*files = f;
	return 0;
}

/*
 * Progress. The daemon counts what the peer lacks (lag_bytes, the dirty
 * files), not what this sync has sent, so the line shows the start's lag
 * minus the current one; writes made meanwhile grow the total. It ends
 * when the sync call returns.
 */
static void sync_with_progress(struct sync_call *sc)
{
	struct progress p;
	pthread_t tid;
	uint64_t total = 0, files0 = 0, b, f;

	sync_lag(sc->state, &total, &files0);
	progress_init(&p, stderr, 1, "sync", total, files0);
	if (pthread_create(&tid, NULL, sync_call_main, sc) != 0) {
		sync_call_main(sc);
		return;
	}
	while (!__atomic_load_n(&sc->done, __ATOMIC_ACQUIRE)) {
		if (sync_lag(sc->state, &b, &f) == 0) {
			if (b > total)
				total = b;
			if (f > files0)
				files0 = f;
			p.total = total;
			p.total_files = files0;
			p.files = files0 - f;
			progress_update(&p, total - b);
		}
		usleep(250000);
	}
	pthread_join(tid, NULL);
	progress_done(&p);
}

/* The sync itself, once the state directory is known: an exit code. */
static int sync_run(const char *state, double timeout_s, double t0, bool quiet, int show,
		    bool verify)
{
	char *reply = NULL, role[32], mp[4096], err[1024];
	struct sync_call sc = { 0 };
	uint64_t acked = 0;
	bool ok = false;
	int rc, ms;

	rc = control_call(state, "status", SYNC_ASK_TIMEOUT_MS, &reply);
	if (rc < 0)
		return control_cmd_error("sync", state, rc);
	if (ctljson_get_str(reply, "role", role, sizeof(role)) < 0 ||
	    strcmp(role, "primary") != 0) {
		fprintf(stderr, "twinfs sync: the daemon using %s is not a mount (role "
			"'%s'); run sync against the mount's state directory\n", state, role);
		free(reply);
		return EX_USAGE;
	}
	if (ctljson_get_str(reply, "mountpoint", mp, sizeof(mp)) < 0)
		mp[0] = '\0';
	free(reply);
	reply = NULL;
	if (mp[0]) {
		rc = sync_flush_mount(mp);
		if (rc < 0) {
			fprintf(stderr, "twinfs sync: cannot flush the mount %s: %s\n", mp,
				strerror(-rc));
			return EX_IOERR;
		}
	}
	/* The flush counts against the timeout. */
	if (timeout_s > 0) {
		ms = (int)((timeout_s - (clock_mono_s() - t0)) * 1000);
		if (ms < 1)
			ms = 1;
	} else {
		ms = 0;
	}
	sc.state = state;
	snprintf(sc.req, sizeof(sc.req), "sync %d", ms);
	sc.timeout_ms = ms ? ms + SYNC_ASK_TIMEOUT_MS : SYNC_FOREVER_MS;
	if (show)
		sync_with_progress(&sc);
	else
		sync_call_main(&sc);
	rc = sc.rc;
	reply = sc.reply;
	if (rc < 0)
		return control_cmd_error("sync", state, rc);
	ctljson_get_bool(reply, "ok", &ok);
	ctljson_get_u64(reply, "acked_seq", &acked);
	if (ok) {
		if (!quiet)
			printf("synced: the peer holds every change (acked seq %" PRIu64
			       ", %.3f s)\n", acked, clock_mono_s() - t0);
		free(reply);
		return verify ? verify_state(state, quiet) : EX_OK;
	}
	if (ctljson_get_str(reply, "error", err, sizeof(err)) < 0)
		snprintf(err, sizeof(err), "unknown error (reply: %s)", reply);
	ctljson_get_str(reply, "result", role, sizeof(role));
	fprintf(stderr, "twinfs sync: %s\n", err);
	free(reply);
	return strcmp(role, "timeout") == 0 ? EX_TEMPFAIL : EX_UNAVAILABLE;
}

int sync_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "progress", required_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verify", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state_flag = NULL, *config = NULL, *progress = "auto";
	double timeout_s = 0, t0 = clock_mono_s();
	bool quiet = false, verify = false;
	char *state = NULL, *end;
	int c, rc, show;

	optind = 1;
	opterr = 0;	/* cli_usage_error says it, in one line */
	while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		switch (c) {
		case 's': state_flag = optarg; break;
		case 'c': config = optarg; break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (*end || timeout_s <= 0 || timeout_s > 86400)
				return cli_usage_error("sync", "--timeout wants seconds "
						       "(0 < SEC <= 86400), got '%s'", optarg);
			break;
		case 'P': progress = optarg; break;
		case 'q': quiet = true; break;
		case 'V': verify = true; break;
		case 'h': sync_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("sync", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("sync", "unknown option '-%c'", optopt);
			return cli_usage_error("sync", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("sync", "unexpected argument '%s'", argv[optind]);
	if (progress_mode(progress, &show) < 0)
		return cli_usage_error("sync", "--progress '%s': use auto, always or never",
				       progress);
	if (quiet && strcmp(progress, "auto") == 0)
		show = 0;	/* bench copy runs `sync --quiet` under its own line */
	rc = ctlstate_resolve("sync", state_flag, config, &state, NULL);
	if (rc != EX_OK)
		return rc;
	rc = sync_run(state, timeout_s, t0, quiet, show, verify);
	free(state);
	return rc;
}
