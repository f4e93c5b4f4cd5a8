/*
 * netsync_cmd — the replication subcommands of the primary side:
 * `twinfs status` and `twinfs sync` (each returns a sysexits code).
 * Main thread only.
 */
#ifndef TWINFS_NETSYNC_CMD_H
#define TWINFS_NETSYNC_CMD_H

int status_cmd_main(int argc, char **argv);
int sync_cmd_main(int argc, char **argv);

/* Prints why the daemon of STATE could not be asked (rc from
 * control_call) and returns the exit code: 69 no daemon, 75 timeout. */
int netsync_cmd_daemon_error(const char *cmd, const char *state, int rc);

#endif
