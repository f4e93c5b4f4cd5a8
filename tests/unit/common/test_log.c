/* Unit tests for common/log: level parsing and the logfmt line format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/log.h"

static void test_level_parse(void **state)
{
	assert_int_equal(log_level_parse("error"), LOG_ERR);
	assert_int_equal(log_level_parse("WARN"), LOG_WARNING);
	assert_int_equal(log_level_parse("warning"), LOG_WARNING);
	assert_int_equal(log_level_parse("debug"), LOG_DEBUG);
	assert_true(log_level_parse("loud") < 0);
	assert_string_equal(log_level_name(LOG_INFO), "info");
}

/* Captures stderr into a pipe around one log call. */
static void capture(char *buf, size_t len, int prio)
{
	int p[2], saved = dup(2);
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	dup2(p[1], 2);
	log_msg(prio, "peer unreachable", "peer=%s err=%d", "127.0.0.1:7420", 111);
	log_msg(LOG_DEBUG, "too quiet", NULL);
	dup2(saved, 2);
	close(p[1]);
	n = read(p[0], buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(p[0]);
	close(saved);
}

static void test_line_format(void **state)
{
	char buf[1024];

	unsetenv("JOURNAL_STREAM");
	log_setup("t", LOG_INFO, LOG_SINK_STDERR);
	capture(buf, sizeof buf, LOG_ERR);
	assert_non_null(strstr(buf, "level=error msg=\"peer unreachable\" peer=127.0.0.1:7420 err=111\n"));
	assert_null(strstr(buf, "too quiet"));
	assert_true(strncmp(buf, "ts=", 3) == 0);

	setenv("JOURNAL_STREAM", "8:1234", 1);
	log_setup("t", LOG_INFO, LOG_SINK_STDERR);
	capture(buf, sizeof buf, LOG_WARNING);
	assert_true(strncmp(buf, "<4>level=warn msg=", 18) == 0);
}

static void test_adjust(void **state)
{
	log_setup("t", LOG_NOTICE, LOG_SINK_STDERR);
	log_adjust(2, 0);
	assert_int_equal(log_get_level(), LOG_DEBUG);
	log_adjust(0, 9);
	assert_int_equal(log_get_level(), LOG_ERR);
}

/* The file sink (no syslog socket, not under systemd): lines go to the
 * file, and past the cap it is renamed FILE.1 once and started afresh. */
static void test_file_rotates_once(void **state)
{
	char dir[] = "/tmp/twinfs-logtest.XXXXXX", path[256], old[260], cmd[300];
	struct stat st, st1;

	if (access("/dev/log", F_OK) == 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/twinfs.log", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	unsetenv("JOURNAL_STREAM");
	unsetenv("NOTIFY_SOCKET");
	log_set_file(path, 1000);
	{
		/* the switch is announced on stderr: keep it off the test output */
		int saved = dup(2), null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		log_setup("twinfs", LOG_INFO, LOG_SINK_SYSLOG);
		dup2(saved, 2);
		close(null);
		close(saved);
	}
	assert_int_equal(log_get_sink(), LOG_SINK_FILE);
	for (int i = 0; i < 100; i++)
		log_msg(LOG_NOTICE, "a line of about eighty bytes", "i=%d", i);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(stat(old, &st1), 0);
	assert_true(st.st_size <= 1000);
	assert_true(st1.st_size <= 1000 && st1.st_size > 500);
	assert_int_equal(st.st_mode & 0777, 0600);
	log_setup("twinfs", LOG_NOTICE, LOG_SINK_STDERR);
	log_set_file(NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_line_format),
		cmocka_unit_test(test_adjust),
		cmocka_unit_test(test_file_rotates_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
