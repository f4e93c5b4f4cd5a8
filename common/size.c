/*
 * size — byte-size parsing ("7.71G", "1.94GB", "64KiB") and formatting.
 * No state; callable from any thread.
 */
#include "common/size.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int size_unit(const char *u, double *mult)
{
	static const char prefixes[] = "KMGTP";
	const char *p;
	size_t n = strlen(u);
	double base;

	if (n == 0 || strcasecmp(u, "B") == 0) {
		*mult = 1;
		return 0;
	}
	p = strchr(prefixes, toupper((unsigned char)u[0]));
	if (!p)
		return -EINVAL;
	if (n == 1 || strcasecmp(u + 1, "iB") == 0 || strcasecmp(u + 1, "i") == 0)
		base = 1024;
	else if (strcasecmp(u + 1, "B") == 0)
		base = 1000;
	else
		return -EINVAL;
	*mult = pow(base, (double)(p - prefixes + 1));
	return 0;
}

int size_parse(const char *s, uint64_t *out)
{
	char *end;
	double v, mult;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	char unit[8];
	size_t n = strlen(end);
	if (n >= sizeof(unit))
		return -EINVAL;
	memcpy(unit, end, n + 1);
	while (n && isspace((unsigned char)unit[n - 1]))
		unit[--n] = '\0';
	if (size_unit(unit, &mult))
		return -EINVAL;
	v *= mult;
	if (v >= 18446744073709551615.0)
		return -ERANGE;
	*out = (uint64_t)llround(v);
	return 0;
}

static char *size_format(uint64_t bytes, double base, const char *const *units,
			 char *buf, size_t len)
{
	double v = (double)bytes;
	int i = 0;

	while (v >= base && units[i + 1]) {
		v /= base;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu %s", (unsigned long long)bytes, units[0]);
	else
		snprintf(buf, len, "%.*f %s", v >= 100 ? 0 : v >= 10 ? 1 : 2, v,
			 units[i]);
	return buf;
}

char *size_format_iec(uint64_t bytes, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", NULL };

	return size_format(bytes, 1024, u, buf, len);
}

char *size_format_si(uint64_t bytes, char *buf, size_t len)
{
	static const char *const u[] = { "B", "kB", "MB", "GB", "TB", "PB", NULL };

	return size_format(bytes, 1000, u, buf, len);
}
