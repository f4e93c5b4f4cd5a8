/*
 * mount_cmd — `twinfs mount`: composes the config, the journal, the
 * filesystem and (once merged) replication into one mount process.
 */
#ifndef TWINFS_MOUNT_CMD_H
#define TWINFS_MOUNT_CMD_H

int mount_cmd_main(int argc, char **argv);

#endif
