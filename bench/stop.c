/*
 * stop — a flag set by SIGINT/SIGTERM and read by the benchmark loops.
 * The handler only stores to a sig_atomic_t; everything else (cleanup,
 * messages) happens on the normal return path.
 */
#include "bench/stop.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t stop_flag;

static void stop_handler(int sig)
{
	stop_flag = sig;
}

void stop_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int stop_requested(void)
{
	return stop_flag != 0;
}
