/*
 * report — writes a result_set out: the human table (IEC rates with SI in
 * brackets, ratios to the first target), JSON, CSV, and a self-contained
 * HTML page with inline SVG bar charts (no JavaScript, no network).
 * Main thread only; touches only the files it is asked to write.
 */
#ifndef TWINFS_BENCH_REPORT_H
#define TWINFS_BENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/result.h"

/* "1.00 GiB/s (1.07 GB/s)" for a rate in bytes per second; returns buf. */
char *report_rate(double bytes_per_s, char *buf, size_t len);

/* The figures of a copy phase and of an IO result, formatted as the table
 * prints them (one order, one set of units for the table and the log). */
void report_copy_figures(char *buf, size_t len, uint64_t bytes, uint64_t files,
			 double seconds);
void report_io_figures(char *buf, size_t len, const struct result *r);
void report_print_table(FILE *out, const struct result_set *s);
void report_write_json(FILE *f, const struct result_set *s);
void report_write_csv(FILE *f, const struct result_set *s);
/* The self-contained HTML page (report_html.c): the run and host at the
 * top, a CrystalDiskMark-style grid of inline SVG bars (io: a row per
 * pattern, read and write per target on one labelled log axis; copy: the
 * large and small phases, MB/s and files/s per target on linear axes,
 * ratio to the first target on each bar), the results and a latency-
 * percentile table. No JavaScript, no network; laid out for 1280 px. */
void report_write_html(FILE *f, const struct result_set *s);

/* One horizontal bar chart as a standalone <svg> element: n bars, label[i]
 * on the left, a bar proportional to value[i], text[i] after it. */
void report_write_svg_bars(FILE *f, const char *title, size_t n,
			   const char *const *label, const double *value,
			   const char *const *text);
/* "78.3 us", "4.62 ms", "1.20 s" for a latency in microseconds. */
void report_us(double us, char *buf, size_t len);
/* Writes s with XML/HTML special characters escaped. */
void report_write_xml_escaped(FILE *f, const char *s);

/* Writes whichever of --json FILE, --csv FILE, --report DIR (results.json,
 * results.csv, report.html) is non-NULL. Returns 0 or the first -errno,
 * logged with the path. */
int report_write_outputs(const struct result_set *s, const char *json_path,
			 const char *csv_path, const char *report_dir);

#endif
