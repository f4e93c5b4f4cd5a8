/*
 * io — lays out test files and runs timed IO patterns on them. The main
 * thread lays out, starts one thread per job, draws progress, joins and
 * merges; each job thread owns its file descriptor, buffer, io_uring and
 * histogram and shares nothing writable with the others until it is
 * joined. Only the test files it created under the target are touched.
 */
#include "bench/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/histogram.h"
#include "bench/iobuf.h"
#include "common/progress.h"
#include "bench/stop.h"
#include "common/clock.h"
#include "common/log.h"

static const struct io_pattern io_named[] = {
	{ "4k-randread", 4096, 100, 100 },
	{ "4k-randwrite", 4096, 0, 100 },
	{ "4k-randrw70", 4096, 70, 100 },
	{ "64k-randread", 65536, 100, 100 },
	{ "64k-randwrite", 65536, 0, 100 },
	{ "1m-seqread", 1u << 20, 100, 0 },
	{ "1m-seqwrite", 1u << 20, 0, 0 },
};

const struct io_pattern *io_patterns(size_t *n)
{
	*n = sizeof(io_named) / sizeof(io_named[0]);
	return io_named;
}

int io_pattern_find(const char *name, struct io_pattern *out)
{
	for (size_t i = 0; i < sizeof(io_named) / sizeof(io_named[0]); i++)
		if (strcmp(io_named[i].name, name) == 0) {
			*out = io_named[i];
			return 0;
		}
	return -ENOENT;
}

static uint64_t io_rand(uint64_t *s)
{
	/* xorshift64*: fast, good enough to pick offsets and read/write. */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void io_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed | 1, *p = buf;

	/* Non-zero, incompressible: zeros would flatter thin provisioning,
	 * compression and deduplication. */
	for (size_t i = 0; i < len / 8; i++)
		p[i] = io_rand(&s) | 0x0101010101010101ull;
}

int io_files_layout(struct io_files *f, const char *dir, int n, uint64_t size,
		    int progress)
{
	const size_t chunk = 1u << 20;
	struct progress p;
	uint64_t done = 0;
	char path[PATH_MAX];
	void *buf = NULL;
	int fd = -1, rc = 0;

	memset(f, 0, sizeof(*f));
	f->size = size;
	f->paths = calloc((size_t)n, sizeof(*f->paths));
	if (!f->paths || posix_memalign(&buf, 4096, chunk))
		return -ENOMEM;
	progress_init(&p, stderr, progress, "laying out test files", size * (uint64_t)n,
		      (uint64_t)n);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/twinfs-bench-io.%d.%d", dir,
			 (int)getpid(), i);
		if (!(f->paths[i] = strdup(path))) {
			rc = -ENOMEM;
			goto out_free;
		}
		f->n = i + 1;
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			rc = -errno;
			goto out_log;
		}
		for (uint64_t off = 0; off < size; off += chunk) {
			size_t len = size - off < chunk ? (size_t)(size - off) : chunk;

			io_fill(buf, chunk, off ^ ((uint64_t)i << 40) ^ 0x5eed);
			ssize_t w = pwrite(fd, buf, len, (off_t)off);
			if (stop_requested()) {
				rc = -EINTR;
				goto out_free;
			}
			if (w != (ssize_t)len) {
				rc = w < 0 ? -errno : -EIO;
				goto out_log;
			}
			done += len;
			progress_update(&p, done);
		}
		if (fsync(fd) < 0) {
			rc = -errno;
			goto out_log;
		}
		progress_files(&p, (uint64_t)i + 1);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
		fd = -1;
	}
	goto out_free;
out_log:
	log_error("cannot lay out the IO test file",
		  "path=\"%s\" err=\"%s\" hint=\"check free space or use a smaller --size\"",
		  path, strerror(-rc));
out_free:
	if (fd >= 0)
		close(fd);
	progress_done(&p);
	free(buf);
	if (rc)
		io_files_remove(f);
	return rc;
}

uint64_t io_working_set(const struct io_files *f, const struct io_opts *o)
{
	int files = o->shared_file ? 1 : (o->jobs < f->n ? o->jobs : f->n);

	return f->size * (uint64_t)files;
}

void io_files_remove(struct io_files *f)
{
	for (int i = 0; i < f->n; i++) {
		if (f->paths[i] && unlink(f->paths[i]) < 0 && errno != ENOENT)
			log_warn("cannot remove an IO test file", "path=\"%s\" err=\"%s\"",
				 f->paths[i], strerror(errno));
		free(f->paths[i]);
	}
	free(f->paths);
	memset(f, 0, sizeof(*f));
}

/* The start line: jobs wait until the main thread opens it (all start
 * together) or calls the run off (a thread could not be created). */
struct io_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;		/* 0 wait, 1 go, -1 abort; under lock */
};

static int io_gate_wait(struct io_gate *g)
{
	int st;

	pthread_mutex_lock(&g->lock);
	while (g->state == 0)
		pthread_cond_wait(&g->cond, &g->lock);
	st = g->state;
	pthread_mutex_unlock(&g->lock);
	return st;
}

static void io_gate_open(struct io_gate *g, int state)
{
	pthread_mutex_lock(&g->lock);
	g->state = state;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* One job thread's inputs and outputs. */
struct io_job {
	const struct io_opts *o;
	const char *path;
	uint64_t size;
	int index;
	struct io_gate *gate;
	/* outputs, read by the main thread after join */
	struct histogram hist;
	uint64_t reads, writes, bytes;
	uint64_t t_start, t_end;
	int huge;		/* iobuf_huge() of its buffer: 1, 0 or -errno */
	int rc;
};

/* The next IO of a job: read or write, and where. */
struct io_next {
	uint64_t rng, seq_block, nblocks;
	int wrapped;		/* a sequential pass just completed */
};

/*
 * Page cache. Without O_DIRECT, a 256 MiB test file would be read from the
 * disk once and from memory ever after. By default we do what fio does
 * with its default invalidate=1: drop the file from the cache
 * (posix_fadvise DONTNEED) after laying it out, when a job starts, and
 * each time a job starts another pass over the file (a "loop": the end of
 * a sequential pass). The start-of-job drop matters here more than in fio:
 * bench io reuses its files across patterns, so without it a pattern runs
 * on whatever the previous ones left cached. Pages the previous pattern
 * dirtied cannot be dropped, so the job first fdatasyncs its file (fio
 * lays out a fresh file per run and never has such pages); both happen
 * before the start line, outside the timed run. The end-of-pass drop
 * happens between IOs, counted in the run time but in no IO's latency, as
 * in fio. A random job with uniform, with-replacement offsets never ends a
 * pass, so it fills the cache as it runs: a buffered random run on a file
 * that fits in RAM has much of it cached within seconds, in fio as here
 * (bench_cmd warns), and --direct is the way to measure the device alone.
 * --cached measures the page cache on purpose: each job reads its file
 * once before the start line and nothing is dropped. With O_DIRECT
 * nothing is dropped either.
 */
static int io_prepare_cache(const struct io_job *j, int fd, char *buf,
			    size_t buflen)
{
	const struct io_opts *o = j->o;

	if (o->direct)
		return 0;
	if (!o->cached) {
		if (fdatasync(fd) < 0)
			return -errno;
		return -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	for (uint64_t off = 0; off < j->size && !stop_requested();) {
		ssize_t n = pread(fd, buf, buflen, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (uint64_t)n;
	}
	return 0;
}

static int io_maybe_drop(const struct io_job *j, int fd, struct io_next *n)
{
	if (!n->wrapped)
		return 0;
	n->wrapped = 0;
	if (j->o->direct || j->o->cached)
		return 0;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return 1;
}

static void io_pick(const struct io_opts *o, struct io_next *n, int *is_read,
		    uint64_t *off)
{
	uint64_t block;

	*is_read = (int)(io_rand(&n->rng) % 100) < o->pat.read_pct;
	if (o->pat.random_pct >= 100 ||
	    (o->pat.random_pct > 0 && (int)(io_rand(&n->rng) % 100) < o->pat.random_pct)) {
		block = io_rand(&n->rng) % n->nblocks;
	} else {
		block = n->seq_block;
		if (++n->seq_block == n->nblocks) {
			n->seq_block = 0;
			n->wrapped = 1;
		}
	}
	*off = block * o->pat.bs;
}

static int io_sync_loop(struct io_job *j, int fd, char *buf, struct io_next *n,
			uint64_t deadline)
{
	const struct io_opts *o = j->o;
	uint64_t now = clock_mono_ns();

	while (now < deadline && !stop_requested()) {
		int is_read;
		uint64_t off, t0 = now;
		ssize_t r;

		io_pick(o, n, &is_read, &off);
		r = is_read ? pread(fd, buf, o->pat.bs, (off_t)off)
			    : pwrite(fd, buf, o->pat.bs, (off_t)off);
		if (r < 0 && errno == EINTR)
			break;
		if (r < 0)
			return -errno;
		now = clock_mono_ns();
		histogram_record(&j->hist, now - t0);
		j->bytes += (uint64_t)r;
		if (is_read)
			j->reads++;
		else
			j->writes++;
		if (io_maybe_drop(j, fd, n))
			now = clock_mono_ns();
	}
	return 0;
}

/*
 * Queue depth, and how IOs reach the kernel. iodepth > 1 means that many
 * IOs really in flight on one file from one thread, as fio's io_uring and
 * libaio engines and diskspd -o do; more threads would measure something
 * else (see `bench sweep`). Each of the iodepth slots owns a slice of the
 * buffer and the submit time of its IO. Latency is submit to reap, what
 * fio reports as "lat" (slat + clat).
 *
 * The loop is fio's with its defaults (iodepth_batch_submit=1,
 * iodepth_batch_complete_min=1, iodepth_low=iodepth): wait for at least
 * one completion, reap every completion already posted, then refill the
 * free slots one IO per io_uring_enter(2). Refilling all free slots with
 * one submit would be another test: IOs submitted together reach the
 * block layer under one plug, where adjacent O_DIRECT IOs merge (a "1 MiB"
 * test would send 2-4 MiB requests), and cached buffered reads would pay
 * one enter per many IOs where fio pays one per IO. Evidence: see
 * docs/benchmarks.md, "bench io against fio: submission".
 * One IO per submit is also what a QD-N device test means: each IO goes
 * to the device the moment its slot is free, never held back for others.
 * The ring is set up as fio 3.33 sets it up (CQ ring = iodepth,
 * COOP_TASKRUN, SINGLE_ISSUER, DEFER_TASKRUN; flags the kernel refuses
 * are dropped in the same order): completions are run in this thread when
 * it enters the kernel, not by interrupting it. Submits pass GETEVENTS, as
 * fio's do, so deferred completions are posted on every enter.
 */
struct io_slot {
	uint64_t t0;
	int is_read;
};

/* 0 or -errno. Must run on the job thread that will submit: with
 * SINGLE_ISSUER and DEFER_TASKRUN the ring belongs to the thread that
 * created it, and only that thread may submit or reap. */
static int io_uring_setup_like_fio(struct io_uring *ring, unsigned depth)
{
	static const unsigned drop[] = {
		IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
		IORING_SETUP_COOP_TASKRUN,
		IORING_SETUP_CQSIZE,
	};
	struct io_uring_params p;
	unsigned flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN |
			 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int rc;

	for (size_t k = 0;; k++) {
		memset(&p, 0, sizeof(p));
		p.flags = flags;
		p.cq_entries = depth;
		rc = io_uring_queue_init_params(depth, ring, &p);
		if (rc != -EINVAL || k == sizeof(drop) / sizeof(drop[0]))
			return rc;
		flags &= ~drop[k];
	}
}

/* Picks the next IO for slot i and submits it alone (see above). */
static int io_uring_issue(struct io_uring *ring, int fd, struct io_next *n,
			  const struct io_opts *o, char *buf, struct io_slot *slot, unsigned i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	char *p = buf + (size_t)i * o->pat.bs;
	uint64_t off;
	int rc;

	if (!sqe)
		return -EBUSY;	/* cannot happen: one SQE per free slot */
	io_pick(o, n, &slot[i].is_read, &off);
	if (slot[i].is_read)
		io_uring_prep_read(sqe, fd, p, o->pat.bs, off);
	else
		io_uring_prep_write(sqe, fd, p, o->pat.bs, off);
	io_uring_sqe_set_data64(sqe, i);
	slot[i].t0 = clock_mono_ns();
	do
		rc = io_uring_submit_and_get_events(ring);
	while (rc == -EINTR);
	return rc < 0 ? rc : 0;
}

static int io_uring_loop(struct io_job *j, int fd, char *buf, struct io_next *n,
			 uint64_t deadline)
{
	const struct io_opts *o = j->o;
	const unsigned depth = (unsigned)o->iodepth;
	struct io_slot *slot = calloc(depth, sizeof(*slot));
	unsigned *refill = calloc(depth, sizeof(*refill));
	struct io_uring ring;
	unsigned inflight = 0;
	int rc;

	if (!slot || !refill) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = io_uring_setup_like_fio(&ring, depth);
	if (rc < 0)
		goto out_free;
	for (unsigned i = 0; i < depth && !rc; i++) {
		rc = io_uring_issue(&ring, fd, n, o, buf, slot, i);
		if (!rc)
			inflight++;
	}
	while (inflight) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0, nrefill = 0;
		int again;
		uint64_t now;

		again = io_uring_wait_cqe(&ring, &cqe);
		if (again == -EINTR)
			continue;
		if (again < 0) {
			if (!rc)
				rc = again;
			break;
		}
		/* First account every completion of the batch at the time it
		 * was reaped, then (maybe) drop the cache, then refill. */
		now = clock_mono_ns();
		io_uring_for_each_cqe(&ring, head, cqe) {
			unsigned i = (unsigned)io_uring_cqe_get_data64(cqe);

			seen++;
			inflight--;
			if (cqe->res < 0) {
				if (!rc)
					rc = cqe->res;
				continue;
			}
			histogram_record(&j->hist, now - slot[i].t0);
			j->bytes += (uint64_t)cqe->res;
			if (slot[i].is_read)
				j->reads++;
			else
				j->writes++;
			refill[nrefill++] = i;
		}
		io_uring_cq_advance(&ring, seen);
		if (rc || now >= deadline || stop_requested())
			continue;	/* drain what is still in flight */
		io_maybe_drop(j, fd, n);
		for (unsigned k = 0; k < nrefill && !rc; k++) {
			rc = io_uring_issue(&ring, fd, n, o, buf, slot, refill[k]);
			if (!rc)
				inflight++;
		}
	}
	io_uring_queue_exit(&ring);
out_free:
	free(slot);
	free(refill);
	return rc;
}

static void *io_job_main(void *arg)
{
	struct io_job *j = arg;
	const struct io_opts *o = j->o;
	struct io_next n = { 0 };
	size_t buflen = (size_t)o->pat.bs * (size_t)(o->iodepth > 1 ? o->iodepth : 1);
	struct iobuf buf = { 0 };
	int fd;

	histogram_init(&j->hist);
	fd = open(j->path, O_RDWR | O_CLOEXEC | (o->direct ? O_DIRECT : 0));
	if (fd < 0)
		j->rc = -errno;
	else if ((j->rc = iobuf_alloc(&buf, buflen)) == 0) {
		/* Touching it now faults the huge pages in before the clock
		 * starts; see bench/iobuf.c for why the buffer is huge. */
		io_fill(buf.p, buflen, o->seed + (uint64_t)j->index * 7919);
		j->huge = iobuf_huge(&buf);
	}
	/* Readahead hint as fio gives it (fadvise_hint=1): none for random
	 * patterns, or every 4 KiB miss would pull in 128 KiB and a random
	 * read test would turn into a cache test after a few seconds. */
	if (fd >= 0 && !j->rc)
		j->rc = io_prepare_cache(j, fd, buf.p, buflen);
	if (fd >= 0)
		posix_fadvise(fd, 0, 0, o->pat.random_pct > 0 ? POSIX_FADV_RANDOM
							      : POSIX_FADV_SEQUENTIAL);
	n.rng = (o->seed ^ ((uint64_t)j->index + 1) * 0x9e3779b97f4a7c15ull) | 1;
	n.nblocks = j->size / o->pat.bs;
	/* Sharing one file, jobs start their sequential runs apart. */
	n.seq_block = o->shared_file ? n.nblocks * (uint64_t)j->index / (uint64_t)o->jobs : 0;

	/* Everybody starts together; a job that failed to open still passes
	 * the gate and its error is reported after the run. */
	if (io_gate_wait(j->gate) < 0 && !j->rc)
		j->rc = -ECANCELED;
	j->t_start = clock_mono_ns();
	if (!j->rc) {
		uint64_t deadline = j->t_start + (uint64_t)(o->runtime * 1e9);

		j->rc = o->iodepth > 1 ? io_uring_loop(j, fd, buf.p, &n, deadline)
				       : io_sync_loop(j, fd, buf.p, &n, deadline);
	}
	j->t_end = clock_mono_ns();
	iobuf_free(&buf);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static double io_cpu_s(const struct rusage *u)
{
	return (double)u->ru_utime.tv_sec + (double)u->ru_utime.tv_usec / 1e6 +
	       (double)u->ru_stime.tv_sec + (double)u->ru_stime.tv_usec / 1e6;
}

/* Checks O_DIRECT on the first file; falls back to buffered IO with a
 * message when the filesystem refuses it (tmpfs, some FUSE mounts). */
static void io_check_direct(const struct io_files *f, struct io_opts *o)
{
	int fd;

	if (!o->direct)
		return;
	fd = open(f->paths[0], O_RDWR | O_CLOEXEC | O_DIRECT);
	if (fd >= 0) {
		close(fd);
		return;
	}
	fprintf(stderr, "twinfs bench io: the target refuses O_DIRECT (%s) on %s; "
		"running buffered IO instead (results include the page cache)\n",
		strerror(errno), f->paths[0]);
	o->direct = 0;
}

/* Says on stderr when a direct run of IOs larger than a page had a buffer
 * outside huge pages: its requests then carried as many memory segments
 * as the allocator's luck gave (bench/iobuf.c), which the numbers alone
 * would not show. */
static void io_warn_small_pages(const struct io_job *jobs, const struct io_opts *o)
{
	long page = sysconf(_SC_PAGESIZE);
	int small = 0;

	if (!o->direct || o->pat.bs <= (uint32_t)(page > 0 ? page : 4096))
		return;
	for (int i = 0; i < o->jobs; i++)
		small += jobs[i].huge != 1;
	if (small)
		fprintf(stderr, "twinfs bench io: %s: %d of %d IO buffers are not in huge "
			"pages (transparent_hugepage is 'never', or memory is too fragmented); "
			"each %u-byte direct IO may then reach the device in several memory "
			"segments and the result depends on memory layout (bench/README.md); "
			"set /sys/kernel/mm/transparent_hugepage/enabled to madvise or always\n",
			o->pat.name, small, o->jobs, o->pat.bs);
}

int io_run(const struct io_files *f, struct io_opts *o, struct result *r)
{
	struct io_job *jobs;
	pthread_t *tid;
	struct io_gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct rusage u0, u1;
	struct histogram *all;
	struct progress p;
	uint64_t t_min = UINT64_MAX, t_max = 0, reads = 0, writes = 0, bytes = 0;
	int started = 0, rc = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (f->size / o->pat.bs == 0) {
		log_error("the IO test file is smaller than one block",
			  "size=%llu bs=%u hint=\"raise --size or lower --bs\"",
			  (unsigned long long)f->size, o->pat.bs);
		return -EINVAL;
	}
	io_check_direct(f, o);
	jobs = calloc((size_t)o->jobs, sizeof(*jobs));
	tid = calloc((size_t)o->jobs, sizeof(*tid));
	all = malloc(sizeof(*all));
	if (!jobs || !tid || !all) {
		rc = -ENOMEM;
		goto out_free;
	}
	histogram_init(all);
	for (int i = 0; i < o->jobs; i++) {
		jobs[i].o = o;
		jobs[i].index = i;
		jobs[i].path = f->paths[o->shared_file ? 0 : i % f->n];
		jobs[i].size = f->size;
		jobs[i].gate = &gate;
		rc = -pthread_create(&tid[i], NULL, io_job_main, &jobs[i]);
		if (rc) {
			log_error("cannot start an IO thread",
				  "jobs=%d err=\"%s\" hint=\"use fewer --jobs\"",
				  o->jobs, strerror(-rc));
			io_gate_open(&gate, -1);
			for (int k = 0; k < started; k++)
				pthread_join(tid[k], NULL);
			goto out_free;
		}
		started++;
	}
	getrusage(RUSAGE_SELF, &u0);
	clock_wall_str(r->start, sizeof r->start);
	io_gate_open(&gate, 1);
	progress_init_timed(&p, stderr, o->progress, o->pat.name, o->runtime);
	if (o->progress) {
		uint64_t t0 = clock_mono_ns();

		for (;;) {
			uint64_t ms = (clock_mono_ns() - t0) / 1000000;
			if (ms >= (uint64_t)(o->runtime * 1000) || stop_requested())
				break;
			progress_update(&p, ms);
			usleep(100000);
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	getrusage(RUSAGE_SELF, &u1);
	clock_wall_str(r->end, sizeof r->end);
	progress_done(&p);

	for (int i = 0; i < o->jobs; i++) {
		struct io_job *j = &jobs[i];

		if (j->rc && !rc && !stop_requested()) {
			rc = j->rc;
			log_error("IO failed", "file=\"%s\" pattern=%s err=\"%s\"%s",
				  j->path, o->pat.name, strerror(-rc),
				  rc == -EINVAL && o->direct ?
				  " hint=\"O_DIRECT needs --bs a multiple of the sector size\"" : "");
		}
		histogram_merge(all, &j->hist);
		reads += j->reads;
		writes += j->writes;
		bytes += j->bytes;
		if (j->t_start < t_min)
			t_min = j->t_start;
		if (j->t_end > t_max)
			t_max = j->t_end;
	}
	if (!rc && stop_requested())
		rc = -EINTR;
	if (rc)
		goto out_free;
	io_warn_small_pages(jobs, o);
	r->kind = RESULT_IO;
	r->seconds = (double)(t_max - t_min) / 1e9;
	r->ops = reads + writes;
	r->bytes = bytes;
	r->iops = (double)r->ops / r->seconds;
	r->read_iops = (double)reads / r->seconds;
	r->write_iops = (double)writes / r->seconds;
	r->lat.p50 = (double)histogram_percentile(all, 0.50) / 1e3;
	r->lat.p99 = (double)histogram_percentile(all, 0.99) / 1e3;
	r->lat.p999 = (double)histogram_percentile(all, 0.999) / 1e3;
	r->lat.mean = histogram_mean(all) / 1e3;
	r->lat.max = (double)all->max / 1e3;
	r->cpu_pct = (io_cpu_s(&u1) - io_cpu_s(&u0)) / r->seconds /
		     (double)(cores > 0 ? cores : 1) * 100.0;
	r->jobs = o->jobs;
	r->iodepth = o->iodepth;
	r->direct = o->direct;
	r->cached = o->cached && !o->direct;
	r->bs = o->pat.bs;
	r->read_pct = o->pat.read_pct;
	r->random_pct = o->pat.random_pct;
out_free:
	free(all);
	free(jobs);
	free(tid);
	return rc;
}
