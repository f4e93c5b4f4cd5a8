/*
 * progress — the in-place status line of long runs. Main thread only;
 * writes only to the stream it was given, and nothing at all when it is
 * disabled (logs and pipes stay clean).
 */
#include "common/progress.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/size.h"

#define PROGRESS_PERIOD_NS 250000000ull	/* four redraws a second */

void progress_init(struct progress *p, FILE *out, int enabled,
		   const char *label, uint64_t total, uint64_t total_files)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->enabled = enabled;
	p->total = total;
	p->total_files = total_files;
	p->start_ns = clock_mono_ns();
	snprintf(p->label, sizeof(p->label), "%s", label);
}

void progress_init_timed(struct progress *p, FILE *out, int enabled,
			 const char *label, double seconds)
{
	progress_init(p, out, enabled, label, (uint64_t)(seconds * 1000), 0);
	p->timed = 1;
}

/* "1:05", "1:02:03", or "-" when unknown. */
static void progress_clock(char *buf, size_t len, double s)
{
	unsigned long t;

	if (!(s >= 0) || s > 360000) {
		snprintf(buf, len, "-");
		return;
	}
	t = (unsigned long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
}

char *progress_format(char *buf, size_t len, const char *label, uint64_t done,
		      uint64_t total, uint64_t files, uint64_t total_files,
		      double elapsed_s)
{
	char d[32], t[32], r[32], eta[32];
	double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
	double pct = total ? 100.0 * (double)done / (double)total : 100.0;
	int n;

	progress_clock(eta, sizeof eta, rate > 0 && total >= done ?
		       (double)(total - done) / rate : -1);
	n = snprintf(buf, len, "%s: %s / %s  %3.0f%%  %s/s  ETA %s", label,
		     size_format_iec(done, d, sizeof d), size_format_iec(total, t, sizeof t),
		     pct, size_format_iec((uint64_t)rate, r, sizeof r), eta);
	if (total_files && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "  files %llu/%llu (%llu left)",
			 (unsigned long long)files, (unsigned long long)total_files,
			 (unsigned long long)(total_files > files ? total_files - files : 0));
	return buf;
}

static void progress_draw(struct progress *p)
{
	uint64_t now = clock_mono_ns();
	double el = (double)(now - p->start_ns) / 1e9;
	char line[512];

	if (p->last_ns && now - p->last_ns < PROGRESS_PERIOD_NS)
		return;
	p->last_ns = now;
	if (p->timed)
		snprintf(line, sizeof line, "%s: %.1f s / %.1f s  %3.0f%%", p->label,
			 (double)p->done / 1e3, (double)p->total / 1e3,
			 p->total ? 100.0 * (double)p->done / (double)p->total : 100.0);
	else
		progress_format(line, sizeof line, p->label, p->done, p->total, p->files,
				p->total_files, el);
	/* \033[K clears what a longer previous line left behind. */
	fprintf(p->out, "\r%s\033[K", line);
	fflush(p->out);
}

void progress_update(struct progress *p, uint64_t done)
{
	if (!p || !p->enabled)
		return;
	p->done = done;
	progress_draw(p);
}

void progress_files(struct progress *p, uint64_t files)
{
	if (!p || !p->enabled)
		return;
	p->files = files;
	progress_draw(p);
}

void progress_done(struct progress *p)
{
	if (!p || !p->enabled || !p->last_ns)
		return;
	fputs("\r\033[K", p->out);
	fflush(p->out);
}

int progress_mode(const char *arg, int *enabled)
{
	if (!arg || strcmp(arg, "auto") == 0)
		*enabled = isatty(STDERR_FILENO);
	else if (strcmp(arg, "always") == 0)
		*enabled = 1;
	else if (strcmp(arg, "never") == 0)
		*enabled = 0;
	else
		return -EINVAL;
	return 0;
}
