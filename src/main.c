/*
 * twinfs — entry point: dispatches `twinfs SUBCOMMAND ...` from one table.
 * Each subcommand is a NAME_cmd.c whose entry point is NAME_cmd_main(), in
 * the module it drives: config in conf/, serve in netsync/secondary/,
 * status and sync in netsync/control/, keygen and id in netsync/wire/, verify in
 * netsync/control/,
 * bench in bench/; mount, mirror and demo
 * here in src/, because they wire several modules together (fs/, journal/,
 * netsync/primary/). Each parses its own options with getopt_long, has
 * --help, and returns a sysexits code. Main thread only.
 */
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "common/cli.h"
#include "common/log.h"
#include "version.h"

#include "bench/bench_cmd.h"
#include "conf/conf_cmd.h"
#include "netsync/control/status_cmd.h"
#include "netsync/control/sync_cmd.h"
#include "netsync/control/verify_cmd.h"
#include "netsync/roles/rolecmd.h"
#include "netsync/secondary/serve_cmd.h"
#include "netsync/wire/keygen_cmd.h"
#include "src/demo_cmd.h"
#include "src/mirror_cmd.h"
#include "src/mount_cmd.h"

static const struct cli_command commands[] = {
	{ "config", conf_cmd_main, "check or print a YAML config file" },
	{ "mount", mount_cmd_main, "mount the store with FUSE and journal every change" },
	{ "serve", serve_cmd_main, "run the secondary: receive and apply a primary's changes" },
	{ "sync", sync_cmd_main, "wait until the peer holds every change made so far" },
	{ "status", status_cmd_main, "show the state of a mount or serve daemon" },
	{ "promote", promote_cmd_main, "make this secondary the primary (failover)" },
	{ "demote", demote_cmd_main, "make this stopped primary a secondary (failback)" },
	{ "resolve", resolve_cmd_main, "end a split brain without discarding a version" },
	{ "demo", demo_cmd_main, "run a replicated pair on this machine and show it working" },
	{ "bench", bench_cmd_main, "copy and IO benchmarks on folders and mounts" },
	{ "mirror", mirror_cmd_main, "push a tree to a serve peer or a folder (rsync-like, block delta)" },
	{ "verify", verify_cmd_main, "prove two trees (or a mount and its peer) are equal" },
	{ "keygen", keygen_cmd_main, "make the keys that secure the link between the nodes" },
	{ "id", id_cmd_main, "print this node's id, which the peer pins" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs SUBCOMMAND [OPTIONS]\n"
		"A replicated file store for two Linux servers.\n\n"
		"Subcommands:\n");
	for (const struct cli_command *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out,
		"\n'twinfs SUBCOMMAND --help' describes each one.\n"
		"  -h, --help     show this help\n"
		"  -V, --version  print the version\n");
}

int main(int argc, char **argv)
{
	const char *name;

	log_setup("twinfs", LOG_NOTICE, LOG_SINK_STDERR);
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 ||
	    strcmp(name, "help") == 0) {
		usage(stdout);
		return EX_OK;
	}
	if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0) {
		printf("twinfs %s\n", TWINFS_VERSION);
		return EX_OK;
	}
	for (const struct cli_command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c->fn(argc - 1, argv + 1);
	fprintf(stderr, "twinfs: unknown subcommand '%s'\n"
		"Try 'twinfs --help' for the list.\n", name);
	return EX_USAGE;
}
