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
 * request (one virtio descriptor on a virtual disk). A buffer from malloc
 * gets whatever 4 KiB pages the allocator hands out, so a 64 KiB IO is 1
 * to 16 segments and a 1 MiB IO 1 to 256, and a disk whose cost grows with
 * segments makes a large-block result a draw of the page allocator.
 * A 2 MiB-aligned, MADV_HUGEPAGE buffer puts every IO of up to 2 MiB that
 * starts on a block boundary inside one huge page: one segment, always.
 * bench/io-vs-fio.sh gives fio the same (glibc.malloc.hugetlb=1 and
 * iomem_align=2m) so that both tools send the device the same requests.
 * Where THP is off or no huge page can be had, the buffer is ordinary
 * memory and io.c says so before the results. Evidence (pagemap, IOPS with
 * and without): see docs/benchmarks.md, "bench io against fio: memory
 * segments per IO".
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
