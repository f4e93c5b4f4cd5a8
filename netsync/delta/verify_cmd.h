/*
 * verify_cmd — `twinfs verify`: two trees compared entry by entry, read
 * again on both sides. Main thread; returns a sysexits code.
 */
#ifndef TWINFS_VERIFY_CMD_H
#define TWINFS_VERIFY_CMD_H

int verify_cmd_main(int argc, char **argv);

#endif
