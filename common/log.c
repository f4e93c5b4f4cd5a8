/*
 * log — formats logfmt lines and sends them to stderr, syslog or a file.
 * Called from any thread; state is a few words set once at start-up
 * (log_setup) and read without locks afterwards; each line is one write().
 * The file sink takes log_file_lock around its write and rotation only.
 */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int log_level = LOG_NOTICE;
static enum log_sink log_sink = LOG_SINK_STDERR;
static int log_systemd;	/* stderr is the journal: use <N> prefixes */
static const char *log_ident = "twinfs";
/* the file sink: path, cap, fd and bytes in it, under log_file_lock */
static char log_file_path[PATH_MAX];
static size_t log_file_max = LOG_FILE_MAX;
static int log_file_fd = -1;
static size_t log_file_size;
static pthread_mutex_t log_file_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const log_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "error", [LOG_WARNING] = "warn", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_set_file(const char *path, size_t max_bytes)
{
	snprintf(log_file_path, sizeof(log_file_path), "%s", path ? path : "");
	log_file_max = max_bytes ? max_bytes : LOG_FILE_MAX;
}

enum log_sink log_get_sink(void)
{
	return log_sink;
}

/* Opens the log file for appending; 0 or -errno. Under log_file_lock. */
static int log_file_open(void)
{
	struct stat st;
	int fd;

	fd = open(log_file_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (log_file_fd >= 0)
		close(log_file_fd);
	log_file_fd = fd;
	log_file_size = fstat(fd, &st) == 0 ? (size_t)st.st_size : 0;
	return 0;
}

/* Past the cap: FILE becomes FILE.1 and a new FILE is started. */
static void log_file_rotate(void)
{
	char old[PATH_MAX + 2];

	snprintf(old, sizeof(old), "%s.1", log_file_path);
	if (rename(log_file_path, old) == 0)
		log_file_open();
	else
		log_file_size = 0;	/* keep appending rather than lose lines */
}

/*
 * Why a file: a detached daemon logs to syslog, but where nothing listens
 * on /dev/log (containers, minimal hosts) every line after start-up
 * would be lost. Under systemd, stderr or /dev/log reach the journal.
 */
static bool log_want_file(void)
{
	return log_file_path[0] && !getenv("JOURNAL_STREAM") && !getenv("NOTIFY_SOCKET") &&
	       access("/dev/log", F_OK) != 0;
}

void log_setup(const char *ident, int level, enum log_sink sink)
{
	if (ident)
		log_ident = ident;
	log_level = level;
	log_systemd = getenv("JOURNAL_STREAM") != NULL;
	if (sink == LOG_SINK_SYSLOG && log_want_file()) {
		int rc;

		pthread_mutex_lock(&log_file_lock);
		rc = log_file_open();
		pthread_mutex_unlock(&log_file_lock);
		if (rc == 0) {
			/* said on the old sink, which the user still sees */
			log_msg(LOG_NOTICE, "no syslog socket (/dev/log): logging to a file",
				"file=%s max_bytes=%zu", log_file_path, log_file_max);
			log_sink = LOG_SINK_FILE;
			return;
		}
		log_msg(LOG_WARNING, "no syslog socket and cannot open the log file",
			"file=%s err=\"%s\"", log_file_path, strerror(-rc));
	}
	log_sink = sink;
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
	if ((log_sink == LOG_SINK_STDERR && !log_systemd) || log_sink == LOG_SINK_FILE) {
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
	} else if (log_sink == LOG_SINK_FILE) {
		line[n++] = '\n';
		pthread_mutex_lock(&log_file_lock);
		if (log_file_size + n > log_file_max)
			log_file_rotate();
		if (write(log_file_fd, line, n) == (ssize_t)n)
			log_file_size += n;
		pthread_mutex_unlock(&log_file_lock);
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
