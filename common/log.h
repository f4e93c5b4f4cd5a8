/*
 * log — the one logging module. Lines are logfmt: `level=info msg="..." k=v`.
 * Destination: stderr (foreground; `<N>` priority prefix when started by
 * systemd, which sets JOURNAL_STREAM), or syslog once a daemon detaches.
 * Thread-safe: every call formats into a local buffer and writes once.
 */
#ifndef TWINFS_LOG_H
#define TWINFS_LOG_H

#include <stdarg.h>
#include <syslog.h>

enum log_sink { LOG_SINK_STDERR, LOG_SINK_SYSLOG };

void log_setup(const char *ident, int level, enum log_sink sink);
void log_set_level(int level);
int log_get_level(void);
/* "error"|"warn"|"notice"|"info"|"debug" -> LOG_ERR..LOG_DEBUG, or -EINVAL. */
int log_level_parse(const char *s);
const char *log_level_name(int level);
/* Adjust the level by the count of -v (up) and -q (down) flags. */
void log_adjust(int verbose, int quiet);

/* msg: a short human sentence; kvfmt: printf format of `key=value` fields. */
void log_msg(int prio, const char *msg, const char *kvfmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vmsg(int prio, const char *msg, const char *kvfmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* log_error("peer unreachable", "peer=%s err=%s", addr, strerror(e)); */
#define log_error(msg, ...)  log_msg(LOG_ERR, msg, "" __VA_ARGS__)
#define log_warn(msg, ...)   log_msg(LOG_WARNING, msg, "" __VA_ARGS__)
#define log_notice(msg, ...) log_msg(LOG_NOTICE, msg, "" __VA_ARGS__)
#define log_info(msg, ...)   log_msg(LOG_INFO, msg, "" __VA_ARGS__)
#define log_debug(msg, ...)  log_msg(LOG_DEBUG, msg, "" __VA_ARGS__)

#endif
