/*
 * cli — usage errors and errno-to-exit-code mapping for subcommands.
 * Main thread only.
 */
#include "common/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "twinfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'twinfs %s --help'.\n", cmd);
	return EX_USAGE;
}

int cli_exit_code(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return EX_OK;
	case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case ETIMEDOUT:
	case ECONNRESET: case EHOSTDOWN: case EPIPE: case ENOTCONN:
		return EX_UNAVAILABLE;
	case EIO: case ENOSPC: case EROFS: case EDQUOT: case EFBIG:
		return EX_IOERR;
	case EINVAL: case EBADMSG:
		return EX_DATAERR;
	case ENOENT: case ENOTDIR: case EACCES: case EPERM:
		return EX_NOINPUT;
	default:
		return EX_SOFTWARE;
	}
}
