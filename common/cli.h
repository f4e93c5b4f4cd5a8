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

/* Prints "twinfs CMD: <msg> (see 'twinfs CMD --help')" as one line to
 * stderr and returns EX_USAGE (64). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Maps -errno from an internal function to the one documented exit code
 * (docs/exit-codes.md): peers, daemons, ports and directories in use
 * (ECONNREFUSED, ENOTCONN, EBUSY, EADDRINUSE...) -> 69 EX_UNAVAILABLE;
 * ETIMEDOUT -> 75 EX_TEMPFAIL; EIO/ENOSPC/EROFS... -> 74 EX_IOERR;
 * EINVAL/EBADMSG -> 65 EX_DATAERR; ENOENT/ENOTDIR -> 66 EX_NOINPUT;
 * EACCES/EPERM -> 77 EX_NOPERM; EEXIST -> 73 EX_CANTCREAT; anything else
 * -> 70 EX_SOFTWARE. */
int cli_exit_code(int neg_errno);

#endif
