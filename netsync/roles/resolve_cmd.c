/*
 * resolve_cmd — `twinfs resolve`: ends a split brain by keeping this
 * node's versions (--keep local), the peer's (--keep peer) or both, never
 * discarding one (netsync/roles/resolution.h); `--restore FOLDER` puts a
 * folder of conflict copies back into the primary's store. It asks the
 * daemon of the state directory (the primary leads either way) and waits
 * until the split brain is over on this node. Main thread of the CLI.
 */
#include "netsync/roles/rolecmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"
#include "netsync/roles/conflicts.h"

#define RESOLVE_ASK_MS 10000

static void resolve_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs resolve --state DIR --keep local|peer|both [--dry-run]\n"
		"       twinfs resolve --state DIR --restore FOLDER\n"
		"       twinfs resolve --config FILE ...\n"
		"Ends a split brain (twinfs status lists the diverged paths). Run it on\n"
		"either node while both daemons are up and connected; the primary leads.\n"
		"No version is discarded:\n"
		"  --keep local    this node's versions win; the peer's go to the peer's\n"
		"                  STATE/conflicts/<time>-resolve/\n"
		"  --keep peer     the peer's versions win; this node's go to its\n"
		"                  STATE/conflicts/<time>-resolve/\n"
		"  --keep both     each node's own changes are taken; a path changed on\n"
		"                  both keeps the primary's version and the secondary's\n"
		"                  beside it as NAME.conflict-<node>-<UTC time>\n"
		"  --dry-run       print what would happen to each path; change nothing\n"
		"  --restore FOLDER  put the copies of STATE/conflicts/FOLDER back into\n"
		"                  the primary's store (what is there now is kept aside)\n"
		"  --timeout SEC   wait at most this long (default 120)\n"
		"  --state DIR     this node's state directory\n"
		"  --config FILE   the YAML file its daemon was started from\n"
		"  -h, --help      show this help\n\n"
		"Exit: 0 resolved (or no split brain), 64 usage, 69 no daemon, the\n"
		"daemon refused (not connected, no such folder) or the resolution failed\n"
		"(the split brain stays; the reason is printed), 75 it did not finish in\n"
		"time.\n");
}

/* Prints the "plan" array of REPLY, one line each. */
static void resolve_print_plan(const char *reply)
{
	const char *p = strstr(reply, "\"plan\":[");

	if (!p)
		return;
	for (p += 8; *p == '"';) {
		char line[4400];
		size_t n = 0;

		for (p++; *p && *p != '"' && n + 1 < sizeof(line); p++) {
			if (*p == '\\' && p[1])
				p++;
			line[n++] = *p;
		}
		line[n] = '\0';
		printf("  %s\n", line);
		p++;
		if (*p == ',')
			p++;
	}
}

/* Polls status until KEY's boolean is false (or null), or the deadline. */
static int resolve_wait(const char *state, const char *key, double timeout_s)
{
	double end = clock_mono_s() + timeout_s;
	char *reply = NULL;

	for (;;) {
		bool on = false;
		char text[8] = "", err[1200] = "";
		int rc = control_call(state, "status", RESOLVE_ASK_MS, &reply);

		if (rc < 0)
			return control_cmd_error("resolve", state, rc);
		if (ctljson_get_bool(reply, key, &on) < 0 &&
		    ctljson_get_str(reply, key, text, sizeof(text)) == 0 && text[0])
			on = true;
		ctljson_get_str(reply, "resolve_error", err, sizeof(err));
		free(reply);
		if (!on)
			return EX_OK;
		if (err[0]) {
			fprintf(stderr, "twinfs resolve: failed (the split brain stays): %s\n", err);
			return EX_UNAVAILABLE;
		}
		if (clock_mono_s() > end) {
			fprintf(stderr, "twinfs resolve: not finished after %.0f s (see twinfs "
				"status)\n", timeout_s);
			return EX_TEMPFAIL;
		}
		usleep(200000);
	}
}

static int resolve_restore(const char *state, const char *folder, double timeout_s)
{
	char *reply = NULL, role[32] = "", mnt[4096] = "", err[1200] = "", req[300];
	bool ok = false;
	int rc;

	rc = control_call(state, "status", RESOLVE_ASK_MS, &reply);
	if (rc < 0)
		return control_cmd_error("resolve", state, rc);
	ctljson_get_str(reply, "role", role, sizeof(role));
	ctljson_get_str(reply, "mountpoint", mnt, sizeof(mnt));
	free(reply);
	if (strcmp(role, "primary") == 0) {
		/* this node mounts: write the copies through its mountpoint */
		rc = conflicts_restore(state, folder, mnt);
		if (rc < 0) {
			fprintf(stderr, "twinfs resolve: cannot restore conflicts/%s into %s: %s\n",
				folder, mnt, strerror(-rc));
			return cli_exit_code(rc);
		}
		conflicts_remove(state, folder);
		rolecmd_say("resolve", "RESTORED %d file(s) of conflicts/%s into %s; what was "
			    "there is kept in conflicts/*-restore", rc, folder, mnt);
		return EX_OK;
	}
	snprintf(req, sizeof(req), "restore %s", folder);
	rc = control_call(state, req, RESOLVE_ASK_MS, &reply);
	if (rc < 0)
		return control_cmd_error("resolve", state, rc);
	ctljson_get_bool(reply, "ok", &ok);
	ctljson_get_str(reply, "error", err, sizeof(err));
	free(reply);
	if (!ok) {
		fprintf(stderr, "twinfs resolve: refused: %s\n", err);
		return EX_UNAVAILABLE;
	}
	rc = resolve_wait(state, "restoring", timeout_s);
	if (rc == EX_OK)
		rolecmd_say("resolve", "RESTORED conflicts/%s through the primary's mount", folder);
	return rc;
}

static int resolve_run(const char *state, const char *keep, bool dry, double timeout_s)
{
	char *reply = NULL, err[1200] = "", req[64];
	bool ok = false, split = false;
	int rc;

	rc = control_call(state, "status", RESOLVE_ASK_MS, &reply);
	if (rc < 0)
		return control_cmd_error("resolve", state, rc);
	ctljson_get_bool(reply, "split_brain", &split);
	free(reply);
	if (!split) {
		printf("twinfs resolve: no split brain on %s: nothing to do\n", state);
		return EX_OK;
	}
	snprintf(req, sizeof(req), "resolve %s%s", keep, dry ? " dry" : "");
	rc = control_call(state, req, RESOLVE_ASK_MS, &reply);
	if (rc < 0)
		return control_cmd_error("resolve", state, rc);
	ctljson_get_bool(reply, "ok", &ok);
	ctljson_get_str(reply, "error", err, sizeof(err));
	if (!ok) {
		free(reply);
		fprintf(stderr, "twinfs resolve: refused: %s\n", err);
		return EX_UNAVAILABLE;
	}
	printf("twinfs resolve: %s --keep %s:\n", dry ? "would do, with" : "resolving with",
	       keep);
	resolve_print_plan(reply);
	free(reply);
	if (dry)
		return EX_OK;
	rc = resolve_wait(state, "split_brain", timeout_s);
	if (rc == EX_OK)
		rolecmd_say("resolve", "RESOLVED the split brain of %s (--keep %s); twinfs sync "
			    "on the primary waits for the peer to have it all", state, keep);
	return rc;
}

int resolve_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "keep", required_argument, NULL, 'k' },
		{ "restore", required_argument, NULL, 'r' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state_flag = NULL, *config = NULL, *keep = NULL, *restore = NULL;
	double timeout_s = 120;
	bool dry = false;
	char *state = NULL, *end;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state_flag = optarg; break;
		case 'c': config = optarg; break;
		case 'k': keep = optarg; break;
		case 'r': restore = optarg; break;
		case 'n': dry = true; break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (*end || timeout_s <= 0 || timeout_s > 86400)
				return cli_usage_error("resolve", "--timeout wants seconds, got '%s'",
						       optarg);
			break;
		case 'h': resolve_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("resolve", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error("resolve", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("resolve", "unexpected argument '%s'", argv[optind]);
	if (!!keep == !!restore)
		return cli_usage_error("resolve", "give --keep local|peer|both, or --restore "
				       "FOLDER");
	if (keep && strcmp(keep, "local") && strcmp(keep, "peer") && strcmp(keep, "both"))
		return cli_usage_error("resolve", "--keep wants local, peer or both, got '%s'",
				       keep);
	if (restore && (dry || strchr(restore, '/') || restore[0] == '.' || !restore[0]))
		return cli_usage_error("resolve", "--restore wants a folder name of "
				       "STATE/conflicts/ (and no --dry-run)");
	rc = ctlstate_resolve("resolve", state_flag, config, &state, NULL);
	if (rc != EX_OK)
		return rc;
	rc = restore ? resolve_restore(state, restore, timeout_s) :
	     resolve_run(state, keep, dry, timeout_s);
	free(state);
	return rc;
}
