/*
 * demo_cmd — `twinfs demo`: a replicated pair on this machine, shown
 * working end to end. Main thread only; returns a sysexits code.
 */
#ifndef TWINFS_DEMO_CMD_H
#define TWINFS_DEMO_CMD_H

int demo_cmd_main(int argc, char **argv);

#endif
