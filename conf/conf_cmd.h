/*
 * conf_cmd — the `twinfs config check|print|keys` subcommand.
 */
#ifndef TWINFS_CONF_CMD_H
#define TWINFS_CONF_CMD_H

int conf_cmd_main(int argc, char **argv);

#endif
