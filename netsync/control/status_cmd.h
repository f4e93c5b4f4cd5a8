/*
 * status_cmd — the `twinfs status` subcommand: asks a running daemon over its
 * control socket. Main thread only; returns a sysexits code.
 */
#ifndef TWINFS_STATUS_CMD_H
#define TWINFS_STATUS_CMD_H

int status_cmd_main(int argc, char **argv);

#endif
