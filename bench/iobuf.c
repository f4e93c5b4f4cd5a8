/*
 * iobuf — IO buffers of `bench io` in transparent huge pages. Owns one
 * anonymous mapping per buffer; called by the job thread that uses the
 * buffer (allocate, fill, check, free), never shared between threads.
 * Reads /proc/self/smaps to report whether the kernel gave huge pages;
 * touches no other memory and no file.
 */
#include "bench/iobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Why huge pages. An O_DIRECT IO is DMA'd straight from the user buffer,
 * and each run of physically contiguous pages in it is one segment of the
 * request (one virtio descriptor on this VM's disk, max_segments 254). A
 * buffer from malloc gets whatever 4 KiB pages the allocator hands out,
 * so a 64 KiB IO is 1 to 16 segments and a 1 MiB IO 1 to 256, the latter
 * split into 1016 KiB + 8 KiB. Which it is depends on how fragmented free
 * memory was when the buffer was first touched, not on the device, and
 * the virtual disk's cost per request grows with its segments. Measured
 * 2026-11-30 on the 2-core VM (pagemap of the running tools: share of
 * virtually adjacent pages that are physically adjacent):
 *  - `bench io` with malloc'd buffers: 0.00 in both runs checked; fio
 *    3.33 (malloc'd too): 0.69, 0.00, 0.60 in three runs.
 *  - 64k-randwrite --direct QD16, 3 s runs alternating within two
 *    minutes: `bench io` with a malloc'd buffer 8,754-12,270 IOPS, with a
 *    huge-page buffer 11,740 then 26,912-31,328, fio 9,225-11,313. Before
 *    this change fio had been measured at 24.7-27.2 k against 12.5-13.3 k
 *    for `bench io` (ratio 0.46): the range of a few-segment buffer
 *    against a 16-segment one.
 *  - 1m-seqwrite QD16: block:block_split in a 3 s run 2,177 / 968 / 854
 *    (bench io) and 2,046 / 32 / 1,289 (fio); fio's run with 32 splits
 *    (only its layout's 8 MiB writeback bios) ran 1,641 IOPS, twice the
 *    others.
 * So a large-block result was a draw of the page allocator in both tools.
 * A 2 MiB-aligned, MADV_HUGEPAGE buffer makes every IO of up to 2 MiB
 * that starts on a block boundary inside one huge page: one segment,
 * always. bench/io-vs-fio.sh gives fio the same (glibc.malloc.hugetlb=1
 * and iomem_align=2m) so that both tools send the device the same
 * requests. Where THP is off or no huge page can be had, the buffer is
 * ordinary memory and io.c says so before the results.
 */
int iobuf_alloc(struct iobuf *b, size_t len)
{
	size_t maplen = (len + IOBUF_ALIGN - 1) & ~(IOBUF_ALIGN - 1);
	size_t over = maplen + IOBUF_ALIGN;
	char *m, *p;

	memset(b, 0, sizeof(*b));
	if (len == 0 || maplen < len)
		return -ENOMEM;
	m = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	/* Keep only the aligned middle: the mapping is then exactly the
	 * buffer, and a huge page can back each of its 2 MiB pieces. */
	p = (char *)(((uintptr_t)m + IOBUF_ALIGN - 1) & ~(uintptr_t)(IOBUF_ALIGN - 1));
	if (p > m)
		munmap(m, (size_t)(p - m));
	if (m + over > p + maplen)
		munmap(p + maplen, (size_t)(m + over - (p + maplen)));
	/* EINVAL means a kernel without THP: small pages, still correct. */
	madvise(p, maplen, MADV_HUGEPAGE);
	b->p = p;
	b->len = len;
	b->maplen = maplen;
	return 0;
}

void iobuf_free(struct iobuf *b)
{
	if (b->p)
		munmap(b->p, b->maplen);
	memset(b, 0, sizeof(*b));
}

int iobuf_huge(const struct iobuf *b)
{
	uintptr_t want = (uintptr_t)b->p, lo, hi;
	unsigned long long kb, anon = 0, huge = 0;
	char line[512];
	int in = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -errno;
	/* The kernel may merge the mapping with a neighbour that has the
	 * same flags (another job's buffer); then the whole merged area is
	 * judged, which can only make the answer more cautious. */
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (found)
				break;
			in = lo <= want && want < hi;
			found = in;
		} else if (in && sscanf(line, "Anonymous: %llu kB", &kb) == 1) {
			anon = kb;
		} else if (in && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) {
			huge = kb;
		}
	}
	fclose(f);
	if (!found)
		return -ENOENT;
	return anon > 0 && huge == anon;
}
