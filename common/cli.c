/*
 * cli — usage errors and the errno-to-exit-code table for subcommands.
 * Main thread only.
 *
 * The table is the one in docs/exit-codes.md and twinfs(1): one fault,
 * one code, whichever subcommand meets it and whether a flag or the config
 * file named the path. Only these sysexits codes are used: 64 usage,
 * 65 bad data, 66 no input, 69 unavailable, 70 software, 73 can't create,
 * 74 I/O, 75 temporary failure or timeout, 77 permission, 78 configuration.
 */
#include "common/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	/* one line, the reason in it: scripts and journals show the last line */
	fprintf(stderr, "twinfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'twinfs %s --help')\n", cmd);
	return EX_USAGE;
}

int cli_exit_code(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return EX_OK;
	/* a peer, a daemon, a port or a directory someone else holds */
	case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case ECONNRESET:
	case EHOSTDOWN: case EPIPE: case ENOTCONN: case ECONNABORTED:
	case EBUSY: case EADDRINUSE: case EADDRNOTAVAIL: case ENODEV:
		return EX_UNAVAILABLE;
	case ETIMEDOUT:
		return EX_TEMPFAIL;
	case EIO: case ENOSPC: case EROFS: case EDQUOT: case EFBIG:
		return EX_IOERR;
	case EINVAL: case EBADMSG:
		return EX_DATAERR;
	case ENOENT: case ENOTDIR: case EISDIR: case ENAMETOOLONG: case ELOOP:
		return EX_NOINPUT;
	case EACCES: case EPERM:
		return EX_NOPERM;
	case EEXIST:
		return EX_CANTCREAT;
	default:
		return EX_SOFTWARE;
	}
}
