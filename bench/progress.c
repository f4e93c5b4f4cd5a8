/*
 * progress — an in-place percentage line for interactive runs. Main thread
 * only; writes only to the stream it was given, and nothing at all when
 * that stream is not a terminal (logs and pipes stay clean).
 */
#include "bench/progress.h"

#include <string.h>

#include "common/clock.h"

void progress_init(struct progress *p, FILE *out, int enabled,
		   const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->enabled = enabled;
	p->total = total;
	snprintf(p->label, sizeof(p->label), "%s", label);
}

void progress_update(struct progress *p, uint64_t done)
{
	uint64_t now;

	if (!p || !p->enabled)
		return;
	now = clock_mono_ns();
	if (p->last_ns && now - p->last_ns < 100000000ull)
		return;
	p->last_ns = now;
	fprintf(p->out, "\r%s: %3.0f%%", p->label,
		p->total ? 100.0 * (double)done / (double)p->total : 100.0);
	fflush(p->out);
}

void progress_done(struct progress *p)
{
	if (!p || !p->enabled)
		return;
	fputs("\r\033[K", p->out);
	fflush(p->out);
}
