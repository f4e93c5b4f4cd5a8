/*
 * Unit tests for conf/: the YAML loader against bad inputs (every error
 * located at file:line:column), command-line overrides, validation, and
 * the printer's output read back by the loader.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/conf.h"

static char dir[256], store[300], state[300], mnt[300], file[300];

static int setup(void **st)
{
	snprintf(dir, sizeof dir, "/tmp/twinfs-conf.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(store, sizeof store, "%s/store", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	snprintf(file, sizeof file, "%s/c.yaml", dir);
	mkdir(store, 0755);
	mkdir(mnt, 0755);
	return 0;
}

static int teardown(void **st)
{
	char cmd[300];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static void write_file(const char *text, size_t len)
{
	FILE *f = fopen(file, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* Loads TEXT (with %s replaced by store, state, mnt in that order when
 * present) and returns the diag; *rc gets the loader's result. */
static void load(const char *text, struct conf *c, struct conf_diag *d, int *rc)
{
	char buf[16384];
	int n;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = snprintf(buf, sizeof buf, text, store, state, mnt);
#pragma GCC diagnostic pop

	write_file(buf, (size_t)n);
	conf_init(c);
	memset(d, 0, sizeof(*d));
	*rc = conf_load_file(c, file, d);
}

struct bad_case {
	const char *name;
	const char *yaml;
	int line, column;	/* of the first error; 0: don't check */
	const char *needle;	/* in the first error's message */
};

static void test_bad_inputs(void **st)
{
	static const struct bad_case cases[] = {
		{ "empty", "", 0, 0, "empty" },
		{ "only a comment", "# nothing\n", 0, 0, "empty" },
		{ "malformed flow", "store: [a\n", 2, 1, "invalid YAML" },
		{ "bad indentation", "store: /tmp\n  state: x\n", 2, 8, "invalid YAML" },
		{ "top-level list", "- a\n- b\n", 1, 1, "mapping" },
		{ "unknown key", "store: %s\nstate: %s\nmountpont: %s\n", 3, 1,
		  "did you mean 'mountpoint'" },
		{ "unknown nested key", "journal:\n  size_limt: 1G\n", 2, 3,
		  "did you mean 'journal.size_limit'" },
		{ "unknown section", "jurnal:\n  size_limit: 1G\n", 1, 1, "unknown key 'jurnal'" },
		{ "uint wrong type", "journal:\n  commit_ms: soon\n", 2, 14,
		  "not a non-negative integer" },
		{ "uint negative", "sync:\n  timeout: -3\n", 2, 12, "not a non-negative integer" },
		{ "uint out of range", "sync:\n  timeout: 99999\n", 2, 12, "out of range" },
		{ "size wrong type", "journal:\n  size_limit: big\n", 2, 15, "not a size" },
		{ "size too small", "journal:\n  size_limit: 1M\n", 2, 15, "out of range" },
		{ "size not pow2", "delta:\n  block_size: 100KiB\n", 2, 15, "power of two" },
		{ "bool wrong", "tls:\n  insecure: maybe\n", 2, 13, "not a boolean" },
		{ "enum wrong", "mode: fast\n", 1, 7, "not a mode" },
		{ "log level wrong", "log:\n  level: loud\n", 2, 10, "not a log level" },
		{ "addr no port", "peer: 127.0.0.1\n", 1, 7, "HOST:PORT" },
		{ "addr port 0", "peer: 127.0.0.1:0\n", 1, 7, "HOST:PORT" },
		{ "addr port too big", "listen: localhost:70000\n", 1, 9, "HOST:PORT" },
		{ "list for scalar", "store: [a, b]\n", 1, 8, "got a list" },
		{ "map for scalar", "mode: {a: b}\n", 1, 7, "got a mapping" },
		{ "scalar for section", "journal: 5\n", 1, 10, "is a section" },
		{ "duplicate key", "mode: async\nmode: sync\n", 2, 1, "duplicate key 'mode' (first set at line 1)" },
		{ "duplicate nested", "log:\n  level: info\n  level: debug\n", 3, 3, "duplicate key 'log.level'" },
		{ "missing dir", "store: /nonexistent/twinfs/x\n", 1, 8, "No such file" },
		{ "file for dir", "store: /etc/passwd\n", 1, 8, "not a directory" },
		{ "dir for file", "tls:\n  psk_file: /tmp\n", 2, 13, "not a regular file" },
		{ "state parent missing", "state: /nonexistent/a/b\n", 1, 8, "neither does its parent" },
		{ "non-utf8", "node:\n  name: \"a\xff\xfe\"\n", 2, 11, "UTF-8" },
		{ "tab indentation", "log:\n\tlevel: info\n", 2, 1, "invalid YAML" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conf c;
		struct conf_diag d;
		int rc;

		load(cases[i].yaml, &c, &d, &rc);
		if (rc == 0 || d.n_errors == 0)
			fail_msg("case '%s': accepted", cases[i].name);
		if (!d.v[0].msg || !strstr(d.v[0].msg, cases[i].needle))
			fail_msg("case '%s': message '%s' lacks '%s'", cases[i].name,
				 d.v[0].msg, cases[i].needle);
		if (!d.v[0].file || strcmp(d.v[0].file, file) != 0)
			fail_msg("case '%s': error not attributed to the file", cases[i].name);
		if (cases[i].line && (d.v[0].line != cases[i].line ||
				      d.v[0].column != cases[i].column))
			fail_msg("case '%s': at %d:%d, want %d:%d", cases[i].name, d.v[0].line,
				 d.v[0].column, cases[i].line, cases[i].column);
		conf_diag_free(&d);
		conf_free(&c);
	}
}

static void test_every_error_reported(void **st)
{
	struct conf c;
	struct conf_diag d;
	int rc;

	load("mountpont: /x\nmode: fast\njournal:\n  commit_ms: 0\nlog:\n  level: x\n",
	     &c, &d, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(d.n_errors, 4);
	assert_int_equal(d.v[0].line, 1);
	assert_int_equal(d.v[1].line, 2);
	assert_int_equal(d.v[2].line, 4);
	assert_int_equal(d.v[3].line, 6);
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_missing_file_and_directory(void **st)
{
	struct conf c;
	struct conf_diag d = { 0 };

	conf_init(&c);
	assert_int_equal(conf_load_file(&c, "/nonexistent/twinfs.yaml", &d), -ENOENT);
	assert_int_equal(d.n_errors, 1);
	assert_non_null(strstr(d.v[0].msg, "cannot open"));
	conf_diag_free(&d);
	assert_int_equal(conf_load_file(&c, dir, &d), -EISDIR);
	assert_non_null(strstr(d.v[0].msg, "is a directory"));
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_long_value(void **st)
{
	size_t n = 20000;
	char *y = malloc(n + 64);
	struct conf c;
	struct conf_diag d = { 0 };

	assert_non_null(y);
	strcpy(y, "node:\n  name: ");
	memset(y + strlen(y), 'x', n);
	strcpy(y + 14 + n, "\n");
	write_file(y, strlen(y));
	conf_init(&c);
	assert_int_equal(conf_load_file(&c, file, &d), -EINVAL);
	assert_non_null(strstr(d.v[0].msg, "too long"));
	assert_int_equal(d.v[0].line, 2);
	conf_diag_free(&d);
	conf_free(&c);
	free(y);
}

static void test_valid_and_defaults(void **st)
{
	struct conf c;
	struct conf_diag d;
	int rc;

	load("store: %s\nstate: %s\nmountpoint: %s\npeer: '[::1]:7420'\nmode: sync\n"
	     "journal:\n  size_limit: 64MiB\nlog:\n  level: debug\ntls:\n  psk_file: ~\n",
	     &c, &d, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(d.n, 0);
	assert_string_equal(c.store, store);
	assert_int_equal(c.mode, CONF_MODE_SYNC);
	assert_int_equal(c.journal_size_limit, 64ull << 20);
	assert_int_equal(c.journal_commit_ms, 5);	/* default */
	assert_int_equal(c.block_size, 128 * 1024);	/* default */
	assert_int_equal(c.sync_timeout_s, 10);
	assert_null(c.psk_file);
	assert_int_equal(conf_validate(&c, CONF_FOR_MOUNT, &d), 0);
	/* A serve needs listen. */
	assert_int_equal(conf_validate(&c, CONF_FOR_SERVE, &d), -EINVAL);
	assert_non_null(strstr(d.v[0].msg, "missing required key 'listen'"));
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_required_keys(void **st)
{
	struct conf c;
	struct conf_diag d;
	int rc;

	load("mode: async\n", &c, &d, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(conf_validate(&c, CONF_FOR_ANY, &d), -EINVAL);
	assert_int_equal(d.n_errors, 3);	/* store, state, mountpoint|listen */
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_lenient_paths(void **st)
{
	struct conf c;
	struct conf_diag d = { .lenient_paths = true };

	write_file("store: /nonexistent/s\n", 22);
	conf_init(&c);
	assert_int_equal(conf_load_file(&c, file, &d), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.n_errors, 0);
	assert_true(d.v[0].warning);
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_command_line_override(void **st)
{
	struct conf c;
	struct conf_diag d;
	int rc;

	load("store: %s\nstate: %s\nmode: async\n", &c, &d, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(conf_set(&c, "mode", "sync", &d), 0);
	assert_int_equal(c.mode, CONF_MODE_SYNC);
	assert_int_equal(conf_set(&c, "journal.size_limit", "2G", &d), 0);
	assert_int_equal(c.journal_size_limit, 2ull << 30);
	assert_int_equal(conf_set(&c, "sync.timeout", "0", &d), -EINVAL);
	assert_null(d.v[0].file);
	assert_int_equal(conf_set(&c, "mountpoitn", "/x", &d), -EINVAL);
	assert_non_null(strstr(d.v[1].msg, "did you mean 'mountpoint'"));
	conf_diag_free(&d);
	conf_free(&c);
}

static void test_print_round_trip(void **st)
{
	struct conf c, c2;
	struct conf_diag d;
	char *buf = NULL;
	size_t len = 0;
	int rc;
	FILE *m;

	load("store: %s\nstate: %s\nmountpoint: %s\nnode:\n  name: 'a \"quoted\" name'\n"
	     "delta:\n  block_size: 1MiB\nsync:\n  timeout: 3\n", &c, &d, &rc);
	assert_int_equal(rc, 0);
	m = open_memstream(&buf, &len);
	conf_print(m, &c);
	fclose(m);
	write_file(buf, len);
	conf_init(&c2);
	assert_int_equal(conf_load_file(&c2, file, &d), 0);
	assert_string_equal(c2.node_name, "a \"quoted\" name");
	assert_string_equal(c2.store, c.store);
	assert_string_equal(c2.mountpoint, c.mountpoint);
	assert_null(c2.peer);
	assert_int_equal(c2.block_size, 1u << 20);
	assert_int_equal(c2.sync_timeout_s, 3);
	assert_int_equal(c2.journal_size_limit, c.journal_size_limit);
	free(buf);
	conf_diag_free(&d);
	conf_free(&c);
	conf_free(&c2);
}

static void test_example_config(void **st)
{
	/* The shipped example must document every key and load cleanly once
	 * its directories exist (here: rewritten to temporary ones). */
	const char *src = getenv("TWINFS_SRC");
	char path[512], *text, *p;
	struct conf c;
	struct conf_diag d = { .lenient_paths = true };
	FILE *f;
	long n;

	if (!src)
		skip();
	snprintf(path, sizeof path, "%s/conf/twinfs.example.yaml", src);
	conf_init(&c);
	assert_int_equal(conf_load_file(&c, path, &d), 0);
	assert_int_equal(d.n_errors, 0);
	assert_int_equal(conf_validate(&c, CONF_FOR_ANY, &d), 0);
	conf_free(&c);
	conf_diag_free(&d);

	/* Every key of the table appears in the example. */
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	{
		char *out = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&out, &len);

		conf_print_keys(m);
		fclose(m);
		for (char *line = strtok_r(out, "\n", &p); line; line = strtok_r(NULL, "\n", &p)) {
			char key[64], needle[80], *dot;

			assert_int_equal(sscanf(line, " %63s", key), 1);
			dot = strrchr(key, '.');
			snprintf(needle, sizeof needle, "%s:", dot ? dot + 1 : key);
			if (!strstr(text, needle))
				fail_msg("example config does not document '%s'", key);
		}
		free(out);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_every_error_reported),
		cmocka_unit_test(test_missing_file_and_directory),
		cmocka_unit_test(test_long_value),
		cmocka_unit_test(test_valid_and_defaults),
		cmocka_unit_test(test_required_keys),
		cmocka_unit_test(test_lenient_paths),
		cmocka_unit_test(test_command_line_override),
		cmocka_unit_test(test_print_round_trip),
		cmocka_unit_test(test_example_config),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
