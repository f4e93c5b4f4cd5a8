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
#include "netsync/roles/mountrec.h"

#define STATUS_TIMEOUT_MS 5000

static void status_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs status --state DIR [--json] [--pending [--store DIR]]\n"
		"Shows the state of the twinfs daemon (mount or serve) using DIR:\n"
		"role, peer, connected, lag, errors.\n\n"
		"  --state DIR   the daemon's state directory\n"
		"  --json        print one JSON object instead of text\n"
		"  --pending     list every path changed since the peer's last\n"
		"                acknowledgement, read from the journal; works when\n"
		"                the mount is not running (e.g. after a crash)\n"
		"  --store DIR   the store, for --pending (default: the one the\n"
		"                last mount with this state directory used)\n"
		"  -h, --help    show this help\n\n"
		"Exit: 0 ok, 69 no daemon runs with this state directory, 64 usage.\n");
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
		printf("lag:         %" PRIu64 " ops, %s\n", status_u64(json, "lag_ops"),
		       size_format_iec(status_u64(json, "lag_bytes"), b, sizeof(b)));
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
		printf("applied seq: %" PRIu64 "\n", status_u64(json, "applied_seq"));
		printf("received:    %s\n",
		       size_format_iec(status_u64(json, "bytes_received"), b, sizeof(b)));
	}
	printf("generation:  %" PRIu64 "\n", status_u64(json, "generation"));
	printf("split brain: %s\n", status_yes(json, "split_brain"));
	printf("last error:  %s\n", status_str(json, "last_error", a, sizeof(a)));
}

struct pending_ctx {
	bool json;
	unsigned long n;
};

static void status_pending_cb(const char *path, const char *why, void *arg)
{
	struct pending_ctx *pc = arg;

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

int status_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "store", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "pending", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *store = NULL;
	bool as_json = false, pending = false;
	char *reply = NULL;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state = optarg; break;
		case 'S': store = optarg; break;
		case 'j': as_json = true; break;
		case 'p': pending = true; break;
		case 'h': status_usage(stdout); return EX_OK;
		default: return cli_usage_error("status", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (!state)
		return cli_usage_error("status", "--state DIR is required");
	if (pending)
		return status_pending(state, store);
	rc = control_call(state, "status", STATUS_TIMEOUT_MS, &reply);
	if (rc < 0)
		return control_cmd_error("status", state, rc);
	if (as_json)
		printf("%s\n", reply);
	else
		status_print_human(reply);
	free(reply);
	return EX_OK;
}
