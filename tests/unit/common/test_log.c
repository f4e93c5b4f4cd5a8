/* Unit tests for common/log: level parsing and the logfmt line format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_line_format),
		cmocka_unit_test(test_adjust),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
