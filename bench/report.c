/*
 * report — turns a result_set into the human table, JSON, CSV and an HTML
 * page with inline SVG charts. Main thread only. It reads results and
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

#include "bench/json.h"
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

static void report_us(double us, char *buf, size_t len)
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

void report_write_svg_bars(FILE *f, const char *title, size_t n,
			   const char *const *label, const double *value,
			   const char *const *text)
{
	const int label_w = 260, bar_w = 360, text_w = 220, row_h = 26, top = 30;
	const int width = label_w + bar_w + text_w, height = top + (int)n * row_h + 10;
	double max = 0;

	for (size_t i = 0; i < n; i++)
		if (isfinite(value[i]) && value[i] > max)
			max = value[i];
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n",
		width, height, width, height);
	fputs("<title>", f);
	report_write_xml_escaped(f, title);
	fputs("</title>\n<text x=\"4\" y=\"18\" font-weight=\"bold\">", f);
	report_write_xml_escaped(f, title);
	fputs("</text>\n", f);
	for (size_t i = 0; i < n; i++) {
		int y = top + (int)i * row_h;
		double w = max > 0 && isfinite(value[i]) && value[i] > 0 ?
			   value[i] / max * bar_w : 0;

		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
			label_w - 8, y + 16);
		report_write_xml_escaped(f, label[i]);
		fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\"/>\n", label_w, y + 3, w, row_h - 6,
			i % 2 ? "#4f8fd8" : "#2e6fb7");
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">", label_w + w + 6, y + 16);
		report_write_xml_escaped(f, text[i]);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

/* One chart for the results whose name is `name` (a phase or a pattern),
 * a bar per target: MB/s for copies, IOPS for IO. */
static void report_html_chart(FILE *f, const struct result_set *s,
			      const char *name, int by_target)
{
	const char **label = calloc(s->n, sizeof(*label));
	const char **text = calloc(s->n, sizeof(*text));
	char (*lbuf)[96] = calloc(s->n, sizeof(*lbuf));
	char (*tbuf)[96] = calloc(s->n, sizeof(*tbuf));
	double *value = calloc(s->n, sizeof(*value));
	char title[160], rate[64];
	size_t n = 0;

	if (!label || !text || !lbuf || !tbuf || !value)
		goto out_free;
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		if (strcmp(by_target ? r->name : r->target, name) != 0)
			continue;
		report_rate(result_mb_per_s(r) * 1e6, rate, sizeof rate);
		if (r->kind == RESULT_COPY) {
			value[n] = result_mb_per_s(r);
			snprintf(tbuf[n], sizeof tbuf[n], "%.1f MB/s, %.*f files/s",
				 value[n], result_files_per_s(r) < 10 ? 2 : 0,
				 result_files_per_s(r));
		} else {
			value[n] = result_mb_per_s(r);
			snprintf(tbuf[n], sizeof tbuf[n], "%.1f MB/s, %.0f IOPS",
				 value[n], r->iops);
		}
		if (by_target)
			label[n] = r->target;
		else if (s->command && strcmp(s->command, "sweep") == 0)
			snprintf(lbuf[n], sizeof lbuf[n], "%s, %d thread%s", r->name,
				 r->jobs, r->jobs == 1 ? "" : "s");
		else
			snprintf(lbuf[n], sizeof lbuf[n], "%s", r->name);
		if (!by_target)
			label[n] = lbuf[n];
		text[n] = tbuf[n];
		n++;
	}
	if (by_target)
		snprintf(title, sizeof title, "%s: MB/s per target", name);
	else
		snprintf(title, sizeof title, "%s: MB/s per pattern", name);
	fputs("<figure>\n", f);
	report_write_svg_bars(f, title, n, label, value, text);
	fputs("</figure>\n", f);
out_free:
	free(label);
	free(text);
	free(lbuf);
	free(tbuf);
	free(value);
}

static int report_seen(const struct result_set *s, size_t i, int by_name)
{
	for (size_t k = 0; k < i; k++)
		if (strcmp(by_name ? s->v[k].name : s->v[k].target,
			   by_name ? s->v[i].name : s->v[i].target) == 0)
			return 1;
	return 0;
}

void report_write_html(FILE *f, const struct result_set *s)
{
	char when[64], rate[64], sz[32];
	time_t now = time(NULL);
	struct tm tm;
	int copy = s->n && s->v[0].kind == RESULT_COPY;

	localtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", &tm);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	      "<title>twinfs bench report</title>\n<style>\n"
	      "body{font-family:sans-serif;margin:2em;color:#222}\n"
	      "table{border-collapse:collapse;margin:1em 0}\n"
	      "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}\n"
	      "td:first-child,td:nth-child(2),th{text-align:left}\n"
	      "figure{margin:1em 0}\n</style>\n</head>\n<body>\n", f);
	fprintf(f, "<h1>twinfs bench %s</h1>\n<p>twinfs %s, %s.</p>\n",
		s->command ? s->command : "", TWINFS_VERSION, when);
	if (copy) {
		fputs("<h2>Copy throughput</h2>\n<p>Each bar is one target; a phase "
		      "is timed from the first open to the data being durable on "
		      "the target.</p>\n", f);
		for (size_t i = 0; i < s->n; i++)
			if (!report_seen(s, i, 1))
				report_html_chart(f, s, s->v[i].name, 1);
	} else if (s->command && strcmp(s->command, "sweep") == 0) {
		fputs("<h2>Thread sweep</h2>\n", f);
		if (s->knee)
			fprintf(f, "<p>IOPS stop growing at %d threads.</p>\n", s->knee);
		for (size_t i = 0; i < s->n; i++)
			if (!report_seen(s, i, 0))
				report_html_chart(f, s, s->v[i].target, 0);
	} else {
		fputs("<h2>IO patterns</h2>\n", f);
		for (size_t i = 0; i < s->n; i++)
			if (!report_seen(s, i, 0))
				report_html_chart(f, s, s->v[i].target, 0);
	}
	fputs("<h2>Results</h2>\n<table>\n<tr><th>target</th><th>phase / pattern</th>"
	      "<th>size</th><th>seconds</th><th>throughput</th><th>files/s</th>"
	      "<th>IOPS</th><th>threads</th><th>CPU %</th></tr>\n", f);
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		fputs("<tr><td>", f);
		report_write_xml_escaped(f, r->target);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, r->name);
		fprintf(f, "</td><td>%s</td><td>%.3f</td><td>%s</td><td>%.1f</td>"
			"<td>%.0f</td><td>%d</td><td>%.1f</td></tr>\n",
			size_format_iec(r->bytes, sz, sizeof sz), r->seconds,
			report_rate(result_mb_per_s(r) * 1e6, rate, sizeof rate),
			result_files_per_s(r), r->iops, r->jobs, r->cpu_pct);
	}
	fputs("</table>\n", f);
	fprintf(f, "<h2>Latency percentiles</h2>\n<p>From a log-linear histogram "
		"(HdrHistogram style, within 0.8 %%) of the %s, in microseconds.</p>\n"
		"<table>\n<tr><th>target</th><th>phase / pattern</th><th>threads</th>"
		"<th>p50</th><th>p99</th><th>p99.9</th><th>mean</th><th>max</th></tr>\n",
		copy ? "time to copy each file" : "time of each IO");
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		fputs("<tr><td>", f);
		report_write_xml_escaped(f, r->target);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, r->name);
		fprintf(f, "</td><td>%d</td><td>%.1f</td><td>%.1f</td><td>%.1f</td>"
			"<td>%.1f</td><td>%.1f</td></tr>\n", r->jobs, r->lat.p50,
			r->lat.p99, r->lat.p999, r->lat.mean, r->lat.max);
	}
	fputs("</table>\n", f);
	fputs("</body>\n</html>\n", f);
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
