/*
 * cli — helpers every subcommand uses: usage errors with sysexits codes,
 * the shared -v/-q/--help options, and the subcommand table type.
 * Subcommands return an exit code (sysexits.h); main() returns it.
 */
#ifndef TWINFS_CLI_H
#define TWINFS_CLI_H

#include <sysexits.h>

/* A subcommand: `twinfs NAME ...` calls fn(argc, argv) with argv[0]=NAME. */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* Prints "twinfs CMD: <msg>" and "Try 'twinfs CMD --help'." to stderr and
 * returns EX_USAGE (64). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Maps -errno from an internal function to a sysexits code:
 * ECONNREFUSED/EHOSTUNREACH/ETIMEDOUT... -> EX_UNAVAILABLE (69),
 * EIO/ENOSPC/EROFS... -> EX_IOERR (74), EINVAL -> EX_DATAERR,
 * ENOENT/ENOTDIR/EACCES -> EX_NOINPUT, anything else -> EX_SOFTWARE. */
int cli_exit_code(int neg_errno);

#endif
