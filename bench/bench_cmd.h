/*
 * bench_cmd — the `twinfs bench` subcommand: `bench copy`, `bench io`,
 * `bench sweep`. Parses options, runs the benchmark, prints the table and
 * writes the machine-readable results. Main thread.
 */
#ifndef TWINFS_BENCH_CMD_H
#define TWINFS_BENCH_CMD_H

/* argv[0] is "bench". Returns a sysexits code. */
int bench_cmd_main(int argc, char **argv);

#endif
