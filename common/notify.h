/*
 * notify — the service manager's readiness protocol (sd_notify(3)) without
 * libsystemd: one datagram of "KEY=VALUE\n" lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 * A no-op when the variable is unset. Any thread.
 */
#ifndef TWINFS_NOTIFY_H
#define TWINFS_NOTIFY_H

#include <stdbool.h>

/* True when a service manager listens ($NOTIFY_SOCKET is set). */
bool notify_enabled(void);

/* Sends the formatted message (e.g. "READY=1\nSTATUS=serving"). Returns
 * 0 (also when there is no socket to tell) or -errno. */
int notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
