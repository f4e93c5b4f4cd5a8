/*
 * clock — monotonic and wall-clock helpers shared by every module.
 */
#ifndef TWINFS_CLOCK_H
#define TWINFS_CLOCK_H

#include <stddef.h>
#include <stdint.h>

uint64_t clock_mono_ns(void);
double clock_mono_s(void);
/* The wall clock at the kernel tick's resolution (a few ms), at the cost
 * of a memory read: for timestamps taken on hot paths. */
uint64_t clock_real_coarse_ns(void);
/* Local time in ISO 8601 with the zone, "YYYY-MM-DDTHH:MM:SS.mmm+HH:MM",
 * so a timestamp read elsewhere still names its instant; returns buf. */
char *clock_wall_str(char *buf, size_t len);

#endif
