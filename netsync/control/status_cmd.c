/*
 * status_cmd — `twinfs status`: asks the daemon that uses a state
 * directory (a mount or a serve) for its state over STATE/control.sock and
 * prints it for a human or as one JSON object; `--pending` works without a
 * daemon by reading the journal (journal_list_pending). Main thread only;
 * it never changes anything in the state directory.
 */
#include "netsync/control/status_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/log.h"
#include "common/size.h"
#include "netsync/control/control.h"
#include "journal/journal.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"
#include "netsync/control/rolestatus.h"
#include "netsync/roles/mountrec.h"

#define STATUS_TIMEOUT_MS 5000

static void status_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs status --state DIR [--json] [--watch] [--pending [--store DIR]]\n"
		"       twinfs status --config FILE [OPTIONS]\n"
		"Shows the state of the twinfs daemon (mount or serve) using DIR:\n"
		"role, peer, connected, lag, last ack, errors, pid, version, uptime.\n\n"
		"  --state DIR   the daemon's state directory\n"
		"  --config FILE the YAML file the daemon was started from: its\n"
		"                state (and store, for --pending); --state wins\n"
		"  --json        print one JSON object instead of text; with no daemon\n"
		"                {\"running\": false, \"reason\": \"...\"} (still exit 69)\n"
		"  --watch       redraw every second like watch(1) until Ctrl-C; when\n"
		"                stdout is not a terminal, print one block (or with --json\n"
		"                one line) per second instead\n"
		"  --pending     list every path changed since the peer's last\n"
		"                acknowledgement, read from the journal; works when\n"
		"                the mount is not running (e.g. after a crash)\n"
		"  --store DIR   the store, for --pending (default: the one the\n"
		"                last mount with this state directory used)\n"
		"  -h, --help    show this help\n\n"
		"The lag is counted in operations, bytes and seconds: the age of the\n"
		"oldest change the peer does not hold, what would be lost if this node\n"
		"died now (0 when the peer holds everything).\n\n"
		"Exit: 0 ok, 69 no daemon runs with this state directory, 75 it did not\n"
		"answer, 64 usage, 66 the config file is missing, 78 it names no state\n"
		"directory. --watch exits 0 on Ctrl-C.\n");
}


static const char *status_str(const char *json, const char *key, char *buf, size_t len)
{
	if (ctljson_get_str(json, key, buf, len) < 0 || !buf[0])
		snprintf(buf, len, "-");
	return buf;
}

static const char *status_yes(const char *json, const char *key)
{
	bool v = false;

	ctljson_get_bool(json, key, &v);
	return v ? "yes" : "no";
}

static uint64_t status_u64(const char *json, const char *key)
{
	uint64_t v = 0;

	ctljson_get_u64(json, key, &v);
	return v;
}

/* "3 d 4 h", "2 h 05 min", "4 min 10 s", "12.3 s". */
static void status_duration(double s, char *buf, size_t len)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;

	if (t >= 86400)
		snprintf(buf, len, "%lu d %lu h", t / 86400, t / 3600 % 24);
	else if (t >= 3600)
		snprintf(buf, len, "%lu h %02lu min", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, len, "%lu min %02lu s", t / 60, t % 60);
	else
		snprintf(buf, len, "%.1f s", s > 0 ? s : 0);
}

/* A number of the daemon's flat reply (ctljson reads integers only). */
static double status_double(const char *json, const char *key, bool *found)
{
	char pat[64];
	const char *p;
	char *end;
	double v;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	p = strstr(json, pat);
	*found = false;
	if (!p)
		return 0;
	v = strtod(p + strlen(pat), &end);
	*found = end != p + strlen(pat);
	return *found ? v : 0;
}

/* What both roles show about the daemon itself. */
static void status_print_daemon(const char *json, bool primary)
{
	char a[512], b[64], c[64];
	bool have, up_known;
	double up = status_double(json, "uptime_s", &up_known);
	double age = status_double(json, "last_ack_age_s", &have);

	status_duration(up, b, sizeof b);
	printf("daemon:      pid %" PRIu64 ", twinfs %s, up %s (since %s)\n",
	       status_u64(json, "pid"), status_str(json, "version", c, sizeof(c)),
	       up_known ? b : "?", status_str(json, "started", a, sizeof(a)));
	printf("state dir:   %s\n", status_str(json, "state_dir", a, sizeof(a)));
	printf("store:       %s\n", status_str(json, "store_dir", a, sizeof(a)));
	if (have) {
		status_duration(age, b, sizeof b);
		printf("last ack:    %s %s ago (seq %" PRIu64 ")\n",
		       primary ? "received" : "sent", b, status_u64(json, "last_ack_seq"));
	} else {
		printf("last ack:    none %s since the daemon started\n",
		       primary ? "received" : "sent");
	}
}

static void status_print_human(const char *json)
{
	char role[32], a[512], b[64], c[256];
	bool degraded = false;

	status_str(json, "role", role, sizeof(role));
	printf("role:        %s\n", role);
	printf("peer:        %s (%s)\n", status_str(json, "peer", a, sizeof(a)),
	       strcmp(status_yes(json, "connected"), "yes") == 0 ? "connected" :
	       "not connected");
	if (strcmp(role, "primary") == 0) {
		ctljson_get_bool(json, "degraded", &degraded);
		printf("mountpoint:  %s\n", status_str(json, "mountpoint", a, sizeof(a)));
		printf("mode:        %s%s\n", status_str(json, "mode", b, sizeof(b)),
		       degraded ? " (DEGRADED to async: the peer did not keep up)" : "");
		printf("lag:         %" PRIu64 " ops, %s", status_u64(json, "lag_ops"),
		       size_format_iec(status_u64(json, "lag_bytes"), b, sizeof(b)));
		{
			bool have;
			double lag = status_double(json, "lag_seconds", &have);

			status_duration(lag, c, sizeof(c));
			if (have && lag > 0)
				printf(", oldest change %s old (lost if this node died now)", c);
			else if (have)
				printf(" (the peer holds every change)");
		}
		printf("\n");
		if (status_u64(json, "unmarked_files"))
			printf("open writes: %" PRIu64 " open file(s) written through passthrough, "
			       "queued once idle for 2 s, within 10 s, or at `twinfs sync`\n",
			       status_u64(json, "unmarked_files"));
		printf("seq:         acked %" PRIu64 " of %" PRIu64 "\n",
		       status_u64(json, "acked_seq"), status_u64(json, "head_seq"));
		printf("send rate:   %s/s\n",
		       size_format_iec(status_u64(json, "send_rate"), c, sizeof(c)));
		printf("sent:        %s", size_format_iec(status_u64(json, "bytes_sent"), b,
							  sizeof(b)));
		if (status_u64(json, "bytes_held"))
			printf(" (and %s marked but left out: the peer had it)",
			       size_format_iec(status_u64(json, "bytes_held"), c, sizeof(c)));
		printf("\n");
		bool resync = false;

		ctljson_get_bool(json, "resync", &resync);
		if (resync)
			printf("resync:      sending the whole store: %" PRIu64 " files, %s so far\n",
			       status_u64(json, "resync_files"),
			       size_format_iec(status_u64(json, "resync_bytes"), b, sizeof(b)));
		if (status_u64(json, "stuck_paths"))
			printf("stuck:       %" PRIu64 " path(s) the peer cannot apply, "
			       "first /%s: %s\n", status_u64(json, "stuck_paths"),
			       status_str(json, "stuck_path", a, sizeof(a)),
			       status_str(json, "stuck_reason", c, sizeof(c)));
		else if (status_u64(json, "repairs_pending"))
			printf("repairs:     %" PRIu64 " path(s) being repaired from this "
			       "store\n", status_u64(json, "repairs_pending"));
		printf("insecure:    %s\n", status_yes(json, "insecure"));
	} else {
		bool dirty = false;

		ctljson_get_bool(json, "dirty", &dirty);
		printf("applied seq: %" PRIu64 "\n", status_u64(json, "applied_seq"));
		/* STATE/applied's dirty flag, in words (netsync/secondary/receiver.c). */
		if (dirty)
			printf("dirty:       yes: changes after seq %" PRIu64 " are in the store "
			       "but not yet durable, so the store is between two acknowledged "
			       "states; it turns clean at the next durable point (after a "
			       "restart, once the primary has resent that batch)\n",
			       status_u64(json, "applied_seq"));
		else
			printf("dirty:       no: the store holds exactly the changes up to seq %"
			       PRIu64 ", durably\n", status_u64(json, "applied_seq"));
		printf("received:    %s\n",
		       size_format_iec(status_u64(json, "bytes_received"), b, sizeof(b)));
	}
	status_print_daemon(json, strcmp(role, "primary") == 0);
	rolestatus_print(json);
	printf("last error:  %s\n", status_str(json, "last_error", a, sizeof(a)));
}

struct pending_ctx {
	bool json;
	unsigned long n;
};

static void status_pending_cb(const char *path, const char *why, void *arg)
{
	struct pending_ctx *pc = arg;

	if (strcmp(why, "renamed") == 0)
		return;	/* listed already, for its first change */
	pc->n++;
	printf("%s\t%s\n", why, *path ? path : ".");
}

static int status_pending(const char *state, const char *store)
{
	struct pending_ctx pc = { 0 };
	char buf[4096];
	int rc;

	if (!store) {
		rc = mountrec_read(state, buf, sizeof(buf), NULL, 0);
		if (rc < 0) {
			fprintf(stderr, "twinfs status: no mount has used state directory %s "
				"yet (no %s/mount); pass --store DIR\n", state, state);
			return EX_NOINPUT;
		}
		store = buf;
	}
	rc = journal_list_pending(state, store, status_pending_cb, &pc);
	if (rc < 0) {
		fprintf(stderr, "twinfs status: cannot read the journal in %s: %s\n",
			state, strerror(-rc));
		return cli_exit_code(rc);
	}
	fflush(stdout);
	fprintf(stderr, "%lu path(s) changed since the peer's last acknowledgement\n",
		pc.n);
	return EX_OK;
}

/* Why no daemon answered, for the JSON object --json prints instead. */
static const char *status_no_daemon_reason(int rc)
{
	switch (rc) {
	case -ENOENT: return "no twinfs daemon uses this state directory (no control.sock)";
	case -ECONNREFUSED: return "no twinfs daemon runs here any more (stale control.sock)";
	case -ETIMEDOUT: return "the daemon did not answer in time";
	case -EPROTO: return "the daemon closed the connection without an answer";
	default: return strerror(-rc);
	}
}

static void status_json_escaped(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

/* Asks once and prints; returns the exit code. quiet_errors: in --watch the
 * block says it, stderr stays quiet. */
static int status_once(const char *state, bool as_json, bool quiet_errors)
{
	char *reply = NULL;
	int rc = control_call(state, "status", STATUS_TIMEOUT_MS, &reply);

	if (rc < 0) {
		bool running = rc != -ENOENT && rc != -ECONNREFUSED;

		if (as_json) {
			printf("{\"running\":%s,\"state_dir\":", running ? "true" : "false");
			status_json_escaped(state);
			printf(",\"reason\":");
			status_json_escaped(status_no_daemon_reason(rc));
			printf("}\n");
		} else if (quiet_errors) {
			printf("not running: %s\n", status_no_daemon_reason(rc));
		}
		fflush(stdout);
		if (quiet_errors)
			return rc == -ETIMEDOUT ? EX_TEMPFAIL : EX_UNAVAILABLE;
		return control_cmd_error("status", state, rc);
	}
	if (as_json)	/* the daemon's flat object, with "running" first */
		printf("{\"running\":true,%s\n", reply[0] == '{' ? reply + 1 : reply);
	else
		status_print_human(reply);
	fflush(stdout);
	free(reply);
	return EX_OK;
}

static volatile sig_atomic_t status_interrupted;

static void status_on_sigint(int sig)
{
	(void)sig;
	status_interrupted = 1;
}

/*
 * --watch: like watch(1), the screen is cleared and redrawn every second
 * with a header line naming the command and the time; without a terminal
 * each second appends a block (text) or one line (--json), so the output
 * can be logged. Ctrl-C ends it with exit 0.
 */
static int status_watch(const char *state, bool as_json)
{
	struct sigaction sa = { .sa_handler = status_on_sigint };
	bool tty = isatty(STDOUT_FILENO), first = true;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!status_interrupted) {
		struct timespec next = { .tv_sec = 1 };
		char when[40];
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
		if (tty)
			printf("\033[H\033[2J");
		if (!as_json)
			printf("%sEvery 1.0s: twinfs status --state %s    %s\n\n",
			       tty || first ? "" : "\n", state, when);
		first = false;
		status_once(state, as_json, true);
		while (!status_interrupted && nanosleep(&next, &next) < 0)
			;
	}
	if (tty && !as_json)
		printf("\n");
	return EX_OK;
}

int status_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "pending", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state_flag = NULL, *store_flag = NULL, *config = NULL;
	bool as_json = false, pending = false, watch = false;
	char *state = NULL, *store = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;	/* cli_usage_error says it, in one line */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state_flag = optarg; break;
		case 'c': config = optarg; break;
		case 'S': store_flag = optarg; break;
		case 'j': as_json = true; break;
		case 'w': watch = true; break;
		case 'p': pending = true; break;
		case 'h': status_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("status", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("status", "unknown option '-%c'", optopt);
			return cli_usage_error("status", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (pending && watch)
		return cli_usage_error("status", "--pending reads the journal once; "
				       "it does not combine with --watch");
	rc = ctlstate_resolve("status", state_flag, config, &state, &store);
	if (rc != EX_OK)
		return rc;
	if (pending)
		rc = status_pending(state, store_flag ? store_flag : store);
	else if (watch)
		rc = status_watch(state, as_json);
	else
		rc = status_once(state, as_json, false);
	free(state);
	free(store);
	return rc;
}
