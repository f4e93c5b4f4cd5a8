/*
 * log — formats logfmt lines and sends them to stderr or syslog.
 * Called from any thread; state is a few words set once at start-up
 * (log_setup) and read without locks afterwards; each line is one write().
 */
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static int log_level = LOG_NOTICE;
static enum log_sink log_sink = LOG_SINK_STDERR;
static int log_systemd;	/* stderr is the journal: use <N> prefixes */
static const char *log_ident = "twinfs";

static const char *const log_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "error", [LOG_WARNING] = "warn", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_setup(const char *ident, int level, enum log_sink sink)
{
	if (ident)
		log_ident = ident;
	log_level = level;
	log_sink = sink;
	log_systemd = getenv("JOURNAL_STREAM") != NULL;
	if (sink == LOG_SINK_SYSLOG)
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

void log_adjust(int verbose, int quiet)
{
	int l = log_level + verbose - quiet;

	if (l < LOG_ERR)
		l = LOG_ERR;
	if (l > LOG_DEBUG)
		l = LOG_DEBUG;
	log_level = l;
}

int log_level_parse(const char *s)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
		if (strcasecmp(s, log_names[i]) == 0)
			return i;
	if (strcasecmp(s, "warning") == 0)
		return LOG_WARNING;
	return -EINVAL;
}

const char *log_level_name(int level)
{
	if (level < 0 || level > LOG_DEBUG)
		return "?";
	return log_names[level];
}

void log_vmsg(int prio, const char *msg, const char *kvfmt, va_list ap)
{
	char line[2048];
	size_t n = 0;
	int saved = errno;

	if (prio > log_level)
		return;
	if (log_sink == LOG_SINK_STDERR && log_systemd)
		n += snprintf(line + n, sizeof(line) - n, "<%d>", prio);
	if (log_sink == LOG_SINK_STDERR && !log_systemd) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n += strftime(line + n, sizeof(line) - n, "ts=%Y-%m-%dT%H:%M:%S", &tm);
		n += snprintf(line + n, sizeof(line) - n, ".%03ldZ ",
			      ts.tv_nsec / 1000000);
	}
	n += snprintf(line + n, sizeof(line) - n, "level=%s msg=\"%s\"",
		      log_level_name(prio), msg);
	if (kvfmt && kvfmt[0] && n < sizeof(line) - 2) {
		line[n++] = ' ';
		n += vsnprintf(line + n, sizeof(line) - n, kvfmt, ap);
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (log_sink == LOG_SINK_SYSLOG) {
		line[n] = '\0';
		syslog(prio, "%s", line);
	} else {
		line[n++] = '\n';
		ssize_t w = write(STDERR_FILENO, line, n);
		(void)w;
	}
	errno = saved;
}

void log_msg(int prio, const char *msg, const char *kvfmt, ...)
{
	va_list ap;

	va_start(ap, kvfmt);
	log_vmsg(prio, msg, kvfmt, ap);
	va_end(ap);
}
