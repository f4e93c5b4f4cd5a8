/*
 * rangeset — merged byte ranges of one inode (netsync/rangeset.h).
 * Owns only its array. Runs on whatever thread holds the owner's lock (the
 * journal mutex); never allocates on the common append path once the array
 * has room, never touches files.
 */
#include "journal/rangeset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

void rangeset_init(struct rangeset *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void rangeset_free(struct rangeset *rs)
{
	free(rs->v);
	rangeset_init(rs);
}

void rangeset_clear(struct rangeset *rs)
{
	rs->n = 0;
	rs->bytes = 0;
}

static int rangeset_reserve(struct rangeset *rs, size_t want)
{
	return ARRAY_GROW(rs->v, rs->cap, want, 4);
}

/* Index of the first span whose end >= off (it may touch [off, ...)). */
static size_t rangeset_lower(const struct rangeset *rs, uint64_t off)
{
	size_t lo = 0, hi = rs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rs->v[mid].end < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rangeset_add(struct rangeset *rs, uint64_t off, uint64_t len)
{
	uint64_t end;
	size_t i, k;

	if (len == 0)
		return 0;
	end = (len > UINT64_MAX - off) ? UINT64_MAX : off + len;

	/* Fast path: sequential writes extend (or fall inside) the last span. */
	if (rs->n > 0) {
		struct rangeset_span *last = &rs->v[rs->n - 1];

		if (off >= last->off && off <= last->end) {
			if (end > last->end) {
				rs->bytes += end - last->end;
				last->end = end;
			}
			return 0;
		}
		if (off > last->end) {
			if (rangeset_reserve(rs, rs->n + 1) < 0)
				return -ENOMEM;
			rs->v[rs->n++] = (struct rangeset_span){ off, end };
			rs->bytes += end - off;
			return 0;
		}
	}

	/* General case: spans i..k-1 touch [off, end) and collapse into one. */
	i = rangeset_lower(rs, off);
	k = i;
	while (k < rs->n && rs->v[k].off <= end)
		k++;
	if (k == i) {
		if (rangeset_reserve(rs, rs->n + 1) < 0)
			return -ENOMEM;
		memmove(&rs->v[i + 1], &rs->v[i], (rs->n - i) * sizeof(rs->v[0]));
		rs->v[i] = (struct rangeset_span){ off, end };
		rs->n++;
		rs->bytes += end - off;
		return 0;
	}
	if (rs->v[i].off < off)
		off = rs->v[i].off;
	if (rs->v[k - 1].end > end)
		end = rs->v[k - 1].end;
	for (size_t m = i; m < k; m++)
		rs->bytes -= rs->v[m].end - rs->v[m].off;
	rs->v[i] = (struct rangeset_span){ off, end };
	rs->bytes += end - off;
	memmove(&rs->v[i + 1], &rs->v[k], (rs->n - k) * sizeof(rs->v[0]));
	rs->n -= k - i - 1;
	return 0;
}

void rangeset_truncate(struct rangeset *rs, uint64_t size)
{
	while (rs->n > 0) {
		struct rangeset_span *last = &rs->v[rs->n - 1];

		if (last->off >= size) {
			rs->bytes -= last->end - last->off;
			rs->n--;
			continue;
		}
		if (last->end > size) {
			rs->bytes -= last->end - size;
			last->end = size;
		}
		break;
	}
}

int rangeset_merge_into(struct rangeset *dst, struct rangeset *src)
{
	if (dst->n == 0) {
		struct rangeset t = *dst;

		*dst = *src;
		*src = t;
		rangeset_clear(src);
		return 0;
	}
	if (rangeset_reserve(dst, dst->n + src->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++)
		rangeset_add(dst, src->v[i].off, src->v[i].end - src->v[i].off);
	rangeset_clear(src);
	return 0;
}
