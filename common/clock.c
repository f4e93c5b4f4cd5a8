/*
 * clock — thin wrappers over clock_gettime. Any thread.
 */
#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_real_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double clock_mono_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

char *clock_wall_str(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	long off;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	off = tm.tm_gmtoff / 60;
	snprintf(buf + n, len - n, ".%03ld%c%02ld:%02ld", ts.tv_nsec / 1000000,
		 off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
	return buf;
}
