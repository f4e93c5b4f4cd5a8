/*
 * serve_cmd — the `twinfs serve` subcommand (the secondary daemon).
 */
#ifndef TWINFS_SERVE_CMD_H
#define TWINFS_SERVE_CMD_H

int serve_cmd_main(int argc, char **argv);

#endif
