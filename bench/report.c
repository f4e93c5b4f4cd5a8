/*
 * report — turns a result_set into the human table, JSON and CSV, and
 * writes the output files (the HTML page is report_html.c). Main thread
 * only. It reads results and
 * writes the files it is given; it never measures or touches a target.
 */
#include "bench/report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/json.h"
#include "bench/runinfo.h"
#include "common/log.h"
#include "common/size.h"
#include "version.h"

char *report_rate(double bps, char *buf, size_t len)
{
	char iec[32], si[32];
	uint64_t b = bps > 0 && isfinite(bps) ? (uint64_t)llround(bps) : 0;

	snprintf(buf, len, "%s/s (%s/s)", size_format_iec(b, iec, sizeof iec),
		 size_format_si(b, si, sizeof si));
	return buf;
}

/* The first result with the same name (phase or pattern): ratios compare
 * every target with the first one that ran the same thing. */
static const struct result *report_baseline(const struct result_set *s,
					    const struct result *r)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, r->name) == 0 && s->v[i].jobs == r->jobs)
			return &s->v[i];
	return r;
}

static void report_ratio(const struct result_set *s, const struct result *r,
			 char *buf, size_t len)
{
	const struct result *b = report_baseline(s, r);
	double mine = r->kind == RESULT_COPY ? result_mb_per_s(r) : r->iops;
	double base = b->kind == RESULT_COPY ? result_mb_per_s(b) : b->iops;

	if (b == r)
		snprintf(buf, len, "1.00 (base)");
	else if (base > 0)
		snprintf(buf, len, "%.2f", mine / base);
	else
		snprintf(buf, len, "-");
}

void report_us(double us, char *buf, size_t len)
{
	if (us >= 1e6)
		snprintf(buf, len, "%.2f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.2f ms", us / 1e3);
	else
		snprintf(buf, len, "%.1f us", us);
}

void report_copy_figures(char *buf, size_t len, uint64_t bytes, uint64_t files,
			 double seconds)
{
	char rate[64];
	double bps = seconds > 0 ? (double)bytes / seconds : 0;

	snprintf(buf, len, "%9.3f s  %-26s %9.1f files/s", seconds,
		 report_rate(bps, rate, sizeof rate),
		 seconds > 0 ? (double)files / seconds : 0.0);
}

void report_io_figures(char *buf, size_t len, const struct result *r)
{
	char rate[64], p50[24], p99[24], p999[24];

	report_us(r->lat.p50, p50, sizeof p50);
	report_us(r->lat.p99, p99, sizeof p99);
	report_us(r->lat.p999, p999, sizeof p999);
	snprintf(buf, len, "%11.0f %-26s %10s %10s %10s %6.1f", r->iops,
		 report_rate(result_mb_per_s(r) * 1e6, rate, sizeof rate), p50, p99,
		 p999, r->cpu_pct);
}

/*
 * The table and the progress log print the same figures in the same
 * units and order (report_copy_figures, report_io_figures), so a line of
 * the log can be read against the table without converting anything.
 */
void report_print_table(FILE *out, const struct result_set *s)
{
	char fig[256], sz[32], ratio[32];

	if (s->n == 0)
		return;
	if (s->v[0].kind == RESULT_COPY) {
		fprintf(out, "\n%-6s %-32s %10s %7s %11s  %-26s %9s %-7s %s\n", "phase",
			"target", "size", "files", "seconds", "throughput",
			"files/s", "", "ratio");
		for (size_t i = 0; i < s->n; i++) {
			const struct result *r = &s->v[i];

			report_ratio(s, r, ratio, sizeof ratio);
			report_copy_figures(fig, sizeof fig, r->bytes, r->files, r->seconds);
			fprintf(out, "%-6s %-32s %10s %7llu %s %s\n", r->name, r->target,
				size_format_iec(r->bytes, sz, sizeof sz),
				(unsigned long long)r->files, fig, ratio);
		}
		return;
	}
	fprintf(out, "\n%-14s %-28s %11s %-26s %10s %10s %10s %6s %s\n", "pattern",
		"target", "IOPS", "throughput", "lat p50", "p99", "p99.9",
		"CPU%", "ratio");
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		report_ratio(s, r, ratio, sizeof ratio);
		report_io_figures(fig, sizeof fig, r);
		fprintf(out, "%-14s %-28s %s %s\n", r->name, r->target, fig, ratio);
	}
}

static void report_json_lat(struct json *j, const struct result_lat *l)
{
	json_key(j, "lat_us");
	json_object_begin(j);
	json_key(j, "p50"); json_double(j, l->p50);
	json_key(j, "p99"); json_double(j, l->p99);
	json_key(j, "p999"); json_double(j, l->p999);
	json_key(j, "mean"); json_double(j, l->mean);
	json_key(j, "max"); json_double(j, l->max);
	json_object_end(j);
}

static void report_json_copy_row(struct json *j, const struct result *r)
{
	json_key(j, "target"); json_string(j, r->target);
	json_key(j, "phase"); json_string(j, r->name);
	json_key(j, "bytes"); json_uint(j, r->bytes);
	json_key(j, "files"); json_uint(j, r->files);
	json_key(j, "seconds"); json_double(j, r->seconds);
	json_key(j, "mb_per_s"); json_double(j, result_mb_per_s(r));
	json_key(j, "files_per_s"); json_double(j, result_files_per_s(r));
	report_json_lat(j, &r->lat);
	json_key(j, "cpu_pct"); json_double(j, r->cpu_pct);
	json_key(j, "start"); json_string(j, r->start);
	json_key(j, "end"); json_string(j, r->end);
	if (!r->nruns)
		return;
	json_key(j, "runs");
	json_array_begin(j);
	for (size_t k = 0; k < r->nruns; k++) {
		const struct result_run *u = &r->runs[k];

		json_object_begin(j);
		json_key(j, "bytes"); json_uint(j, u->bytes);
		json_key(j, "files"); json_uint(j, u->files);
		json_key(j, "seconds"); json_double(j, u->seconds);
		json_key(j, "mb_per_s");
		json_double(j, u->seconds > 0 ? (double)u->bytes / u->seconds / 1e6 : 0.0);
		json_key(j, "files_per_s");
		json_double(j, u->seconds > 0 ? (double)u->files / u->seconds : 0.0);
		report_json_lat(j, &u->lat);
		json_key(j, "cpu_pct"); json_double(j, u->cpu_pct);
		json_key(j, "start"); json_string(j, u->start);
		json_key(j, "end"); json_string(j, u->end);
		json_object_end(j);
	}
	json_array_end(j);
}

static void report_json_io_row(struct json *j, const struct result *r)
{
	json_key(j, "target"); json_string(j, r->target);
	json_key(j, "pattern"); json_string(j, r->name);
	json_key(j, "bs"); json_uint(j, r->bs);
	json_key(j, "read_pct"); json_int(j, r->read_pct);
	json_key(j, "random_pct"); json_int(j, r->random_pct);
	json_key(j, "jobs"); json_int(j, r->jobs);
	json_key(j, "iodepth"); json_int(j, r->iodepth);
	json_key(j, "direct"); json_bool(j, r->direct);
	json_key(j, "page_cache");
	json_string(j, r->direct ? "bypassed (O_DIRECT)" :
		    r->cached ? "kept: file read into the cache before the run (--cached)" :
		    "dropped before each job and each pass (fio invalidate=1)");
	json_key(j, "bytes"); json_uint(j, r->bytes);
	json_key(j, "ops"); json_uint(j, r->ops);
	json_key(j, "seconds"); json_double(j, r->seconds);
	json_key(j, "mb_per_s"); json_double(j, result_mb_per_s(r));
	json_key(j, "iops"); json_double(j, r->iops);
	json_key(j, "read_iops"); json_double(j, r->read_iops);
	json_key(j, "write_iops"); json_double(j, r->write_iops);
	report_json_lat(j, &r->lat);
	json_key(j, "cpu_pct"); json_double(j, r->cpu_pct);
	json_key(j, "start"); json_string(j, r->start);
	json_key(j, "end"); json_string(j, r->end);
}

void report_write_json(FILE *f, const struct result_set *s)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	if (s->run)
		runinfo_write_json(&j, s->run);
	json_key(&j, "tool"); json_string(&j, "twinfs " TWINFS_VERSION);
	json_key(&j, "command"); json_string(&j, s->command ? s->command : "");
	if (s->knee) {
		json_key(&j, "knee_threads"); json_int(&j, s->knee);
	}
	json_key(&j, "results");
	json_array_begin(&j);
	for (size_t i = 0; i < s->n; i++) {
		json_object_begin(&j);
		if (s->v[i].kind == RESULT_COPY)
			report_json_copy_row(&j, &s->v[i]);
		else
			report_json_io_row(&j, &s->v[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
}

/* RFC 4180: quote a field holding a comma, quote or line break. */
static void report_csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* One header per kind: a copy row has no IOPS, an IO row no file count. */
void report_write_csv(FILE *f, const struct result_set *s)
{
	int copy = s->n && s->v[0].kind == RESULT_COPY;

	if (copy)
		fputs("kind,target,phase,bytes,seconds,mb_per_s,files,files_per_s,"
		      "lat_p50_us,lat_p99_us,lat_p999_us,cpu_pct,start,end\r\n", f);
	else
		fputs("kind,target,pattern,bytes,seconds,mb_per_s,iops,read_iops,"
		      "write_iops,lat_p50_us,lat_p99_us,lat_p999_us,cpu_pct,jobs,iodepth,"
		      "bs,read_pct,random_pct,direct,cached,start,end\r\n", f);
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		fputs(r->kind == RESULT_COPY ? "copy," : "io,", f);
		report_csv_field(f, r->target);
		fputc(',', f);
		report_csv_field(f, r->name);
		fprintf(f, ",%llu,%.9f,%.6f,", (unsigned long long)r->bytes, r->seconds,
			result_mb_per_s(r));
		if (r->kind == RESULT_COPY)
			fprintf(f, "%llu,%.3f,", (unsigned long long)r->files,
				result_files_per_s(r));
		else
			fprintf(f, "%.1f,%.1f,%.1f,", r->iops, r->read_iops, r->write_iops);
		fprintf(f, "%.3f,%.3f,%.3f,%.1f,", r->lat.p50, r->lat.p99, r->lat.p999,
			r->cpu_pct);
		if (r->kind == RESULT_IO)
			fprintf(f, "%d,%d,%u,%d,%d,%d,%d,", r->jobs, r->iodepth, r->bs,
				r->read_pct, r->random_pct, r->direct, r->cached);
		report_csv_field(f, r->start);
		fputc(',', f);
		report_csv_field(f, r->end);
		fputs("\r\n", f);
	}
}

void report_write_xml_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
				fputc('?', f);
			else
				fputc(*s, f);
		}
	}
}

static int report_write_file(const char *path, const struct result_set *s,
			     void (*writer)(FILE *, const struct result_set *))
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f) {
		rc = -errno;
		goto out_log;
	}
	writer(f, s);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
out_log:
	if (rc)
		log_error("cannot write benchmark results", "path=\"%s\" err=\"%s\"",
			  path, strerror(-rc));
	return rc;
}

int report_write_outputs(const struct result_set *s, const char *json_path,
			 const char *csv_path, const char *report_dir)
{
	char path[PATH_MAX];
	int rc = 0, r;

	if (json_path && (r = report_write_file(json_path, s, report_write_json)) && !rc)
		rc = r;
	if (csv_path && (r = report_write_file(csv_path, s, report_write_csv)) && !rc)
		rc = r;
	if (!report_dir)
		return rc;
	if (mkdir(report_dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		log_error("cannot create the report folder", "path=\"%s\" err=\"%s\"",
			  report_dir, strerror(errno));
		return rc ? rc : r;
	}
	snprintf(path, sizeof path, "%s/results.json", report_dir);
	if ((r = report_write_file(path, s, report_write_json)) && !rc)
		rc = r;
	snprintf(path, sizeof path, "%s/results.csv", report_dir);
	if ((r = report_write_file(path, s, report_write_csv)) && !rc)
		rc = r;
	snprintf(path, sizeof path, "%s/report.html", report_dir);
	if ((r = report_write_file(path, s, report_write_html)) && !rc)
		rc = r;
	return rc;
}
