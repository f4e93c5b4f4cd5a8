/*
 * verify_cmd — `twinfs verify`: two trees compared entry by entry, read
 * again on both sides. Main thread; returns a sysexits code.
 */
#ifndef TWINFS_VERIFY_CMD_H
#define TWINFS_VERIFY_CMD_H

#include <stdbool.h>

int verify_cmd_main(int argc, char **argv);
/* `twinfs verify --state STATE`: the mount's store against its peer's;
 * prints the differences (unless QUIET, then only the summary) and returns
 * the exit code (0 identical, 65 different). */
int verify_state(const char *state, bool quiet);

#endif
