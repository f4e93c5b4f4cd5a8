/*
 * rolecmd — the commands that change a node's role: `twinfs promote`
 * (a secondary becomes the primary), `twinfs demote` (a stopped primary
 * becomes a secondary, its unacknowledged changes kept aside) and
 * `twinfs resolve`. Each is idempotent and exits with a code an HA
 * manager can act on (docs/exit-codes.md). Main thread of the CLI.
 */
#ifndef TWINFS_ROLECMD_H
#define TWINFS_ROLECMD_H

int promote_cmd_main(int argc, char **argv);
int demote_cmd_main(int argc, char **argv);
int resolve_cmd_main(int argc, char **argv);

/* Shared by the three: the one-line result on stdout and in the log
 * (at warning level: role changes must stand out in any log). */
void rolecmd_say(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
