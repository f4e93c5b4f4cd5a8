/*
 * keygen_cmd — `twinfs keygen` and `twinfs id`: the keys of the link.
 * Main thread only; each returns a sysexits code.
 */
#ifndef TWINFS_KEYGEN_CMD_H
#define TWINFS_KEYGEN_CMD_H

int keygen_cmd_main(int argc, char **argv);
int id_cmd_main(int argc, char **argv);

#endif
