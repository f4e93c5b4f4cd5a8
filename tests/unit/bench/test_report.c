/* Unit tests for bench/json and bench/report: JSON escaping and numbers,
 * CSV quoting, and SVG/HTML that xmllint accepts as well-formed XML. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/json.h"
#include "bench/report.h"

/* Runs fn into a memory stream and returns the text (caller frees). */
static char *capture_json(void (*fn)(struct json *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	json_init(&j, f);
	fn(&j);
	fclose(f);
	return buf;
}

static void write_escapes(struct json *j)
{
	json_object_begin(j);
	json_key(j, "s");
	json_string(j, "a\"b\\c\nd\te\x01" "f/\xc3\xa9");
	json_object_end(j);
}

static void test_json_escapes(void **state)
{
	char *s = capture_json(write_escapes);

	assert_string_equal(s, "{\n  \"s\": \"a\\\"b\\\\c\\nd\\te\\u0001f/\xc3\xa9\"\n}\n");
	free(s);
}

static void write_numbers(struct json *j)
{
	json_array_begin(j);
	json_double(j, 0.0);
	json_double(j, 0.1);
	json_double(j, 1e20);
	json_double(j, NAN);
	json_double(j, INFINITY);
	json_uint(j, UINT64_MAX);
	json_int(j, -5);
	json_bool(j, 1);
	json_array_begin(j);
	json_array_end(j);
	json_array_end(j);
}

static void test_json_numbers(void **state)
{
	char *s = capture_json(write_numbers);

	/* 0.1 round-trips exactly; non-finite numbers are null. */
	assert_string_equal(s, "[\n  0,\n  0.10000000000000001,\n  1e+20,\n  null,\n"
			    "  null,\n  18446744073709551615,\n  -5,\n  true,\n  []\n]\n");
	free(s);
}

static void sample(struct result_set *s)
{
	struct result *r;

	memset(s, 0, sizeof(*s));
	s->command = "copy";
	r = result_set_add(s, RESULT_COPY, "/mnt/a <&> \"q\"", "large");
	r->bytes = 1000000000;
	r->seconds = 2.5;
	r->files = 1;
	r = result_set_add(s, RESULT_COPY, "/mnt/b,c", "large");
	r->bytes = 1000000000;
	r->seconds = 5;
	r->files = 1;
}

static void test_mb_per_s_and_csv(void **state)
{
	struct result_set s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	sample(&s);
	assert_true(fabs(result_mb_per_s(&s.v[0]) - 400.0) < 1e-9);
	assert_true(fabs(result_files_per_s(&s.v[1]) - 0.2) < 1e-12);
	f = open_memstream(&buf, &len);
	report_write_csv(f, &s);
	fclose(f);
	/* A field with a quote is quoted and the quote doubled; a comma too. */
	assert_non_null(strstr(buf, "copy,\"/mnt/a <&> \"\"q\"\"\",large,1000000000,"));
	assert_non_null(strstr(buf, "copy,\"/mnt/b,c\",large,1000000000,5.000000000,200.000000,"));
	free(buf);
	result_set_free(&s);
}

static void test_rate_format(void **state)
{
	char b[64];

	assert_string_equal(report_rate(1073741824.0, b, sizeof b), "1.00 GiB/s (1.07 GB/s)");
	assert_string_equal(report_rate(0, b, sizeof b), "0 B/s (0 B/s)");
}

/* Writes text to a temp file and runs xmllint --noout on it. */
static int xmllint_ok(const char *text, const char *extra)
{
	char path[] = "/tmp/twinfs-test-svg.XXXXXX", cmd[256];
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof cmd, "xmllint --noout %s %s", extra, path);
	rc = system(cmd);
	unlink(path);
	return rc;
}

static void test_svg_well_formed(void **state)
{
	const char *label[] = { "/mnt/a <&> \"q\" 'x'", "b\x01" };
	const char *text[] = { "400.0 MB/s", "0 MB/s" };
	double value[] = { 400, NAN };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		skip();	/* libxml2-utils is in packaging/install-deps.sh */
	f = open_memstream(&buf, &len);
	report_write_svg_bars(f, "large & small: <MB/s>", 2, label, value, text);
	fclose(f);
	assert_non_null(strstr(buf, "&lt;&amp;&gt; &quot;q&quot; &#39;x&#39;"));
	assert_int_equal(xmllint_ok(buf, ""), 0);
	free(buf);

	/* An empty chart is still a valid SVG document. */
	buf = NULL;
	f = open_memstream(&buf, &len);
	report_write_svg_bars(f, "nothing", 0, NULL, NULL, NULL);
	fclose(f);
	assert_int_equal(xmllint_ok(buf, ""), 0);
	free(buf);
}

static void test_html_parses(void **state)
{
	struct result_set s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		skip();
	sample(&s);
	f = open_memstream(&buf, &len);
	report_write_html(f, &s);
	fclose(f);
	assert_null(strstr(buf, "<script"));
	assert_non_null(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	/* The page is also well-formed XML (XHTML-compatible markup). */
	assert_int_equal(xmllint_ok(strstr(buf, "<html"), ""), 0);
	free(buf);
	result_set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_escapes),
		cmocka_unit_test(test_json_numbers),
		cmocka_unit_test(test_mb_per_s_and_csv),
		cmocka_unit_test(test_rate_format),
		cmocka_unit_test(test_svg_well_formed),
		cmocka_unit_test(test_html_parses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
