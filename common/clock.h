/*
 * clock — monotonic and wall-clock helpers shared by every module.
 */
#ifndef TWINFS_CLOCK_H
#define TWINFS_CLOCK_H

#include <stddef.h>
#include <stdint.h>

uint64_t clock_mono_ns(void);
double clock_mono_s(void);
/* "2026-11-30 05:45:38.123" local time; returns buf. */
char *clock_wall_str(char *buf, size_t len);

#endif
