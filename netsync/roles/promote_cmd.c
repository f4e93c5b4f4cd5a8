/*
 * promote_cmd — `twinfs promote --state DIR [--force]`: a secondary
 * becomes the primary. With its serve running, the serve does it (it
 * refuses while a primary is connected and heard from, unless --force,
 * and then takes no primary); with none, it is done on the files: a new
 * generation from the durable applied seq, role primary, a manifest of
 * the store so that the first mount resends nothing. Main thread of the
 * CLI; changes only files of the state directory.
 */
#include "netsync/roles/rolecmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/dirlock.h"
#include "common/log.h"
#include "common/startcheck.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"
#include "netsync/delta/scan.h"
#include "netsync/roles/history.h"
#include "netsync/roles/mountrec.h"
#include "netsync/roles/state.h"

#define PROMOTE_ASK_MS 10000

void rolecmd_say(const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("twinfs %s: %s\n", cmd, msg);
	fflush(stdout);
	/* the system log too, where there is one (a daemon's own log has its
	 * side of it) */
	if (access("/dev/log", W_OK) == 0) {
		openlog("twinfs", LOG_PID, LOG_DAEMON);
		syslog(LOG_WARNING, "twinfs %s: %s", cmd, msg);
		closelog();
	}
}

static void promote_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs promote --state DIR [--force] [--store DIR]\n"
		"       twinfs promote --config FILE [--force]\n"
		"Makes this secondary the primary: a new generation begins at the last\n"
		"change its store holds durably, and its serve takes no primary any more.\n"
		"Then stop the serve and mount the store (twinfs mount). Running it\n"
		"again does nothing. A connected primary that has sent nothing for three\n"
		"heartbeat intervals (net.heartbeat) is lost: its connection is dropped.\n\n"
		"  --state DIR    the secondary's state directory\n"
		"  --config FILE  the YAML file serve was started from (its state: and\n"
		"                 store:); --state wins\n"
		"  --force        promote even while a connected primary is heard from\n"
		"                 (it is dropped): only when it is known to be fenced\n"
		"  --store DIR    the store (default: the one serve last used); promote\n"
		"                 records its manifest so the first mount resends nothing\n"
		"  -h, --help     show this help\n\n"
		"Exit: 0 promoted or already the primary, 69 a primary is connected and\n"
		"heard from (it is alive: do not fail over) or another twinfs holds the\n"
		"state directory,\n"
		"64 usage, 65 an unreadable state file, 66 no such state directory,\n"
		"74 the state could not be written.\n");
}

/* Through the running serve. EX_OK, 69, or -1: no daemon answers. */
static int promote_online(const char *state, bool force)
{
	char *reply = NULL, err[1200] = "", result[32] = "";
	uint64_t gen = 0;
	bool ok = false;
	int rc;

	rc = control_call(state, force ? "promote force" : "promote", PROMOTE_ASK_MS, &reply);
	if (rc == -ENOENT || rc == -ECONNREFUSED)
		return -1;
	if (rc < 0)
		return control_cmd_error("promote", state, rc);
	ctljson_get_bool(reply, "ok", &ok);
	ctljson_get_str(reply, "error", err, sizeof(err));
	ctljson_get_str(reply, "result", result, sizeof(result));
	ctljson_get_u64(reply, "generation", &gen);
	free(reply);
	if (!ok && strstr(err, "unknown command")) {
		rolecmd_say("promote", "%s is mounted: it is the primary already", state);
		return EX_OK;
	}
	if (!ok) {
		fprintf(stderr, "twinfs promote: refused: %s\n", err);
		return EX_UNAVAILABLE;
	}
	if (strcmp(result, "already") == 0)
		rolecmd_say("promote", "%s is the primary already (generation %" PRIu64 ")",
			    state, gen);
	else
		rolecmd_say("promote", "PROMOTED %s: generation %" PRIu64 " begins; its serve "
			    "takes no primary now; stop it and mount the store", state, gen);
	return EX_OK;
}

static int promote_offline(const char *state, const char *store_flag)
{
	struct dirlock lock = DIRLOCK_INIT;
	struct state_node node;
	struct history h;
	char store[4096] = "";
	uint64_t seq = 0;
	bool dirty = false;
	int rc;

	rc = startcheck_lock("promote", "state directory", state, &lock);
	if (rc < 0)
		return cli_exit_code(rc);
	rc = history_load(state, &h);
	if (rc < 0) {
		fprintf(stderr, "twinfs promote: cannot read %s/history: %s\n", state,
			strerror(-rc));
		goto out;
	}
	if (h.role == HISTORY_PRIMARY) {
		rolecmd_say("promote", "%s is the primary already (generation %" PRIu64 ")",
			    state, history_cur(&h) ? history_cur(&h)->num : 0);
		goto out;
	}
	rc = state_node_load(state, &node);
	if (rc == 0 && access(state, F_OK) == 0) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/applied", state);
		if (access(path, F_OK) == 0)
			rc = state_applied_read(state, &seq, &dirty);
	}
	if (rc < 0) {
		fprintf(stderr, "twinfs promote: cannot read the state of %s: %s\n", state,
			strerror(-rc));
		goto out;
	}
	if (store_flag)
		snprintf(store, sizeof(store), "%s", store_flag);
	else
		mountrec_read(state, store, sizeof(store), NULL, 0);
	if (store[0] && (rc = scan_unmount(store, state)) < 0)
		fprintf(stderr, "twinfs promote: warning: cannot record the manifest of %s "
			"(%s): the first mount resends the whole store to a returning peer\n",
			store, strerror(-rc));
	else if (!store[0])
		fprintf(stderr, "twinfs promote: warning: the store is unknown (--store): the "
			"first mount resends the whole store to a returning peer\n");
	rc = history_begin(&h, seq, node.id);
	if (rc == 0) {
		h.role = HISTORY_PRIMARY;
		rc = history_save(state, &h);
	}
	if (rc < 0) {
		fprintf(stderr, "twinfs promote: cannot record the new generation in %s: %s\n",
			state, strerror(-rc));
		goto out;
	}
	rolecmd_say("promote", "PROMOTED %s: generation %" PRIu64 " begins after seq %" PRIu64
		    "%s; mount the store now", state, history_cur(&h)->num, seq,
		    dirty ? " (a batch was half applied: its paths are resent when the old "
		    "primary returns)" : "");
out:
	dirlock_release(&lock);
	return rc < 0 ? cli_exit_code(rc) : EX_OK;
}

int promote_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 'S' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state_flag = NULL, *config = NULL, *store_flag = NULL;
	char *state = NULL, *store = NULL;
	bool force = false;
	struct stat st;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state_flag = optarg; break;
		case 'c': config = optarg; break;
		case 'S': store_flag = optarg; break;
		case 'F': force = true; break;
		case 'h': promote_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("promote", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error("promote", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("promote", "unexpected argument '%s'", argv[optind]);
	rc = ctlstate_resolve("promote", state_flag, config, &state, store_flag ? NULL : &store);
	if (rc != EX_OK)
		return rc;
	if (stat(state, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs promote: no state directory %s\n", state);
		rc = EX_NOINPUT;
		goto out;
	}
	rc = promote_online(state, force);
	if (rc < 0)
		rc = promote_offline(state, store_flag ? store_flag : store);
out:
	free(state);
	free(store);
	return rc;
}
