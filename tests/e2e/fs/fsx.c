/*
 * fsx — random file operations checked against an in-memory model, after
 * the classic fsx: buffered writes, truncates (up and down), reads, mmap
 * writes and mmap reads, fallocate, fsync and close/reopen on one file.
 * Every read (and the whole file at every reopen and at the end) must
 * match the model byte for byte. Single-threaded; owns only its file.
 * Usage: fsx [--ops N] [--seed S] [--maxlen BYTES] FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum op { OP_READ, OP_WRITE, OP_TRUNC, OP_MAPREAD, OP_MAPWRITE, OP_FALLOC,
	  OP_FSYNC, OP_REOPEN, OP_N };
static const char *const op_names[] = {
	"read", "write", "truncate", "mapread", "mapwrite", "fallocate",
	"fsync", "reopen",
};

#define LOG_N 32
static struct { long n; enum op op; uint64_t off, len; uint64_t size; } oplog[LOG_N];

static const char *path;
static unsigned char *good, *buf;
static uint64_t size, maxlen = 256 * 1024;
static int fd;
static long opno;
static uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the printed seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static void log_op(enum op op, uint64_t off, uint64_t len)
{
	int k = opno % LOG_N;

	oplog[k].n = opno;
	oplog[k].op = op;
	oplog[k].off = off;
	oplog[k].len = len;
	oplog[k].size = size;
}

static void die(const char *what)
{
	fprintf(stderr, "fsx: op %ld: %s (errno %d: %s)\nlast operations:\n",
		opno, what, errno, strerror(errno));
	for (long k = opno - LOG_N + 1; k <= opno; k++) {
		int i;

		if (k < 0)
			continue;
		i = k % LOG_N;
		fprintf(stderr, "  %6ld %-9s off=%llu len=%llu size_before=%llu\n",
			oplog[i].n, op_names[oplog[i].op],
			(unsigned long long)oplog[i].off,
			(unsigned long long)oplog[i].len,
			(unsigned long long)oplog[i].size);
	}
	exit(1);
}

static void check(const unsigned char *got, uint64_t off, uint64_t len)
{
	for (uint64_t k = 0; k < len; k++) {
		if (got[k] != good[off + k]) {
			fprintf(stderr, "fsx: mismatch at offset %llu: got 0x%02x, "
				"expected 0x%02x\n", (unsigned long long)(off + k),
				got[k], good[off + k]);
			errno = 0;
			die("data mismatch");
		}
	}
}

static void check_size(void)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		die("fstat");
	if ((uint64_t)st.st_size != size) {
		fprintf(stderr, "fsx: size %lld, expected %llu\n",
			(long long)st.st_size, (unsigned long long)size);
		errno = 0;
		die("size mismatch");
	}
}

static void check_all(void)
{
	uint64_t done = 0;

	check_size();
	while (done < size) {
		ssize_t n = pread(fd, buf, size - done, done);

		if (n <= 0)
			die("pread (whole file)");
		check(buf, done, n);
		done += n;
	}
}

static void fill(unsigned char *p, uint64_t len)
{
	uint64_t v = rnd();

	for (uint64_t k = 0; k < len; k++) {
		p[k] = (unsigned char)(v >> ((k & 7) * 8)) + (unsigned char)(k >> 3);
		if ((k & 4095) == 4095)
			v = rnd();
	}
}

static void do_read(uint64_t off, uint64_t len)
{
	ssize_t n;

	if (size == 0)
		return;
	off %= size;
	if (off + len > size)
		len = size - off;
	n = pread(fd, buf, len, off);
	if (n != (ssize_t)len)
		die("short pread");
	check(buf, off, len);
}

static void do_write(uint64_t off, uint64_t len)
{
	if (off + len > maxlen)
		len = maxlen - off;
	fill(good + off, len);
	if (pwrite(fd, good + off, len, off) != (ssize_t)len)
		die("pwrite");
	if (off > size)
		memset(good + size, 0, off - size);
	if (off + len > size)
		size = off + len;
}

static void do_trunc(uint64_t newsize)
{
	if (ftruncate(fd, newsize) < 0)
		die("ftruncate");
	if (newsize > size)
		memset(good + size, 0, newsize - size);
	size = newsize;
}

static void do_mapread(uint64_t off, uint64_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t pgoff;
	char *p;

	if (size == 0)
		return;
	off %= size;
	if (off + len > size)
		len = size - off;
	if (len == 0)
		return;
	pgoff = off & ~(uint64_t)(pg - 1);
	p = mmap(NULL, len + off - pgoff, PROT_READ, MAP_SHARED, fd, pgoff);
	if (p == MAP_FAILED)
		die("mmap (read)");
	check((unsigned char *)p + (off - pgoff), off, len);
	munmap(p, len + off - pgoff);
}

static void do_mapwrite(uint64_t off, uint64_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t pgoff, end;
	char *p;

	if (off + len > maxlen)
		len = maxlen - off;
	if (len == 0)
		return;
	end = off + len;
	if (end > size) {
		/* mapped writes cannot extend a file: grow it first */
		if (ftruncate(fd, end) < 0)
			die("ftruncate (mapwrite)");
		memset(good + size, 0, end - size);
		size = end;
	}
	pgoff = off & ~(uint64_t)(pg - 1);
	p = mmap(NULL, end - pgoff, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pgoff);
	if (p == MAP_FAILED)
		die("mmap (write)");
	fill(good + off, len);
	memcpy(p + (off - pgoff), good + off, len);
	/* Mostly async: MS_SYNC is an fsync, and the fsync path is
	 * exercised often enough by one mapwrite in eight. */
	if (msync(p, end - pgoff, rnd() % 8 ? MS_ASYNC : MS_SYNC) < 0)
		die("msync");
	munmap(p, end - pgoff);
}

static void do_falloc(uint64_t off, uint64_t len)
{
	int mode = rnd() % 2 ? FALLOC_FL_KEEP_SIZE : 0;

	if (off + len > maxlen)
		len = maxlen - off;
	if (len == 0)
		return;
	if (fallocate(fd, mode, off, len) < 0) {
		if (errno == EOPNOTSUPP)
			return;
		die("fallocate");
	}
	if (!mode && off + len > size) {
		memset(good + size, 0, off + len - size);
		size = off + len;
	}
}

static void do_reopen(void)
{
	if (close(fd) < 0)
		die("close");
	fd = open(path, O_RDWR);
	if (fd < 0)
		die("reopen");
	check_all();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "maxlen", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	long nops = 50000;
	uint64_t seed = (uint64_t)time(NULL);
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'n': nops = atol(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'l': maxlen = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: fsx [--ops N] [--seed S] [--maxlen B] FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1 || maxlen < 4096) {
		fprintf(stderr, "usage: fsx [--ops N] [--seed S] [--maxlen B] FILE\n");
		return 2;
	}
	path = argv[optind];
	rng = seed ? seed : 1;
	printf("fsx: seed %llu, %ld operations, file up to %llu bytes: %s\n",
	       (unsigned long long)seed, nops, (unsigned long long)maxlen, path);
	fflush(stdout);
	good = calloc(1, maxlen);
	buf = malloc(maxlen);
	if (!good || !buf)
		return 1;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	for (opno = 0; opno < nops; opno++) {
		uint64_t r = rnd() % 100;
		uint64_t off = rnd() % maxlen;
		/* mostly small IO, sometimes up to 64 KiB */
		uint64_t len = rnd() % 8 ? 1 + rnd() % 4096 : 1 + rnd() % 65536;
		enum op op = r < 30 ? OP_READ : r < 58 ? OP_WRITE : r < 66 ? OP_TRUNC :
			     r < 76 ? OP_MAPREAD : r < 88 ? OP_MAPWRITE :
			     r < 96 ? OP_FALLOC : r < 97 ? OP_FSYNC : OP_REOPEN;

		if (op == OP_TRUNC)
			off = rnd() % 2 ? off : off / 16;
		log_op(op, off, len);
		switch (op) {
		case OP_READ: do_read(off, len); break;
		case OP_WRITE: do_write(off, len); break;
		case OP_TRUNC: do_trunc(off); break;
		case OP_MAPREAD: do_mapread(off, len); break;
		case OP_MAPWRITE: do_mapwrite(off, len); break;
		case OP_FALLOC: do_falloc(off, len); break;
		case OP_FSYNC:
			if (fsync(fd) < 0)
				die("fsync");
			break;
		case OP_REOPEN: do_reopen(); break;
		default: break;
		}
		if (opno % 1000 == 999)
			check_size();
	}
	check_all();
	if (close(fd) < 0)
		die("close");
	printf("fsx: %ld operations ok\n", nops);
	return 0;
}
