/*
 * stop — Ctrl-C and SIGTERM for the benchmarks: instead of dying with test
 * files left on a target, the current phase stops at the next IO, the
 * command removes what it wrote and exits 130. stop_install runs on the
 * main thread; stop_requested may be called from any thread.
 */
#ifndef TWINFS_BENCH_STOP_H
#define TWINFS_BENCH_STOP_H

/* Installs SIGINT/SIGTERM handlers (without SA_RESTART, so a blocking
 * read or write returns EINTR and the loop can look at the flag). */
void stop_install(void);
/* Nonzero once a stop signal arrived. */
int stop_requested(void);

#endif
