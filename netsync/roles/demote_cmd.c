/*
 * demote_cmd — `twinfs demote --state DIR`: a stopped primary becomes a
 * secondary. Each path its journal holds past the peer's last ack is
 * copied into STATE/conflicts/<time>-demote and listed in STATE/tail
 * (docs/protocol.md, "Generations"); then STATE/applied takes the
 * journal's head, the role becomes secondary (the commit point) and the
 * journal goes. Main thread of the CLI; reads the store, writes only the
 * state directory.
 */
#include "netsync/roles/rolecmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/dirlock.h"
#include "common/log.h"
#include "common/startcheck.h"
#include "journal/journal.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"
#include "netsync/roles/conflicts.h"
#include "netsync/roles/history.h"
#include "netsync/roles/mountrec.h"
#include "netsync/roles/state.h"
#include "netsync/roles/tail.h"

static void demote_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs demote --state DIR [--store DIR]\n"
		"       twinfs demote --config FILE\n"
		"Makes this (unmounted) primary a secondary, so that `twinfs serve` can\n"
		"run on it and the new primary brings it up to date. Changes its peer\n"
		"never acknowledged are kept: their current versions are copied into\n"
		"STATE/conflicts/ (`twinfs status` lists them) until the new primary's\n"
		"state replaces them; copies equal to it are dropped then. Running it\n"
		"again does nothing.\n\n"
		"  --state DIR    the primary's state directory\n"
		"  --config FILE  the YAML file the mount was started from (its state:\n"
		"                 and store:); --state wins\n"
		"  --store DIR    the store (default: the one the last mount used)\n"
		"  -h, --help     show this help\n\n"
		"Exit: 0 demoted or already a secondary, 69 the mount (or another\n"
		"twinfs) still uses the state directory, 64 usage, 65 an unreadable\n"
		"journal or state file, 66 no such state or store directory, 74 the\n"
		"copies or state could not be written.\n");
}

struct demote_ctx {
	struct tail t;
	int store_fd;
	int rc;
};

/* Every entry below DIR (relative, "" = the store) into the tail. */
static void demote_all(struct demote_ctx *c, const char *dir, int depth)
{
	char rel[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd;

	fd = openat(c->store_fd, dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && c->rc == 0 && depth < 128) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(rel, sizeof(rel), "%s%s%s", dir, dir[0] ? "/" : "", de->d_name);
		c->rc = tail_add(&c->t, rel);
		if (c->rc == 0 && de->d_type == DT_DIR)
			demote_all(c, rel, depth + 1);
	}
	closedir(d);
}

/* A path the journal lists as not acknowledged. The root to walk after a
 * crash: its entries changed in the crash window follow one by one
 * (journal_list_pending_deep). A damaged journal ("" as journal-damaged)
 * can rule nothing out: every entry of the store is kept. */
static void demote_pending(const char *path, const char *why, void *arg)
{
	struct demote_ctx *c = arg;

	if (c->rc < 0)
		return;
	if (!path[0]) {
		if (strcmp(why, "journal-damaged") == 0)
			demote_all(c, "", 0);
		return;
	}
	if (strcmp(why, "renamed") != 0)
		c->rc = tail_add(&c->t, path);
	if (c->rc == 0 && (!strcmp(why, "rename") || !strcmp(why, "renamed")))
		c->rc = tail_add_moved(&c->t, path);
}

static int demote_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/* Removes STATE/journal and STATE/manifest: a secondary has neither. */
static int demote_drop_journal(const char *state)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/journal", state);
	if (access(p, F_OK) == 0 && nftw(p, demote_rm_cb, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	snprintf(p, sizeof(p), "%s/manifest", state);
	if (unlink(p) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* The journal's head and pending paths, the copies, STATE/applied. */
static int demote_keep_tail(const char *state, const char *store, struct demote_ctx *c,
			    uint64_t *head, uint64_t *acked)
{
	struct journal_opts jo = { .state_dir = state, .store_dir = store };
	struct journal_stats js;
	struct journal *j;
	int rc;

	/* First the pending paths, as `status --pending` lists them after a
	 * crash: with the window of changes whose records the crash may have
	 * lost (a clean open and close below would hide it). */
	rc = journal_list_pending_deep(state, store, demote_pending, c);
	if (rc == 0)
		rc = c->rc;
	if (rc < 0)
		return rc;
	/* opening recovers it as the next mount would (torn tail): the head */
	rc = journal_open(&jo, &j);
	if (rc < 0)
		return rc;
	journal_get_stats(j, &js);
	journal_close(j);
	*head = js.head_seq;
	*acked = js.acked_seq;
	if (!c->t.n)
		return 0;
	rc = conflicts_begin(state, "demote", c->t.id, sizeof(c->t.id));
	if (rc < 0)
		return rc;
	for (size_t off = 0; rc >= 0 && off < c->t.len; off += strlen(c->t.paths + off) + 1) {
		if (tail_moved(c->t.paths + off))
			continue;
		rc = conflicts_save(state, c->t.id, c->store_fd, c->t.paths + off);
	}
	if (rc >= 0)
		rc = tail_save(state, &c->t);
	if (rc < 0)	/* a refused demote changes nothing: no half folder */
		conflicts_remove(state, c->t.id);
	return rc;
}

static int demote_run(const char *state, const char *store_flag)
{
	struct dirlock lock = DIRLOCK_INIT;
	struct demote_ctx c = { .store_fd = -1 };
	struct history h;
	char store[PATH_MAX] = "";
	uint64_t head = 0, acked = 0;
	int rc;

	rc = startcheck_lock("demote", "state directory", state, &lock);
	if (rc < 0)
		return cli_exit_code(rc);
	rc = history_load(state, &h);
	if (rc < 0) {
		fprintf(stderr, "twinfs demote: cannot read %s/history: %s\n", state,
			strerror(-rc));
		goto out;
	}
	if (h.role != HISTORY_PRIMARY) {
		/* a demote cut short after its commit point left the journal */
		rc = demote_drop_journal(state);
		if (rc == 0 && h.role == HISTORY_NONE) {
			h.role = HISTORY_SECONDARY;
			rc = history_save(state, &h);
		}
		if (rc == 0)
			rolecmd_say("demote", "%s is a secondary already", state);
		goto out;
	}
	if (store_flag)
		snprintf(store, sizeof(store), "%s", store_flag);
	else if (mountrec_read(state, store, sizeof(store), NULL, 0) < 0) {
		fprintf(stderr, "twinfs demote: the store of %s is unknown: give --store DIR\n",
			state);
		rc = -ENOENT;
		goto out;
	}
	c.store_fd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.store_fd < 0) {
		rc = -errno;
		fprintf(stderr, "twinfs demote: cannot open the store %s: %s\n", store,
			strerror(-rc));
		goto out;
	}
	rc = demote_keep_tail(state, store, &c, &head, &acked);
	if (rc < 0) {
		fprintf(stderr, "twinfs demote: cannot keep the changes the peer may lack: %s; "
			"nothing was changed\n", strerror(-rc));
		goto out;
	}
	/* the store holds the journal's line up to its head; the commit
	 * point is the role */
	rc = state_applied_write(state, head, false);
	if (rc == 0) {
		h.role = HISTORY_SECONDARY;
		rc = history_save(state, &h);
	}
	if (rc == 0)
		rc = demote_drop_journal(state);
	if (rc < 0) {
		fprintf(stderr, "twinfs demote: cannot write the state of %s: %s\n", state,
			strerror(-rc));
		goto out;
	}
	if (c.t.n)
		rolecmd_say("demote", "DEMOTED %s: %zu path(s) changed after the peer's last "
			    "ack (seq %" PRIu64 " of %" PRIu64 ") are kept in conflicts/%s until "
			    "the new primary's state replaces them; now run twinfs serve", state,
			    c.t.n, acked, head, c.t.id);
	else
		rolecmd_say("demote", "DEMOTED %s: the peer had acknowledged every change "
			    "(seq %" PRIu64 "); now run twinfs serve", state, head);
out:
	if (c.store_fd >= 0)
		close(c.store_fd);
	tail_free(&c.t);
	dirlock_release(&lock);
	return rc < 0 ? cli_exit_code(rc) : EX_OK;
}

int demote_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state_flag = NULL, *config = NULL, *store_flag = NULL;
	char *state = NULL, *store = NULL, *reply = NULL;
	struct stat st;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state_flag = optarg; break;
		case 'c': config = optarg; break;
		case 'S': store_flag = optarg; break;
		case 'h': demote_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("demote", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error("demote", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("demote", "unexpected argument '%s'", argv[optind]);
	rc = ctlstate_resolve("demote", state_flag, config, &state, store_flag ? NULL : &store);
	if (rc != EX_OK)
		return rc;
	if (stat(state, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs demote: no state directory %s\n", state);
		rc = EX_NOINPUT;
		goto out;
	}
	if (control_call(state, "status", 5000, &reply) == 0) {
		char role[32] = "";

		ctljson_get_str(reply, "role", role, sizeof(role));
		if (strcmp(role, "secondary") == 0) {
			rolecmd_say("demote", "%s is a secondary already (serving)", state);
			rc = EX_OK;
		} else {
			fprintf(stderr, "twinfs demote: refused: %s is mounted; unmount it first "
				"(fusermount3 -u MOUNTPOINT)\n", state);
			rc = EX_UNAVAILABLE;
		}
		goto out;
	}
	rc = demote_run(state, store_flag ? store_flag : store);
out:
	free(reply);
	free(state);
	free(store);
	return rc;
}
