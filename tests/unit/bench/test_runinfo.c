/* Unit tests for bench/runinfo and what the result files open with: the
 * mount of a path found in mountinfo text (escapes, stacked and nested
 * mounts), shell quoting of the command line, ISO 8601 timestamps with the
 * zone, the dataset's size in whole blocks, and JSON rows that carry only
 * the fields of their kind. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "bench/dataset.h"
#include "bench/report.h"
#include "bench/runinfo.h"
#include "common/clock.h"

static const char mountinfo[] =
	"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
	"30 22 0:26 / /mnt rw,nosuid shared:5 - tmpfs tmpfs rw,size=1024k\n"
	"31 30 0:27 / /mnt/my\\040pair rw,nosuid,nodev,relatime shared:6 - "
	"fuse.twinfs twinfs rw,user_id=0,group_id=0\n"
	"32 30 0:28 / /mnt/my rw master:2 - xfs /dev/vdb rw,attr2\n"
	"33 30 0:29 / /mnt/my\\040pair rw,noatime - fuse.twinfs twinfs2 rw,user_id=0\n";

static void test_mount_parse(void **state)
{
	struct runinfo_target t;

	memset(&t, 0, sizeof t);
	assert_int_equal(runinfo_mount_parse(mountinfo, "/var/tmp", &t), 0);
	assert_string_equal(t.mountpoint, "/");
	assert_string_equal(t.fstype, "ext4");
	assert_string_equal(t.source, "/dev/vda");
	assert_string_equal(t.options, "rw,relatime");
	assert_string_equal(t.super_options, "rw,discard");

	/* \040 is a space; the later of two stacked mounts is the live one;
	 * "/mnt/my" is not a parent of "/mnt/my pair/x". */
	memset(&t, 0, sizeof t);
	assert_int_equal(runinfo_mount_parse(mountinfo, "/mnt/my pair/x", &t), 0);
	assert_string_equal(t.mountpoint, "/mnt/my pair");
	assert_string_equal(t.fstype, "fuse.twinfs");
	assert_string_equal(t.source, "twinfs2");
	assert_string_equal(t.options, "rw,noatime");

	memset(&t, 0, sizeof t);
	assert_int_equal(runinfo_mount_parse(mountinfo, "/mnt/my", &t), 0);
	assert_string_equal(t.fstype, "xfs");
	memset(&t, 0, sizeof t);
	assert_int_equal(runinfo_mount_parse(mountinfo, "/mnt/mine", &t), 0);
	assert_string_equal(t.fstype, "tmpfs");

	assert_int_equal(runinfo_mount_parse("garbage\n", "/x", &t), -ENOENT);
}

static void test_live_target(void **state)
{
	struct runinfo *ri = calloc(1, sizeof(*ri));
	char *argv[] = { "bench", "copy", "--target", "/tmp", NULL };

	assert_non_null(ri);
	runinfo_init(ri, 4, argv);
	assert_string_equal(ri->command_line, "twinfs bench copy --target /tmp");
	assert_true(ri->cpus >= 1);
	assert_true(ri->mem_total > 0);
	assert_non_null(strstr(ri->kernel, "Linux"));
	assert_int_equal(runinfo_add_target(ri, "/tmp"), 0);
	assert_true(ri->targets[0].fstype[0] != '\0');
	assert_true(ri->targets[0].free_bytes > 0);
	assert_true(ri->targets[0].free_bytes <= ri->targets[0].total_bytes);
	assert_true(ri->targets[0].block_size >= 512);
	free(ri);
}

static void test_shell_quote(void **state)
{
	char b[128] = "";

	runinfo_shell_quote(b, sizeof b, "twinfs");
	runinfo_shell_quote(b, sizeof b, "--target=/a,b");
	runinfo_shell_quote(b, sizeof b, "/my dir");
	runinfo_shell_quote(b, sizeof b, "it's");
	runinfo_shell_quote(b, sizeof b, "");
	assert_string_equal(b, "twinfs --target=/a,b '/my dir' 'it'\\''s' ''");
}

static void test_iso8601(void **state)
{
	char buf[40];
	regex_t re;

	assert_int_equal(regcomp(&re, "^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:"
				 "[0-6][0-9]\\.[0-9]{3}[+-][0-9]{2}:[0-9]{2}$",
				 REG_EXTENDED | REG_NOSUB), 0);
	setenv("TZ", "Asia/Kolkata", 1);	/* +05:30: minutes in the zone */
	tzset();
	clock_wall_str(buf, sizeof buf);
	assert_int_equal(regexec(&re, buf, 0, NULL, 0), 0);
	if (access("/usr/share/zoneinfo/Asia/Kolkata", R_OK) == 0)
		assert_string_equal(buf + strlen(buf) - 6, "+05:30");
	setenv("TZ", "UTC", 1);
	tzset();
	clock_wall_str(buf, sizeof buf);
	assert_string_equal(buf + strlen(buf) - 6, "+00:00");
	regfree(&re);
}

static void test_space_needed(void **state)
{
	struct dataset ds;
	uint64_t need, sum = 0;

	assert_int_equal(dataset_plan(&ds, 1, 10000, 100, 100000), 0);
	need = dataset_space_needed(&ds, 4096);
	for (size_t i = 0; i < ds.nsmall; i++)
		sum += (ds.small[i].size + 4095) / 4096 * 4096;
	/* the large file in 3 blocks, every small file and folder rounded up */
	assert_int_equal(need, 3 * 4096 + sum + (ds.ndirs + 2) * 4096);
	assert_true(need > 10000 + 100000);
	assert_int_equal(dataset_space_needed(&ds, 0), need);
	dataset_free(&ds);
}

static char *json_of(const struct result_set *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	report_write_json(f, s);
	fclose(f);
	return buf;
}

static void test_json_rows_by_kind(void **state)
{
	struct runinfo *ri = calloc(1, sizeof(*ri));
	struct result_set s = { .command = "copy" };
	struct result *r;
	char *j, *argv[] = { "bench", "copy" };

	runinfo_init(ri, 2, argv);
	runinfo_param_uint(ri, "large_bytes", 1000);
	runinfo_param_str(ri, "durability", "fsync");
	runinfo_finish(ri);
	s.run = ri;
	r = result_set_add(&s, RESULT_COPY, "/a", "large");
	r->bytes = 1000;
	r->files = 1;
	r->seconds = 1;
	j = json_of(&s);
	/* "run" comes first, with the parameters in the order given */
	assert_true(strncmp(j, "{\n  \"run\": {\n    \"twinfs_version\": ", 35) == 0);
	assert_non_null(strstr(j, "\"parameters\": {\n      \"large_bytes\": 1000,\n"
			       "      \"durability\": \"fsync\"\n    }"));
	assert_non_null(strstr(j, "\"files_per_s\": 1"));
	assert_null(strstr(j, "\"iops\""));
	assert_null(strstr(j, "\"ops\""));
	free(j);
	result_set_free(&s);

	s = (struct result_set){ .command = "io", .run = ri };
	r = result_set_add(&s, RESULT_IO, "/a", "4k-randread");
	r->ops = 10;
	r->iops = 10;
	j = json_of(&s);
	assert_non_null(strstr(j, "\"iops\": 10"));
	assert_non_null(strstr(j, "\"page_cache\": \"dropped before each job"));
	assert_null(strstr(j, "\"files\""));
	assert_null(strstr(j, "\"files_per_s\""));
	free(j);
	result_set_free(&s);
	free(ri);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_parse),
		cmocka_unit_test(test_live_target),
		cmocka_unit_test(test_shell_quote),
		cmocka_unit_test(test_iso8601),
		cmocka_unit_test(test_space_needed),
		cmocka_unit_test(test_json_rows_by_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
