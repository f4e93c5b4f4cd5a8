/*
 * sync_cmd — the `twinfs sync` subcommand: asks a running daemon over its
 * control socket. Main thread only; returns a sysexits code.
 */
#ifndef TWINFS_SYNC_CMD_H
#define TWINFS_SYNC_CMD_H

int sync_cmd_main(int argc, char **argv);

#endif
