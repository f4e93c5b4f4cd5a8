/*
 * size — parses and prints byte sizes the way users type them.
 * "100M", "64KiB", "1.94GB", "7.71G", "4k", "512": a bare letter (K, M, G,
 * T, P) and an -iB suffix are powers of 1024; a -B suffix with an SI
 * prefix (kB, MB, GB) is a power of 1000. Pure functions, any thread.
 */
#ifndef TWINFS_SIZE_H
#define TWINFS_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0 and stores bytes in *out, or -EINVAL (syntax) / -ERANGE. */
int size_parse(const char *s, uint64_t *out);
/* "1.00 GiB" (IEC, 3 significant digits); returns buf. */
char *size_format_iec(uint64_t bytes, char *buf, size_t len);
/* "1.07 GB" (SI); returns buf. */
char *size_format_si(uint64_t bytes, char *buf, size_t len);

#endif
