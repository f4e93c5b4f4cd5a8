/*
 * mirror_cmd — `twinfs mirror SRC_DIR HOST:PORT|DEST_DIR ...`: a one-shot,
 * rsync-like push of a tree through the convergence engine
 * (netsync/delta/mirror.h). Main thread (plus the engine's threads).
 */
#ifndef TWINFS_MIRROR_CMD_H
#define TWINFS_MIRROR_CMD_H

int mirror_cmd_main(int argc, char **argv);

#endif
