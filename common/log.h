/*
 * log — the one logging module. Lines are logfmt: `level=info msg="..." k=v`.
 * Destination: stderr (foreground; `<N>` priority prefix when started by
 * systemd, which sets JOURNAL_STREAM), or syslog once a daemon detaches;
 * a detached daemon outside systemd on a machine without a syslog socket
 * (/dev/log) logs to a file in its state directory instead (log_set_file),
 * capped in size and rotated once (FILE.1).
 * Thread-safe: every call formats into a local buffer and writes once.
 */
#ifndef TWINFS_LOG_H
#define TWINFS_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>

enum log_sink { LOG_SINK_STDERR, LOG_SINK_SYSLOG, LOG_SINK_FILE };

/* Bytes a log file grows to before it is renamed FILE.1 (replacing the
 * previous one) and started afresh: at most twice this on disk. */
#define LOG_FILE_MAX (8u << 20)

/* LOG_SINK_SYSLOG falls back to the file named by log_set_file when no
 * syslog socket exists and the process is not under systemd (no
 * JOURNAL_STREAM or NOTIFY_SOCKET); the switch is announced on the
 * current sink (still the terminal) with the file's path. */
void log_setup(const char *ident, int level, enum log_sink sink);
/* Names the fallback file (e.g. STATE/twinfs.log) and its cap in bytes
 * (0: LOG_FILE_MAX). Call before log_setup; copies PATH. */
void log_set_file(const char *path, size_t max_bytes);
/* The sink in use now. */
enum log_sink log_get_sink(void);
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
