/*
 * ring — FUSE over io_uring: per-CPU ring threads serve the requests the
 * kernel routes to the CPU the calling application runs on. Owns the
 * kernel switch, the rings, their threads and buffers; replies come back
 * through ring_reply from the session's writev hook (fs/backing.c).
 *
 * Why: a small file copied into the mount costs several synchronous
 * requests (`cp -r`: lookup, create, a getattr of the parent and the
 * security.capability lookup of the new inode; `cp -a` adds a setattr and
 * an ACL setxattr). Through /dev/fuse each wakes a worker thread
 * that the scheduler may place on the other CPU, and the reply wakes the
 * application there in turn; these cross-CPU wake-ups and the TLB
 * shootdowns they bring dominate a small-file copy (docs/benchmarks.md,
 * "FUSE over io_uring"). The io_uring transport keeps both on one CPU
 * without pinning the application: the kernel queues a request to the
 * ring of the CPU its caller runs on, whose threads are pinned there, and
 * one io_uring_enter commits a reply and waits for the next request.
 * While the mount is busy, a thread polls for its next request for a
 * short window instead of sleeping ("Polling", below), so that a round
 * trip on an idle machine does not wake an idle CPU.
 *
 * Not SCHED_IDLE, although the scheduler would then see the CPU as idle
 * when the reply wakes the caller and keep it there instead of moving it
 * to the other CPU: with every CPU busy, ring threads that only run when
 * a CPU is idle starve, and each request waits for a scheduler tick.
 *
 * Layout: for every possible CPU (the kernel wants a queue per CPU before
 * it switches) RING_SLOTS threads, each with its own small io_uring and
 * one ring entry. One entry per thread means the kernel only hands a
 * request to a thread that is idle; a handler that blocks (a local fsync)
 * holds up only its own thread, not the requests queued behind it.
 *
 * A request arrives split: fuse_in_header, the opcode's fixed argument
 * (op_in) and the rest (payload: names, write data). libfuse 3.14 wants
 * them contiguous, as /dev/fuse delivers them; the payload buffer sits
 * RING_PAD bytes into a larger one, so the header and op_in are copied in
 * front of it and write data is never copied. in.len gives op_in's size.
 *
 * Not used in sync mode: there an fsync, flush or release waits for the
 * peer in the request's thread (up to sync.timeout), and so would every
 * request queued on that CPU; /dev/fuse keeps 16 workers for that.
 * Replies that are not for the calling ring thread's request (the INIT
 * reply, requests that came through /dev/fuse, notifications) go to
 * /dev/fuse as before. Kernel ABI: fs/kabi.h. libfuse 3.18 serves the
 * rings itself; with it this file and fs/fuse314.c can go.
 */
#include "fs/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include "common/clock.h"
#include "common/log.h"
#include "fs/fs_internal.h"
#include "fs/fuse314.h"
#include "fs/kabi.h"
#include "fs/pollwin.h"

#define RING_PARAM "/sys/module/fuse/parameters/enable_uring"
#define RING_SLOTS 4		/* threads (one entry each) per CPU */
#define RING_PAD 4096		/* room for in_header + op_in before the payload */
#define RING_OP_IN_SZ KABI_FUSE_URING_OP_IN_OUT_SZ
#define RING_TAG_CMD 1
#define RING_TAG_STOP 2

_Static_assert(sizeof(struct kabi_fuse_uring_cmd_req) <= 80,
	       "the command must fit an SQE128 entry's command area");

struct ring;

struct ring_thr {
	struct ring *r;
	pthread_t tid;
	bool started;
	uint16_t qid;
	int evfd;
	struct io_uring uring;
	struct kabi_fuse_uring_req_header *hdr;	/* page-aligned, registered */
	char *buf;		/* RING_PAD + payload_cap; payload at buf + RING_PAD */
	struct iovec iov[2];
	uint32_t last_op;
	uint64_t unique;	/* of the request being handled */
	uint64_t commit_id;
	bool handling, replied;
	bool poll;		/* served a request since it last slept */
	/* /proc/thread-self/schedstat (-1: none), and the run delay it
	 * gave when last read, at ss_ns ("Polling", below). */
	int ss_fd;
	uint64_t ss_ns, ss_delay;
	uint64_t served;
	uint64_t poll_hits, poll_misses, poll_backoffs, poll_loaded;
};

struct ring {
	struct fs *fs;
	int devfd;
	size_t payload_cap;
	unsigned int nthr;
	pthread_t main_thread;
	struct ring_thr *thr;
	uint64_t poll_ns;	/* the polling window; 0: sleep at once */
	/* When the last request of any CPU arrived (clock_mono_ns), the
	 * window polling uses now (adapted to the gaps between requests, at
	 * most poll_ns) and how many threads poll ("Polling", below). */
	uint64_t last_req_ns;
	uint64_t win_ns;
	unsigned int polling;
	/* /proc/loadavg (-1: none), when it was last read, and whether the
	 * machine had more runnable tasks than CPUs then ("Back-off"). */
	int loadavg_fd;
	uint64_t load_ns;
	bool loaded;
	unsigned int ncpu_online;
	/* Per CPU: the thread that may poll (the last to reply there), and
	 * until when polling there is off (the CPU had other work). */
	struct ring_cpu *cpu;
};

struct ring_cpu {
	unsigned int poller;
	/* Polling is off here until quiet_until_ns, for backoff_ns (doubled
	 * when other work shows again soon after, "Back-off", below). */
	uint64_t quiet_until_ns, backoff_ns;
};

static __thread struct ring_thr *ring_self;

bool ring_kernel_enable(void)
{
	char c = 0;
	int fd = open(RING_PARAM, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;	/* no CONFIG_FUSE_IO_URING */
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	if (c == 'Y' || c == '1')
		return true;
	if (geteuid() != 0)
		return false;
	fd = open(RING_PARAM, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "Y", 1) != 1) {
		log_info("could not turn on FUSE over io_uring; requests "
			 "go through /dev/fuse", "param=%s err=\"%s\"",
			 RING_PARAM, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	log_info("turned on FUSE over io_uring in the kernel (it applies "
		 "only to FUSE servers that ask for it)", "param=%s", RING_PARAM);
	return true;
}

/* Number of possible CPUs: the kernel's queue count (num_possible_cpus). */
static unsigned int ring_possible_cpus(void)
{
	char line[256];
	const char *p;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	long n = -1;

	if (f && fgets(line, sizeof(line), f)) {
		/* "0-3" or "0,2-5": the last number is the highest index. */
		p = line + strlen(line);
		while (p > line && (p[-1] < '0' || p[-1] > '9'))
			p--;
		while (p > line && p[-1] >= '0' && p[-1] <= '9')
			p--;
		n = strtol(p, NULL, 10) + 1;
	}
	if (f)
		fclose(f);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? (unsigned int)n : 1;
}

/* Queues the thread's command OP (register or commit-and-fetch). */
static void ring_prep(struct ring_thr *t, uint32_t op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->uring);
	struct kabi_fuse_uring_cmd_req cmd = { .qid = t->qid };

	/* Never NULL: one command and one poll in flight, 4 slots. */
	if (!sqe) {
		log_error("no free FUSE ring submission slot", "cpu=%u", t->qid);
		return;
	}
	/* SQE128: each entry is two struct io_uring_sqe long. */
	memset((void *)sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->r->devfd;
	sqe->cmd_op = op;
	sqe->user_data = RING_TAG_CMD;
	if (op == KABI_FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)t->iov;
		sqe->len = 2;
	} else {
		cmd.commit_id = t->commit_id;
	}
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	t->last_op = op;
}

/* Commits the reply now in the header and payload (ring_reply). */
static void ring_commit(struct ring_thr *t, int error, uint32_t len)
{
	struct fuse_out_header oh = {
		.len = (uint32_t)sizeof(oh) + len,
		.error = error,
		.unique = t->unique,
	};

	memcpy(t->hdr->in_out, &oh, sizeof(oh));
	t->hdr->ring_ent_in_out.payload_sz = len;
	t->handling = false;
	t->replied = true;
	ring_prep(t, KABI_FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
}

ssize_t ring_reply(const struct iovec *iov, int count)
{
	struct ring_thr *t = ring_self;
	const struct fuse_out_header *oh;
	char *pay;
	size_t len = 0;
	int i;

	if (!t || !t->handling || count < 1 || iov[0].iov_len < sizeof(*oh))
		return -ENOENT;
	oh = iov[0].iov_base;
	if (oh->unique != t->unique)
		return -ENOENT;
	pay = t->buf + RING_PAD;
	for (i = 1; i < count; i++)
		len += iov[i].iov_len;
	if (len > t->r->payload_cap) {
		log_error("a reply is larger than the ring buffer",
			  "len=%zu cap=%zu", len, t->r->payload_cap);
		ring_commit(t, -EIO, 0);
		return (ssize_t)(sizeof(*oh) + len);
	}
	len = 0;
	for (i = 1; i < count; i++) {
		if (iov[i].iov_base != pay + len)	/* see ring_reply_buf */
			memmove(pay + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ring_commit(t, oh->error, (uint32_t)len);
	return (ssize_t)(sizeof(*oh) + len);
}

void *ring_reply_buf(size_t *cap)
{
	struct ring_thr *t = ring_self;

	if (!t || !t->handling)
		return NULL;
	*cap = t->r->payload_cap;
	return t->buf + RING_PAD;
}

/* A request arrived: notes when, and fits the polling window to the gap
 * since the one before ("Polling", below). Any ring thread. */
static void ring_poll_adapt(struct ring *r)
{
	uint64_t now = clock_mono_ns();
	uint64_t gap = now - __atomic_exchange_n(&r->last_req_ns, now, __ATOMIC_RELAXED);

	__atomic_store_n(&r->win_ns, pollwin_next(__atomic_load_n(&r->win_ns,
			 __ATOMIC_RELAXED), gap, r->poll_ns), __ATOMIC_RELAXED);
}

/* A request arrived in T's entry: lay it out as /dev/fuse would and let
 * libfuse dispatch it; the handler's reply reaches ring_reply. */
static void ring_handle(struct ring_thr *t)
{
	struct fuse_in_header in;
	struct fuse_buf b = { 0 };
	uint32_t pay = t->hdr->ring_ent_in_out.payload_sz;
	size_t op;
	char *start;

	memcpy(&in, t->hdr->in_out, sizeof(in));
	ring_poll_adapt(t->r);
	t->unique = in.unique;
	t->commit_id = t->hdr->ring_ent_in_out.commit_id;
	t->handling = true;
	t->replied = false;
	if (in.len < sizeof(in) + pay || pay > t->r->payload_cap ||
	    in.len - sizeof(in) - pay > RING_OP_IN_SZ) {
		log_error("malformed request from the FUSE ring", "opcode=%u "
			  "len=%u payload=%u", in.opcode, in.len, pay);
		ring_commit(t, -EIO, 0);
		return;
	}
	op = in.len - sizeof(in) - pay;
	start = t->buf + RING_PAD - op - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), t->hdr->op_in, op);
	b.mem = start;
	b.size = in.len;
	fuse314_note_request(start, in.len);
	fuse_session_process_buf(t->r->fs->se, &b);
	t->served++;
	t->poll = true;
	__atomic_store_n(&t->r->cpu[t->qid].poller, (unsigned int)(t - t->r->thr),
			 __ATOMIC_RELAXED);
	if (!t->replied) {
		/* Every opcode the kernel sends over the ring expects a
		 * reply; without one the entry would be lost for good. */
		log_error("a ring request got no reply", "opcode=%u", in.opcode);
		ring_commit(t, -EIO, 0);
	}
}

/* Ends the mount after a ring thread failed while the ring carried
 * requests: the kernel would keep queueing requests to it, and the
 * applications would hang instead of getting an error. */
static void ring_fatal(struct ring_thr *t, int err)
{
	if (t->served == 0) {
		/* Never registered: the kernel switches a connection to the
		 * rings only once every CPU has an entry, so if this CPU has
		 * none, all requests stay on /dev/fuse. */
		log_warn("a FUSE ring thread did not start", "cpu=%u err=\"%s\"",
			 t->qid, strerror(-err));
		return;
	}
	log_error("a FUSE ring failed; unmounting rather than leave its "
		  "requests unanswered", "cpu=%u err=\"%s\"", t->qid,
		  strerror(-err));
	fuse_session_exit(t->r->fs->se);
	pthread_kill(t->r->main_thread, SIGTERM);
}

static int ring_thr_setup(struct ring_thr *t)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	struct io_uring_sqe *sqe;
	int rc = io_uring_queue_init_params(4, &t->uring, &p);

	if (rc < 0)
		return rc;
	ring_prep(t, KABI_FUSE_IO_URING_CMD_REGISTER);
	sqe = io_uring_get_sqe(&t->uring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, t->evfd, POLLIN);
	sqe->user_data = RING_TAG_STOP;
	return 0;
}

/*
 * Polling. On an idle machine the cost of a round trip is not our work
 * but the wake-up of an idle CPU: the reply wakes the caller while the
 * ring thread still runs on the caller's CPU, so the scheduler moves the
 * caller to the other CPU if that one is idle, and waking an idle
 * virtual CPU costs more than the whole request (docs/benchmarks.md,
 * "Round trips: polling"). So after a reply the thread does not sleep at
 * once: it polls its completion queue, yielding between looks, while the
 * mount keeps getting requests (its last one, on any CPU, less than the
 * window ago). A CPU whose thread polls is never idle, so the caller
 * stays where it is, and the next request finds its thread awake.
 *
 * Not the kernel's polling: IORING_SETUP_SQPOLL adds a kernel thread per
 * ring (or one shared by all, serving every CPU's ring from one CPU,
 * which undoes the rings' point) that spins for milliseconds after each
 * submission; a wait with a timeout (io_uring_wait_cqe_timeout) sleeps,
 * so its CPU goes idle all the same; IOPOLL and NAPI busy polling are for
 * block devices and sockets, not for the uring_cmd of /dev/fuse.
 *
 * The window adapts (fs/pollwin.h): it grows to twice a gap between
 * two requests that fitted in fuse.uring_poll_us (the next gap of a busy
 * caller is likely alike) and halves, down to POLLWIN_MIN_NS, with each
 * gap longer than that: a mount that gets a request now and then would
 * otherwise burn a window of each CPU per request, and still wake a CPU
 * for the next one.
 *
 * Bounds. One poller per CPU (the thread that replied last there: the
 * kernel hands the next request to the entry committed last) and at most
 * RING_POLL_CPUS at a time, since on a larger machine the caller finds
 * an idle CPU anyway. Polling ends one window after the mount's last
 * request, so an idle mount costs nothing.
 *
 * Back-off. Polling is for CPUs that would otherwise be idle. On a CPU
 * with other work it only costs: a thread that yields to that work has
 * its turn moved back at each yield and queues behind it when its request
 * comes, where a sleeping one is woken with a fresh turn. The sign of
 * other work is a yield that gave the CPU away for more than
 * RING_POLL_AWAY_NS, a CPU-bound neighbour's slice, while the thread
 * waited for it: its run delay (/proc/thread-self/schedstat, read at most
 * once per RING_POLL_SAMPLE_NS while polling) grew by half of that time,
 * or no reading from just before can tell. Time away alone would not do:
 * in a guest it also counts the host's preemption of the vCPU and
 * interrupts, which leave the CPU idle for the guest's scheduler, and a
 * 30 us rule on it kept polling off on idle CPUs (docs/benchmarks.md,
 * "Round trips: polling"). Nor does a share of run delay over a longer
 * poll: on the caller's own CPU that is the caller running, and a CPU
 * that stops polling there is idle the moment the caller moves. The sign
 * stops polling on that CPU for RING_POLL_BACKOFF_MIN_NS, doubled, up to
 * RING_POLL_BACKOFF_MAX_NS, each time it shows again within
 * RING_POLL_RESET_NS of the last time off: a loaded CPU ends up paying
 * one poll's yield a second. And no thread polls while the machine has
 * as many runnable tasks as CPUs besides the pollers (the caller
 * included), read from /proc/loadavg at most once per RING_POLL_LOAD_NS:
 * then no CPU is idle to keep awake, and a copy's short gaps between
 * requests hid the yields from the sign above (cp of 4,000 files under
 * stress-ng took a third longer with polling).
 */
#define RING_POLL_CPUS 2
#define RING_POLL_AWAY_NS (500 * 1000ull)
#define RING_POLL_SAMPLE_NS (1000 * 1000ull)
#define RING_POLL_BACKOFF_MIN_NS (10 * 1000 * 1000ull)
#define RING_POLL_BACKOFF_MAX_NS (1000 * 1000 * 1000ull)
#define RING_POLL_RESET_NS (1000 * 1000 * 1000ull)
#define RING_POLL_LOAD_NS (2 * 1000 * 1000ull)

/* The calling thread's run delay so far (ns), or UINT64_MAX if unknown. */
static uint64_t ring_run_delay(struct ring_thr *t)
{
	char buf[96];
	unsigned long long run, delay;
	ssize_t n;

	if (t->ss_fd < 0)
		return UINT64_MAX;
	n = pread(t->ss_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &delay) != 2)
		return UINT64_MAX;
	return (uint64_t)delay;
}

/* Within a poll: a sign of other work on this CPU (see "Back-off")?
 * LAST is when the thread last had the CPU before NOW. The run delay is
 * read after a long time away and at most once per RING_POLL_SAMPLE_NS
 * otherwise, so a short poll soon after the last reading costs none. */
static bool ring_poll_busy(struct ring_thr *t, uint64_t last, uint64_t now)
{
	uint64_t away = now - last, d;
	bool known, busy;

	if (away <= RING_POLL_AWAY_NS && now - t->ss_ns < RING_POLL_SAMPLE_NS)
		return false;
	d = ring_run_delay(t);
	/* a reading from just before this stretch to compare with */
	known = t->ss_ns && d != UINT64_MAX && t->ss_delay != UINT64_MAX &&
		now - t->ss_ns < away + 2 * RING_POLL_SAMPLE_NS;
	busy = away > RING_POLL_AWAY_NS && (!known || d - t->ss_delay > away / 2);
	t->ss_ns = now;
	t->ss_delay = d;
	return busy;
}

/* Stops polling on C from NOW on (see "Back-off"). */
static void ring_poll_back_off(struct ring_thr *t, struct ring_cpu *c, uint64_t now)
{
	uint64_t until = __atomic_load_n(&c->quiet_until_ns, __ATOMIC_RELAXED);
	uint64_t off = __atomic_load_n(&c->backoff_ns, __ATOMIC_RELAXED);

	if (until && now - until < RING_POLL_RESET_NS)
		off = 2 * off < RING_POLL_BACKOFF_MAX_NS ? 2 * off : RING_POLL_BACKOFF_MAX_NS;
	else
		off = RING_POLL_BACKOFF_MIN_NS;
	__atomic_store_n(&c->backoff_ns, off, __ATOMIC_RELAXED);
	__atomic_store_n(&c->quiet_until_ns, now + off, __ATOMIC_RELAXED);
	t->poll_backoffs++;
}

/* Is the machine loaded (see "Back-off")? Reads the runnable count of
 * /proc/loadavg at most once per RING_POLL_LOAD_NS, for all threads. */
static bool ring_loaded(struct ring *r, uint64_t now)
{
	char buf[128];
	unsigned long running = 0;
	ssize_t n;
	bool loaded;

	if (r->loadavg_fd < 0)
		return false;
	if (now - __atomic_load_n(&r->load_ns, __ATOMIC_RELAXED) < RING_POLL_LOAD_NS)
		return __atomic_load_n(&r->loaded, __ATOMIC_RELAXED);
	__atomic_store_n(&r->load_ns, now, __ATOMIC_RELAXED);
	n = pread(r->loadavg_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "0.52 0.58 0.59 3/234 12345": runnable now / all threads */
	if (sscanf(buf, "%*s %*s %*s %lu/", &running) != 1)
		return false;
	/* Others: runnable now, less this thread and those polling. As
	 * many as there are CPUs, and none is idle to keep awake. */
	loaded = running >= 1 + __atomic_load_n(&r->polling, __ATOMIC_RELAXED) +
			    r->ncpu_online;
	__atomic_store_n(&r->loaded, loaded, __ATOMIC_RELAXED);
	return loaded;
}

/* After a reply: submits it and polls as above. Returns true if a
 * completion is ready; false if the caller should sleep for one. */
static bool ring_poll(struct ring_thr *t)
{
	struct ring *r = t->r;
	struct ring_cpu *c = &r->cpu[t->qid];
	unsigned int self = (unsigned int)(t - r->thr);
	struct io_uring_cqe *cqe;
	uint64_t now, last;
	bool hit = false;

	if (!t->poll || r->poll_ns == 0)
		return false;
	t->poll = false;
	last = clock_mono_ns();
	if (last < __atomic_load_n(&c->quiet_until_ns, __ATOMIC_RELAXED))
		return false;
	if (ring_loaded(r, last)) {
		t->poll_loaded++;
		return false;
	}
	if (__atomic_fetch_add(&r->polling, 1, __ATOMIC_RELAXED) >= RING_POLL_CPUS)
		goto out;
	if (io_uring_submit(&t->uring) < 0)
		goto out;
	for (;;) {
		hit = io_uring_peek_cqe(&t->uring, &cqe) == 0;
		now = clock_mono_ns();
		if (ring_poll_busy(t, last, now)) {
			ring_poll_back_off(t, c, now);
			break;
		}
		if (hit ||
		    now - __atomic_load_n(&r->last_req_ns, __ATOMIC_RELAXED) >
		    __atomic_load_n(&r->win_ns, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&c->poller, __ATOMIC_RELAXED) != self)
			break;
		last = now;
		/* The caller the reply woke runs now if it is queued here; on
		 * return the kernel runs the task work that puts a new request
		 * into our completion queue. */
		sched_yield();
	}
	if (hit)
		t->poll_hits++;
	else
		t->poll_misses++;
out:
	__atomic_fetch_sub(&r->polling, 1, __ATOMIC_RELAXED);
	return hit;
}

static void *ring_thread(void *arg)
{
	struct ring_thr *t = arg;
	struct io_uring_cqe *cqe;
	cpu_set_t cpus;
	uint64_t tag;
	int rc, res;

	pthread_setname_np(pthread_self(), "tw-ring");
	CPU_ZERO(&cpus);
	CPU_SET(t->qid, &cpus);
	/* An offline CPU's queue is still served, from anywhere. */
	sched_setaffinity(0, sizeof(cpus), &cpus);
	ring_self = t;
	t->ss_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	rc = ring_thr_setup(t);
	if (rc < 0) {
		ring_fatal(t, rc);
		if (t->ss_fd >= 0)
			close(t->ss_fd);
		return NULL;
	}
	for (;;) {
		rc = ring_poll(t) ? 0 : io_uring_submit_and_wait(&t->uring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
			break;
		while (io_uring_peek_cqe(&t->uring, &cqe) == 0) {
			tag = cqe->user_data;
			res = cqe->res;
			io_uring_cqe_seen(&t->uring, cqe);
			if (tag == RING_TAG_STOP)
				goto out;
			if (res == -EINTR || res == -EAGAIN) {
				/* EAGAIN: the connection is not initialised
				 * yet; ask again a little later. */
				if (res == -EAGAIN)
					usleep(1000);
				ring_prep(t, t->last_op);
				continue;
			}
			if (res < 0) {
				rc = res;
				goto out;
			}
			ring_handle(t);
		}
	}
out:
	/* ENOTCONN, ECONNABORTED, ENODEV: the mount went away. */
	if (rc < 0 && rc != -ENOTCONN && rc != -ECONNABORTED && rc != -ENODEV)
		ring_fatal(t, rc);
	io_uring_queue_exit(&t->uring);
	if (t->ss_fd >= 0)
		close(t->ss_fd);
	return NULL;
}

static void ring_free(struct ring *r)
{
	unsigned int i;

	for (i = 0; i < r->nthr; i++) {
		struct ring_thr *t = &r->thr[i];

		if (t->evfd >= 0)
			close(t->evfd);
		free(t->hdr);
		free(t->buf);
	}
	if (r->loadavg_fd >= 0)
		close(r->loadavg_fd);
	free(r->thr);
	free(r->cpu);
	free(r);
}

int ring_start(struct fs *fs, uint32_t max_write, uint32_t max_pages)
{
	unsigned int ncpu = ring_possible_cpus(), i;
	size_t cap = max_write;
	struct ring *r;
	int rc = 0;

	if ((size_t)max_pages * 4096 > cap)
		cap = (size_t)max_pages * 4096;
	if (cap < 8192)
		cap = 8192;	/* FUSE_MIN_READ_BUFFER */
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fs = fs;
	r->devfd = fuse_session_fd(fs->se);
	r->payload_cap = cap;
	r->main_thread = fs->main_thread;
	r->nthr = ncpu * RING_SLOTS;
	r->poll_ns = (uint64_t)fs->ring_poll_us * 1000;
	r->win_ns = r->poll_ns;
	r->ncpu_online = (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);
	r->thr = calloc(r->nthr, sizeof(*r->thr));
	r->cpu = calloc(ncpu, sizeof(*r->cpu));
	if (!r->thr || !r->cpu) {
		free(r->thr);
		free(r->cpu);
		free(r);
		return -ENOMEM;
	}
	r->loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < r->nthr; i++)
		r->thr[i].evfd = -1;
	for (i = 0; i < r->nthr && rc == 0; i++) {
		struct ring_thr *t = &r->thr[i];

		t->r = r;
		t->qid = (uint16_t)(i / RING_SLOTS);
		t->evfd = eventfd(0, EFD_CLOEXEC);
		t->hdr = aligned_alloc(4096, 4096);
		/* page-aligned payload: O_DIRECT reads go straight into it */
		t->buf = aligned_alloc(4096, RING_PAD + ((cap + 4095) & ~(size_t)4095));
		if (t->evfd < 0 || !t->hdr || !t->buf) {
			rc = t->evfd < 0 ? -errno : -ENOMEM;
			break;
		}
		memset(t->hdr, 0, 4096);
		t->iov[0].iov_base = t->hdr;
		t->iov[0].iov_len = sizeof(*t->hdr);
		t->iov[1].iov_base = t->buf + RING_PAD;
		t->iov[1].iov_len = cap;
	}
	for (i = 0; i < r->nthr && rc == 0; i++) {
		rc = -pthread_create(&r->thr[i].tid, NULL, ring_thread, &r->thr[i]);
		r->thr[i].started = rc == 0;
	}
	fs->ring = r;
	if (rc < 0) {
		log_warn("could not start the FUSE rings; requests stay on "
			 "/dev/fuse", "err=\"%s\"", strerror(-rc));
		ring_stop(fs);
		return rc;
	}
	log_notice("FUSE over io_uring: requests are served on the caller's "
		 "CPU", "cpus=%u threads_per_cpu=%d buffer=%zu poll_us=%u", ncpu,
		 RING_SLOTS, cap, fs->ring_poll_us);
	return 0;
}

void ring_stop(struct fs *fs)
{
	struct ring *r = fs->ring;
	uint64_t one = 1, served = 0, hits = 0, misses = 0, backoffs = 0, loaded = 0;
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < r->nthr; i++) {
		if (!r->thr[i].started)
			continue;
		if (write(r->thr[i].evfd, &one, sizeof(one)) != sizeof(one))
			log_warn("cannot wake a ring thread", "err=\"%s\"",
				 strerror(errno));
		pthread_join(r->thr[i].tid, NULL);
		served += r->thr[i].served;
		hits += r->thr[i].poll_hits;
		misses += r->thr[i].poll_misses;
		backoffs += r->thr[i].poll_backoffs;
		loaded += r->thr[i].poll_loaded;
	}
	log_info("FUSE rings stopped", "requests=%llu poll_hits=%llu "
		 "poll_misses=%llu poll_backoffs=%llu poll_loaded=%llu",
		 (unsigned long long)served, (unsigned long long)hits,
		 (unsigned long long)misses, (unsigned long long)backoffs,
		 (unsigned long long)loaded);
	fs->ring = NULL;
	ring_free(r);
}
