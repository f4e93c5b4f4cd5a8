/*
 * report_html — the self-contained HTML report: what was run and where at
 * the top, then a CrystalDiskMark-style grid of inline SVG bars (io: a row
 * per access pattern, read and write per target; copy: the large and small
 * phases, MB/s and files/s per target), the thread sweep as bar charts,
 * the results and a latency-percentile table. No JavaScript, no network,
 * laid out to be read at 100 % in a 1280-px window. Main thread only; it
 * reads a result_set and writes the FILE it is given.
 */
#include "bench/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/runinfo.h"
#include "common/size.h"
#include "version.h"

#define HTML_GRID_W 1180	/* px: inside a 1280-px window with margins */
#define HTML_READ_COLOR "#2f6fbd"
#define HTML_WRITE_COLOR "#e07b24"

/* Target colours of the copy grid, in target order (repeating). */
static const char *const html_palette[] = {
	"#2f6fbd", "#e07b24", "#2e9e5b", "#b8408f", "#7a5cc7", "#8c6d1f",
};

static const char *html_target_color(size_t i)
{
	return html_palette[i % (sizeof(html_palette) / sizeof(html_palette[0]))];
}

/* 3 significant figures: "0.52", "9.87", "98.7", "987", "12345". */
static void html_num(double v, char *buf, size_t len)
{
	if (!isfinite(v) || v <= 0)
		snprintf(buf, len, "0");
	else if (v < 10)
		snprintf(buf, len, "%.2f", v);
	else if (v < 100)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
}

/* "23.5k", "1.20M" for IOPS and files/s. */
static void html_count(double v, char *buf, size_t len)
{
	if (v >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		html_num(v, buf, len);
}

/* An axis label: "0.1", "25", "2.5k", "10k". */
static void html_tick(double v, char *buf, size_t len)
{
	if (v >= 1e6)
		snprintf(buf, len, "%gM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%gk", v / 1e3);
	else
		snprintf(buf, len, "%g", v);
}

/* The smallest 1, 2, 2.5 or 5 x 10^k at or above v (a linear axis end). */
static double html_nice_ceil(double v)
{
	static const double steps[] = { 1, 2, 2.5, 5, 10 };
	double p;

	if (!(v > 0) || !isfinite(v))
		return 1;
	p = pow(10, floor(log10(v)));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i] * p >= v * (1 - 1e-12))
			return steps[i] * p;
	return 10 * p;
}

static void html_text(FILE *f, double x, double y, const char *attrs, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
	report_write_xml_escaped(f, s);
	fputs("</text>\n", f);
}

/* The first result of the same name (phase or pattern): ratios compare
 * every target with the first one that ran the same thing. */
static const struct result *html_baseline(const struct result_set *s,
					  const struct result *r)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, r->name) == 0 && s->v[i].jobs == r->jobs &&
		    s->v[i].iodepth == r->iodepth)
			return &s->v[i];
	return r;
}

static void html_ratio(double mine, double base, int is_base, char *buf, size_t len)
{
	if (is_base)
		snprintf(buf, len, "base");
	else if (base > 0)
		snprintf(buf, len, "\xc3\x97%.2f", mine / base);	/* x0.85 */
	else
		snprintf(buf, len, "-");
}

static size_t html_targets(const struct result_set *s, const char **t, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++) {
		size_t k = 0;

		while (k < n && strcmp(t[k], s->v[i].target) != 0)
			k++;
		if (k == n && n < max)
			t[n++] = s->v[i].target;
	}
	return n;
}

static size_t html_target_index(const char *const *t, size_t n, const char *target)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i], target) == 0)
			return i;
	return 0;
}

/*
 * The io grid. A row is an access pattern as CrystalDiskMark names them
 * (SEQ1M Q8T1, RND4K Q32T16: block size, random or sequential, queue
 * depth, threads); a pure-read and a pure-write pattern of the same shape
 * share a row, in the Read and the Write column of each target, and a
 * mixed pattern has a row of its own with its read and write shares.
 * Rows differ by orders of magnitude (SEQ1M against RND4K), so every bar
 * sits on one logarithmic MB/s axis, labelled at each power of ten at the
 * top of every column: bars are comparable across the whole grid.
 */
struct html_row {
	char label[48], sub[48];
	uint32_t bs;
	int random_pct, mixed, read_pct, jobs, iodepth;
};

static void html_row_of(const struct result *r, struct html_row *w)
{
	char bs[16];
	uint32_t b = r->bs;

	memset(w, 0, sizeof(*w));
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(bs, sizeof bs, "%uM", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(bs, sizeof bs, "%uK", b >> 10);
	else
		snprintf(bs, sizeof bs, "%uB", b);
	w->bs = r->bs;
	w->random_pct = r->random_pct;
	w->mixed = r->read_pct > 0 && r->read_pct < 100;
	w->read_pct = w->mixed ? r->read_pct : 0;
	w->jobs = r->jobs;
	w->iodepth = r->iodepth;
	snprintf(w->label, sizeof w->label, "%s%s", r->random_pct >= 50 ? "RND" : "SEQ", bs);
	snprintf(w->sub, sizeof w->sub, "Q%dT%d", r->iodepth, r->jobs);
	if (r->random_pct > 0 && r->random_pct < 100)
		snprintf(w->sub + strlen(w->sub), sizeof w->sub - strlen(w->sub),
			 " %d%% rnd", r->random_pct);
	if (w->mixed)
		snprintf(w->sub + strlen(w->sub), sizeof w->sub - strlen(w->sub),
			 " R%d/W%d", r->read_pct, 100 - r->read_pct);
}

static int html_row_same(const struct html_row *a, const struct html_row *b)
{
	return a->bs == b->bs && a->random_pct == b->random_pct && a->mixed == b->mixed &&
	       a->read_pct == b->read_pct && a->jobs == b->jobs && a->iodepth == b->iodepth;
}

static double html_dir_mbs(const struct result *r, int write)
{
	return (write ? r->write_iops : r->read_iops) * (double)r->bs / 1e6;
}

static double html_logx(double v, double lo, double hi, double x0, double w)
{
	double l = v > 0 ? log10(v) : lo;

	if (l < lo)
		l = lo;
	return x0 + (l - lo) / (hi - lo) * w;
}

/* One cell: the bar of r's read (write=0) or write share on the log axis,
 * its MB/s, IOPS and ratio to the first target below it. */
static void html_io_cell(FILE *f, const struct result_set *s, const struct result *r,
			 int write, double x, double y, double w, double lo, double hi)
{
	const struct result *b = html_baseline(s, r);
	double v = html_dir_mbs(r, write), iops = write ? r->write_iops : r->read_iops;
	double bw = html_logx(v, lo, hi, x + 8, w - 16) - (x + 8);
	char mbs[32], io[32], ratio[32], line[128];

	if (!(v > 0))
		return;
	if (bw < 2)
		bw = 2;
	fprintf(f, "<rect class=\"bar %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"18\" "
		"rx=\"2\" fill=\"%s\"><title>", write ? "write" : "read", x + 8, y + 8, bw,
		write ? HTML_WRITE_COLOR : HTML_READ_COLOR);
	report_write_xml_escaped(f, r->target);
	fprintf(f, " %s %s</title></rect>\n", r->name, write ? "write" : "read");
	html_num(v, mbs, sizeof mbs);
	html_count(iops, io, sizeof io);
	html_ratio(v, html_dir_mbs(b, write), b == r, ratio, sizeof ratio);
	snprintf(line, sizeof line, "%s MB/s", mbs);
	html_text(f, x + 8, y + 44, "font-size=\"15\" font-weight=\"bold\"", line);
	snprintf(line, sizeof line, "%s IOPS  %s", io, ratio);
	html_text(f, x + w - 8, y + 44, "font-size=\"12\" fill=\"#555\" text-anchor=\"end\"",
		  line);
}

static void html_io_grid(FILE *f, const struct result_set *s)
{
	const char *tg[RUNINFO_MAX_TARGETS];
	struct html_row *rows = calloc(s->n ? s->n : 1, sizeof(*rows));
	size_t nt = html_targets(s, tg, RUNINFO_MAX_TARGETS), nr = 0;
	const double label_w = 150, top = 76, row_h = 58;
	double col_w, lo = INFINITY, hi = -INFINITY, height;

	if (!rows || nt == 0)
		goto out;
	col_w = (HTML_GRID_W - label_w) / (double)(2 * nt);
	for (size_t i = 0; i < s->n; i++) {
		struct html_row w;
		size_t k = 0;

		html_row_of(&s->v[i], &w);
		while (k < nr && !html_row_same(&rows[k], &w))
			k++;
		if (k == nr)
			rows[nr++] = w;
		for (int d = 0; d < 2; d++) {
			double v = html_dir_mbs(&s->v[i], d);

			if (v > 0) {
				lo = fmin(lo, floor(log10(v)));
				hi = fmax(hi, ceil(log10(v) + 1e-9));
			}
		}
	}
	if (!isfinite(lo)) {
		lo = 0;
		hi = 3;
	}
	if (hi - lo < 2)
		lo = hi - 2;
	height = top + (double)nr * row_h + 8;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"grid\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\" "
		"font-size=\"13\" role=\"img\">\n<title>IO patterns: MB/s per target, read and "
		"write</title>\n", HTML_GRID_W, height, HTML_GRID_W, height);
	for (size_t t = 0; t < nt; t++) {
		double x = label_w + (double)(2 * t) * col_w;

		fprintf(f, "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"24\" fill=\"#e8edf4\"/>\n",
			x + 2, 2 * col_w - 4);
		fprintf(f, "<text x=\"%.1f\" y=\"17\" text-anchor=\"middle\" font-weight=\"bold\">",
			x + col_w);
		report_write_xml_escaped(f, tg[t]);
		fputs("</text>\n", f);
		for (int d = 0; d < 2; d++) {
			double cx = x + d * col_w;

			html_text(f, cx + col_w / 2, 44, d ? "text-anchor=\"middle\" font-weight=\"bold\" "
				  "fill=\"" HTML_WRITE_COLOR "\"" : "text-anchor=\"middle\" "
				  "font-weight=\"bold\" fill=\"" HTML_READ_COLOR "\"",
				  d ? "Write [MB/s]" : "Read [MB/s]");
			for (double e = lo; e <= hi + 1e-9; e++) {
				double gx = html_logx(pow(10, e), lo, hi, cx + 8, col_w - 16);
				char lab[32];

				html_tick(pow(10, e), lab, sizeof lab);
				fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
					"y2=\"%.0f\" stroke=\"#d5d9df\"/>\n", gx, top - 8, gx,
					height - 8);
				/* The end labels lean inwards, clear of the next column's. */
				html_text(f, gx, top - 12, e == lo ? "font-size=\"11\" fill=\"#666\"" :
					  e >= hi - 1e-9 ? "font-size=\"11\" fill=\"#666\" "
					  "text-anchor=\"end\"" : "font-size=\"11\" fill=\"#666\" "
					  "text-anchor=\"middle\"", lab);
			}
		}
	}
	for (size_t k = 0; k < nr; k++) {
		double y = top + (double)k * row_h;

		fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"#f0f3f7\"/>\n",
			y + 1, label_w - 6, row_h - 4);
		html_text(f, 10, y + 24, "font-size=\"17\" font-weight=\"bold\"", rows[k].label);
		html_text(f, 10, y + 44, "font-size=\"12\" fill=\"#555\"", rows[k].sub);
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>\n",
			label_w, y + row_h - 2, HTML_GRID_W, y + row_h - 2);
		for (size_t i = 0; i < s->n; i++) {
			struct html_row w;
			double x;

			html_row_of(&s->v[i], &w);
			if (!html_row_same(&rows[k], &w))
				continue;
			x = label_w + (double)(2 * html_target_index(tg, nt, s->v[i].target)) * col_w;
			html_io_cell(f, s, &s->v[i], 0, x, y, col_w, lo, hi);
			html_io_cell(f, s, &s->v[i], 1, x + col_w, y, col_w, lo, hi);
		}
	}
	fputs("</svg>\n", f);
out:
	free(rows);
}

/*
 * The copy grid: a row per phase (large file, small files), a column for
 * MB/s and one for files/s, one bar per target in each cell on a linear
 * axis from 0 shared by the cell's bars and labelled under them; each bar
 * carries its value and its ratio to the first target.
 */
static void html_copy_cell(FILE *f, const struct result_set *s, const char *phase,
			   int files, const char *const *tg, size_t nt, double x,
			   double y, double w)
{
	const double bar_h = 22, gap = 8, pad = 12;
	double max = 0, axis, bw, step;
	char num[32], ratio[32], line[96];
	int ticks;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, phase) == 0)
			max = fmax(max, files ? result_files_per_s(&s->v[i]) :
					      result_mb_per_s(&s->v[i]));
	/* Ticks at a round step, the axis ending on the first tick past max. */
	step = html_nice_ceil(max / 4);
	ticks = (int)ceil(max / step - 1e-9);
	if (ticks < 1)
		ticks = 1;
	axis = step * ticks;
	bw = w - 2 * pad;
	for (int k = 0; k <= ticks; k++) {
		double gx = x + pad + bw * k / ticks;

		fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#d5d9df\"/>\n", gx, y + 4, gx,
			y + 8 + (double)nt * (bar_h + gap));
		html_tick(step * k, num, sizeof num);
		html_text(f, gx, y + 22 + (double)nt * (bar_h + gap),
			  "font-size=\"11\" fill=\"#666\" text-anchor=\"middle\"", num);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i], *b;
		size_t t;
		double v, len, by;

		if (strcmp(r->name, phase) != 0)
			continue;
		b = html_baseline(s, r);
		t = html_target_index(tg, nt, r->target);
		v = files ? result_files_per_s(r) : result_mb_per_s(r);
		len = axis > 0 ? v / axis * bw : 0;
		by = y + 8 + (double)t * (bar_h + gap);
		fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" "
			"rx=\"2\" fill=\"%s\"><title>", x + pad, by, len > 2 ? len : 2, bar_h,
			html_target_color(t));
		report_write_xml_escaped(f, r->target);
		fputs("</title></rect>\n", f);
		html_num(v, num, sizeof num);
		html_ratio(v, files ? result_files_per_s(b) : result_mb_per_s(b), b == r,
			   ratio, sizeof ratio);
		snprintf(line, sizeof line, "%s %s   %s", num, files ? "files/s" : "MB/s", ratio);
		/* On the bar in white when it has room, after it otherwise. */
		if (len > 190)
			html_text(f, x + pad + len - 8, by + 16, "font-size=\"13\" "
				  "font-weight=\"bold\" fill=\"#fff\" text-anchor=\"end\"", line);
		else
			html_text(f, x + pad + len + 6, by + 16, "font-size=\"13\" "
				  "font-weight=\"bold\"", line);
	}
}

static void html_copy_grid(FILE *f, const struct result_set *s)
{
	const char *tg[RUNINFO_MAX_TARGETS], *phases[2];
	size_t nt = html_targets(s, tg, RUNINFO_MAX_TARGETS), np = 0;
	const double label_w = 150, top = 34;
	double col_w = (HTML_GRID_W - label_w) / 2, row_h = 40 + (double)nt * 30, height;

	for (size_t i = 0; i < s->n && np < 2; i++)
		if (np == 0 || strcmp(phases[np - 1], s->v[i].name) != 0) {
			if (np == 1 && strcmp(phases[0], s->v[i].name) == 0)
				continue;
			phases[np++] = s->v[i].name;
		}
	height = top + (double)np * row_h + 4;
	fputs("<div class=\"legend\">", f);
	for (size_t t = 0; t < nt; t++) {
		fprintf(f, "<span><i style=\"background:%s\"></i>", html_target_color(t));
		report_write_xml_escaped(f, tg[t]);
		fputs(t == 0 ? " (base)</span>" : "</span>", f);
	}
	fputs("</div>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"grid\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\" "
		"font-size=\"13\" role=\"img\">\n<title>Copy: MB/s and files/s per target"
		"</title>\n", HTML_GRID_W, height, HTML_GRID_W, height);
	for (int c = 0; c < 2; c++) {
		fprintf(f, "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"24\" fill=\"#e8edf4\"/>\n",
			label_w + c * col_w + 2, col_w - 4);
		html_text(f, label_w + c * col_w + col_w / 2, 17,
			  "text-anchor=\"middle\" font-weight=\"bold\"",
			  c ? "Files per second" : "Throughput [MB/s]");
	}
	for (size_t p = 0; p < np; p++) {
		double y = top + (double)p * row_h;

		fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"#f0f3f7\"/>\n",
			y, label_w - 6, row_h - 6);
		html_text(f, 10, y + 26, "font-size=\"17\" font-weight=\"bold\"",
			  strcmp(phases[p], "large") == 0 ? "Large file" :
			  strcmp(phases[p], "small") == 0 ? "Small files" : phases[p]);
		for (int c = 0; c < 2; c++)
			html_copy_cell(f, s, phases[p], c, tg, nt, label_w + c * col_w, y, col_w);
	}
	fputs("</svg>\n", f);
}

void report_write_svg_bars(FILE *f, const char *title, size_t n,
			   const char *const *label, const double *value,
			   const char *const *text)
{
	const int label_w = 260, bar_w = 560, text_w = 260, row_h = 26, top = 30;
	const int width = label_w + bar_w + text_w, height = top + (int)n * row_h + 10;
	double max = 0;

	for (size_t i = 0; i < n; i++)
		if (isfinite(value[i]) && value[i] > max)
			max = value[i];
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"font-family=\"sans-serif\" font-size=\"13\">\n",
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
		fprintf(f, "</text>\n<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\"/>\n", label_w, y + 3, w, row_h - 6,
			HTML_READ_COLOR);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">", label_w + w + 6, y + 16);
		report_write_xml_escaped(f, text[i]);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

/* The sweep: one bar per thread count, MB/s with IOPS beside it. */
static void html_sweep_chart(FILE *f, const struct result_set *s)
{
	const char **label = calloc(s->n ? s->n : 1, sizeof(*label));
	const char **text = calloc(s->n ? s->n : 1, sizeof(*text));
	char (*lbuf)[96] = calloc(s->n ? s->n : 1, sizeof(*lbuf));
	char (*tbuf)[96] = calloc(s->n ? s->n : 1, sizeof(*tbuf));
	double *value = calloc(s->n ? s->n : 1, sizeof(*value));

	if (label && text && lbuf && tbuf && value) {
		for (size_t i = 0; i < s->n; i++) {
			const struct result *r = &s->v[i];

			value[i] = result_mb_per_s(r);
			snprintf(lbuf[i], sizeof lbuf[i], "%s, %d thread%s", r->name, r->jobs,
				 r->jobs == 1 ? "" : "s");
			snprintf(tbuf[i], sizeof tbuf[i], "%.1f MB/s, %.0f IOPS", value[i],
				 r->iops);
			label[i] = lbuf[i];
			text[i] = tbuf[i];
		}
		fputs("<figure>\n", f);
		report_write_svg_bars(f, s->n ? s->v[0].target : "", s->n, label, value, text);
		fputs("</figure>\n", f);
	}
	free(label);
	free(text);
	free(lbuf);
	free(tbuf);
	free(value);
}

static void html_kv(FILE *f, const char *k, const char *v)
{
	fputs("<tr><th>", f);
	report_write_xml_escaped(f, k);
	fputs("</th><td>", f);
	report_write_xml_escaped(f, v);
	fputs("</td></tr>\n", f);
}

/* The run and the host: what a reader needs to compare or repeat it. */
static void html_run(FILE *f, const struct runinfo *ri)
{
	char a[64], b[64], line[512];

	fputs("<div class=\"run\">\n<table class=\"kv\">\n", f);
	html_kv(f, "command", ri->command_line);
	snprintf(line, sizeof line, "%s \xe2\x80\x93 %s", ri->started, ri->finished);
	html_kv(f, "time", line);
	html_kv(f, "twinfs", ri->version);
	html_kv(f, "host", ri->host);
	snprintf(line, sizeof line, "%s (%s)", ri->kernel, ri->arch);
	html_kv(f, "kernel", line);
	snprintf(line, sizeof line, "%s \xc3\x97 %d", ri->cpu_model[0] ? ri->cpu_model : "?",
		 ri->cpus);
	html_kv(f, "CPU", line);
	snprintf(line, sizeof line, "%s (%s available at the start)",
		 size_format_iec(ri->mem_total, a, sizeof a),
		 size_format_iec(ri->mem_available, b, sizeof b));
	html_kv(f, "memory", line);
	fputs("</table>\n<table class=\"kv\">\n", f);
	for (size_t i = 0; i < ri->nparams; i++) {
		const struct runinfo_param *p = &ri->params[i];

		switch (p->type) {
		case RUNINFO_STR: snprintf(line, sizeof line, "%s", p->s[0] ? p->s : "-"); break;
		case RUNINFO_UINT:
			if (strstr(p->key, "bytes"))
				snprintf(line, sizeof line, "%s (%llu)",
					 size_format_iec(p->u, a, sizeof a),
					 (unsigned long long)p->u);
			else
				snprintf(line, sizeof line, "%llu", (unsigned long long)p->u);
			break;
		case RUNINFO_INT: snprintf(line, sizeof line, "%lld", (long long)p->i); break;
		case RUNINFO_DOUBLE: snprintf(line, sizeof line, "%g", p->d); break;
		case RUNINFO_BOOL: snprintf(line, sizeof line, "%s", p->i ? "yes" : "no"); break;
		}
		html_kv(f, p->key, line);
	}
	fputs("</table>\n</div>\n<table class=\"left\">\n<tr><th>target</th><th>filesystem</th>"
	      "<th>mount point</th><th>mount options</th><th>free</th></tr>\n", f);
	for (size_t i = 0; i < ri->ntargets; i++) {
		const struct runinfo_target *t = &ri->targets[i];

		fputs("<tr><td>", f);
		report_write_xml_escaped(f, t->path);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, t->fstype);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, t->mountpoint);
		fputs("</td><td class=\"opts\">", f);
		report_write_xml_escaped(f, t->options);
		fprintf(f, "</td><td>%s of %s</td></tr>\n",
			size_format_iec(t->free_bytes, a, sizeof a),
			size_format_iec(t->total_bytes, b, sizeof b));
	}
	fputs("</table>\n", f);
}

static void html_tables(FILE *f, const struct result_set *s, int copy)
{
	char rate[64], sz[32], l[5][24];

	fputs("<h2>Results</h2>\n<table>\n<tr><th>target</th><th>phase / pattern</th>", f);
	fputs(copy ? "<th>size</th><th>files</th><th>seconds</th><th>throughput</th>"
		     "<th>files/s</th><th>CPU %</th></tr>\n"
		   : "<th>QD</th><th>threads</th><th>seconds</th><th>throughput</th>"
		     "<th>IOPS</th><th>read IOPS</th><th>write IOPS</th><th>CPU %</th></tr>\n", f);
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		fputs("<tr><td>", f);
		report_write_xml_escaped(f, r->target);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, r->name);
		report_rate(result_mb_per_s(r) * 1e6, rate, sizeof rate);
		if (copy)
			fprintf(f, "</td><td>%s</td><td>%llu</td><td>%.3f</td><td>%s</td>"
				"<td>%.1f</td><td>%.1f</td></tr>\n",
				size_format_iec(r->bytes, sz, sizeof sz),
				(unsigned long long)r->files, r->seconds, rate,
				result_files_per_s(r), r->cpu_pct);
		else
			fprintf(f, "</td><td>%d</td><td>%d</td><td>%.3f</td><td>%s</td>"
				"<td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.1f</td></tr>\n",
				r->iodepth, r->jobs, r->seconds, rate, r->iops, r->read_iops,
				r->write_iops, r->cpu_pct);
	}
	fprintf(f, "</table>\n<h2>Latency percentiles</h2>\n<p>Time of each %s, from a "
		"log-linear histogram (HdrHistogram style, within 0.8 %%).</p>\n<table>\n"
		"<tr><th>target</th><th>phase / pattern</th><th>threads</th><th>p50</th>"
		"<th>p99</th><th>p99.9</th><th>mean</th><th>max</th></tr>\n",
		copy ? "file copy (open to close, fsync included)" : "IO (submit to completion)");
	for (size_t i = 0; i < s->n; i++) {
		const struct result *r = &s->v[i];

		report_us(r->lat.p50, l[0], sizeof l[0]);
		report_us(r->lat.p99, l[1], sizeof l[1]);
		report_us(r->lat.p999, l[2], sizeof l[2]);
		report_us(r->lat.mean, l[3], sizeof l[3]);
		report_us(r->lat.max, l[4], sizeof l[4]);
		fputs("<tr><td>", f);
		report_write_xml_escaped(f, r->target);
		fputs("</td><td>", f);
		report_write_xml_escaped(f, r->name);
		fprintf(f, "</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
			"<td>%s</td></tr>\n", copy ? 1 : r->jobs, l[0], l[1], l[2], l[3], l[4]);
	}
	fputs("</table>\n", f);
}

void report_write_html(FILE *f, const struct result_set *s)
{
	int copy = s->n && s->v[0].kind == RESULT_COPY;
	int sweep = s->command && strcmp(s->command, "sweep") == 0;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	      "<title>twinfs bench report</title>\n<style>\n"
	      "body{font-family:sans-serif;font-size:14px;margin:16px 24px;color:#222;"
	      "max-width:1200px}\n"
	      "h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:22px 0 8px}\n"
	      "table{border-collapse:collapse;margin:6px 0}\n"
	      "td,th{border:1px solid #c8ccd2;padding:3px 8px;text-align:right}\n"
	      "th{background:#eef1f5}td:first-child,td:nth-child(2),th{text-align:left}\n"
	      ".run{display:flex;gap:16px;align-items:flex-start}\n"
	      ".kv th{width:8em;white-space:nowrap}.kv td{text-align:left}\n"
	      ".left td{text-align:left}\n"
	      ".opts{max-width:420px;word-break:break-all;text-align:left}\n"
	      ".legend span{margin-right:18px}.legend i{display:inline-block;width:12px;"
	      "height:12px;margin-right:6px;vertical-align:-1px}\n"
	      "p.note{color:#555;margin:4px 0}\n"
	      "svg.grid{display:block;margin:6px 0}\nfigure{margin:8px 0}\n</style>\n"
	      "</head>\n<body>\n", f);
	fprintf(f, "<h1>twinfs bench %s</h1>\n", s->command ? s->command : "");
	if (s->run)
		html_run(f, s->run);
	if (copy) {
		fputs("<h2>Copy</h2>\n<p class=\"note\">A phase is timed from the first open "
		      "to the data being durable on the target; the bar label gives the value "
		      "and its ratio to the first target. Linear axes from 0.</p>\n", f);
		html_copy_grid(f, s);
	} else if (sweep) {
		fputs("<h2>Thread sweep</h2>\n", f);
		if (s->knee)
			fprintf(f, "<p>IOPS stop growing at %d threads.</p>\n", s->knee);
		html_sweep_chart(f, s);
	} else {
		fputs("<h2>IO patterns</h2>\n<p class=\"note\">MB/s (10<sup>6</sup> bytes/s) per "
		      "target, reads and writes side by side; Q = IOs in flight per thread, T = "
		      "threads. One logarithmic axis for every bar (each gridline is ten times "
		      "the previous); below each bar its IOPS and ratio to the first target.</p>\n", f);
		html_io_grid(f, s);
	}
	html_tables(f, s, copy);
	fprintf(f, "<p class=\"note\">twinfs %s</p>\n</body>\n</html>\n", TWINFS_VERSION);
}
