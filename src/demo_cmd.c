/*
 * demo_cmd — `twinfs demo`: runs a replicated pair on this machine and
 * shows it working: a `serve` peer and a `mount --peer` on 127.0.0.1 (this
 * very binary, /proc/self/exe), a generated tree copied into the mount,
 * live lag while it catches up, `twinfs sync`, and a content digest of
 * both sides. Owns a temporary folder and the processes it starts, and
 * removes both even on failure or Ctrl-C. Main thread only.
 */
#include "src/demo_cmd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/size.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "src/treedigest.h"

#define DEMO_BLOCK (1u << 20)
#define DEMO_READY_S 20
#define DEMO_STOP_S 30

static volatile sig_atomic_t demo_interrupted;

struct demo {
	char self[4096];
	char root[4096];	/* the temporary folder */
	char src[4200], mnt[4200];
	char a_store[4200], a_state[4200], b_store[4200], b_state[4200];
	char a_log[4200], b_log[4200];
	char peer[64];
	uint64_t large;
	unsigned small_count;
	bool keep;
	pid_t serve_pid, mount_pid;
	bool mounted;
	uint64_t src_bytes, src_files;
	_Atomic uint64_t *copied;	/* shared with the copying child */
};

static void demo_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs demo [--dir DIR] [--large SIZE] [--small-count N] [--keep]\n"
		"Runs a replicated pair on this machine and shows it working: starts\n"
		"'twinfs serve' and 'twinfs mount --peer' on 127.0.0.1, copies a\n"
		"generated tree (one large file and many small files) into the mount,\n"
		"shows the lag while the peer catches up, runs 'twinfs sync', and\n"
		"compares both stores by content hash. Cleans up even on Ctrl-C.\n\n"
		"  --dir DIR          where to make the temporary folder\n"
		"                     (default: $TMPDIR or /var/tmp)\n"
		"  --large SIZE       size of the large file (default 256M)\n"
		"  --small-count N    number of small files, in 20 folders (default 2000)\n"
		"  --keep             keep the temporary folder (stores, logs)\n"
		"  -h, --help         show this help\n\n"
		"Needs root (FUSE mount). Exit: 0 only if both trees are equal.\n");
}

static void demo_on_signal(int sig)
{
	demo_interrupted = sig;
}

static void demo_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- processes ---- */

/* Starts argv with stdout+stderr appended to LOG, in its own process
 * group (so Ctrl-C reaches only us and we stop it in order). */
static pid_t demo_spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	if (log) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
	}
	execv(argv[0], argv);
	_exit(127);
}

/* Waits up to timeout_s for PID; returns its wait status or -1. */
static int demo_wait(pid_t pid, double timeout_s)
{
	double end = clock_mono_s() + timeout_s;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -1;
		if (clock_mono_s() >= end)
			return -1;
		demo_sleep_ms(50);
	}
}

static void demo_stop_pid(pid_t *pid, const char *what)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	if (demo_wait(*pid, DEMO_STOP_S) < 0) {
		fprintf(stderr, "demo: %s (pid %d) did not stop; killing it\n", what,
			(int)*pid);
		kill(*pid, SIGKILL);
		demo_wait(*pid, 5);
	}
	*pid = 0;
}

static bool demo_is_mounted(const char *mp)
{
	char line[8192], dev[4096], dir[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%4095s %4095s", dev, dir) == 2 && !strcmp(dir, mp))
			found = true;
	fclose(f);
	return found;
}

static bool demo_ping(const char *state)
{
	char *reply = NULL;
	int rc = control_call(state, "ping", 1000, &reply);

	free(reply);
	return rc == 0;
}

static int demo_rm_cb(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void demo_tail(const char *log)
{
	char cmd[4400];

	fprintf(stderr, "---- last lines of %s ----\n", log);
	snprintf(cmd, sizeof(cmd), "tail -n 15 '%s' >&2", log);
	if (system(cmd) != 0)
		fprintf(stderr, "(cannot show it)\n");
}

static void demo_cleanup(struct demo *d)
{
	char *argv[] = { "fusermount3", "-u", d->mnt, NULL };
	pid_t pid;

	if (d->mount_pid > 0 || demo_is_mounted(d->mnt)) {
		if (demo_is_mounted(d->mnt)) {
			pid = fork();
			if (pid == 0) {
				execvp(argv[0], argv);
				_exit(127);
			}
			if (pid > 0)
				demo_wait(pid, 10);
		}
		if (d->mount_pid > 0 && demo_wait(d->mount_pid, DEMO_STOP_S) >= 0)
			d->mount_pid = 0;
		demo_stop_pid(&d->mount_pid, "the mount");
		if (demo_is_mounted(d->mnt))
			umount2(d->mnt, MNT_DETACH);
	}
	demo_stop_pid(&d->serve_pid, "serve");
	if (d->root[0] && !d->keep)
		nftw(d->root, demo_rm_cb, 32, FTW_DEPTH | FTW_PHYS);
	else if (d->root[0])
		printf("kept %s (stores, state, logs)\n", d->root);
}

/* ---- data ---- */

static uint64_t demo_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int demo_write_file(const char *path, uint64_t size, uint64_t *seed,
			   char *buf, mode_t mode)
{
	uint64_t left = size;
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (left > 0 && !demo_interrupted) {
		size_t n = left < DEMO_BLOCK ? (size_t)left : DEMO_BLOCK;

		for (size_t i = 0; i + 8 <= n; i += 8) {
			uint64_t v = demo_rand(seed);

			memcpy(buf + i, &v, 8);
		}
		if (write(fd, buf, n) != (ssize_t)n) {
			rc = errno ? -errno : -EIO;
			break;
		}
		left -= n;
	}
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* One large file and small_count files in 20 folders, sizes skewed small
 * (like a system folder), plus a symlink and a private file per folder. */
static int demo_generate(struct demo *d)
{
	char path[4400], target[64];
	uint64_t seed = 0x9e3779b97f4a7c15ull, size;
	char *buf = malloc(DEMO_BLOCK);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	if (mkdir(d->src, 0755) < 0) {
		rc = -errno;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/large.bin", d->src);
	rc = demo_write_file(path, d->large, &seed, buf, 0644);
	d->src_bytes += d->large;
	d->src_files++;
	for (unsigned f = 0; f < 20 && rc == 0; f++) {
		snprintf(path, sizeof(path), "%s/folder%02u", d->src, f);
		if (mkdir(path, f % 5 == 0 ? 0700 : 0755) < 0) {
			rc = -errno;
			break;
		}
		snprintf(path, sizeof(path), "%s/folder%02u/latest", d->src, f);
		snprintf(target, sizeof(target), "file%05u.dat", f);
		if (symlink(target, path) < 0) {
			rc = -errno;
			break;
		}
	}
	for (unsigned i = 0; i < d->small_count && rc == 0 && !demo_interrupted; i++) {
		uint64_t r = demo_rand(&seed);

		switch (r % 20) {
		case 0: size = r % (1u << 20); break;		/* 5% up to 1 MiB */
		case 1: case 2: case 3: size = r % (256u << 10); break;
		case 4: case 5: case 6: case 7: case 8: case 9: size = r % (32u << 10); break;
		default: size = r % (4u << 10); break;		/* half under 4 KiB */
		}
		snprintf(path, sizeof(path), "%s/folder%02u/file%05u.dat", d->src, i % 20, i);
		rc = demo_write_file(path, size, &seed, buf, i % 7 == 0 ? 0600 : 0644);
		d->src_bytes += size;
		d->src_files++;
	}
out:
	free(buf);
	return demo_interrupted ? -EINTR : rc;
}

static int demo_copy_tree(struct demo *d, const char *from, const char *to, char *buf)
{
	char sf[4400], df[4400], target[4096];
	struct timespec ts[2];
	struct dirent *de;
	struct stat st;
	ssize_t n;
	DIR *dir;
	int rc = 0, in, out;

	if (stat(from, &st) < 0)
		return -errno;
	if (mkdir(to, st.st_mode & 07777) < 0 && errno != EEXIST)
		return -errno;
	dir = opendir(from);
	if (!dir)
		return -errno;
	while (rc == 0 && (de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sf, sizeof(sf), "%s/%s", from, de->d_name);
		snprintf(df, sizeof(df), "%s/%s", to, de->d_name);
		if (lstat(sf, &st) < 0) {
			rc = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = demo_copy_tree(d, sf, df, buf);
		} else if (S_ISLNK(st.st_mode)) {
			n = readlink(sf, target, sizeof(target) - 1);
			if (n < 0 || (target[n] = '\0', symlink(target, df) < 0))
				rc = -errno;
		} else if (S_ISREG(st.st_mode)) {
			in = open(sf, O_RDONLY | O_CLOEXEC);
			if (in < 0) {
				rc = -errno;
				break;
			}
			out = open(df, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				   st.st_mode & 07777);
			if (out < 0) {
				rc = -errno;
				close(in);
				break;
			}
			while ((n = read(in, buf, DEMO_BLOCK)) > 0) {
				if (write(out, buf, (size_t)n) != n) {
					rc = errno ? -errno : -EIO;
					break;
				}
				atomic_fetch_add(d->copied, (uint64_t)n);
			}
			if (n < 0)
				rc = -errno;
			ts[0] = st.st_atim;
			ts[1] = st.st_mtim;
			if (rc == 0 && (fchmod(out, st.st_mode & 07777) < 0 ||
					futimens(out, ts) < 0))
				rc = -errno;
			if (close(out) < 0 && rc == 0)
				rc = -errno;
			close(in);
		}
	}
	closedir(dir);
	return rc;
}

/* ---- status lines ---- */

static void demo_status_line(struct demo *d, double t0, const char *phase)
{
	char *reply = NULL, a[32], b[32], c[32];
	uint64_t lag_ops = 0, lag_bytes = 0, rate = 0;
	bool connected = false, degraded = false;

	if (control_call(d->a_state, "status", 2000, &reply) < 0) {
		printf("%6.1fs  %-8s (mount not answering)\n", clock_mono_s() - t0, phase);
		return;
	}
	ctljson_get_u64(reply, "lag_ops", &lag_ops);
	ctljson_get_u64(reply, "lag_bytes", &lag_bytes);
	ctljson_get_u64(reply, "send_rate", &rate);
	ctljson_get_bool(reply, "connected", &connected);
	ctljson_get_bool(reply, "degraded", &degraded);
	free(reply);
	printf("%6.1fs  %-8s copied %10s   lag %6" PRIu64 " ops %10s   sending %10s/s  %s\n",
	       clock_mono_s() - t0, phase,
	       size_format_iec(atomic_load(d->copied), a, sizeof(a)), lag_ops,
	       size_format_iec(lag_bytes, b, sizeof(b)),
	       size_format_iec(rate, c, sizeof(c)),
	       connected ? "connected" : "NOT CONNECTED");
	fflush(stdout);
}

/* Runs CHILD to completion, printing a status line per second. Returns its
 * wait status, or -EINTR on Ctrl-C (the child is killed). */
static int demo_watch(struct demo *d, pid_t child, double t0, const char *phase)
{
	double next = clock_mono_s() + 1;
	int st;

	for (;;) {
		pid_t r = waitpid(child, &st, WNOHANG);

		if (r == child)
			return st;
		if (demo_interrupted) {
			kill(child, SIGKILL);
			waitpid(child, &st, 0);
			return -EINTR;
		}
		if (clock_mono_s() >= next) {
			demo_status_line(d, t0, phase);
			next += 1;
		}
		demo_sleep_ms(20);
	}
}

/* ---- setup ---- */

static int demo_free_port(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		rc = -errno;
	*port = ntohs(sa.sin_port);
	close(fd);
	return rc;
}

static int demo_mkdirs(struct demo *d)
{
	const char *dirs[] = { d->mnt, d->a_store, d->a_state, d->b_store, d->b_state };
	char parent[4200];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(parent, sizeof(parent), "%s", dirs[i]);
		*strrchr(parent, '/') = '\0';
		if ((mkdir(parent, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(dirs[i], 0700) < 0 && errno != EEXIST))
			return -errno;
	}
	chmod(d->mnt, 0755);
	return 0;
}

static int demo_start(struct demo *d)
{
	char *serve[] = { d->self, "serve", "--store", d->b_store, "--state", d->b_state,
			  "--listen", d->peer, "-f", NULL };
	char *mount[] = { d->self, "mount", "--store", d->a_store, "--state", d->a_state,
			  "--mountpoint", d->mnt, "--peer", d->peer, "-f", NULL };
	double end;

	d->serve_pid = demo_spawn(serve, d->b_log);
	if (d->serve_pid < 0)
		return -errno;
	for (end = clock_mono_s() + DEMO_READY_S; !demo_ping(d->b_state); demo_sleep_ms(50)) {
		if (clock_mono_s() > end || demo_wait(d->serve_pid, 0) >= 0 ||
		    demo_interrupted) {
			fprintf(stderr, "demo: 'twinfs serve' did not start\n");
			demo_tail(d->b_log);
			return -ETIMEDOUT;
		}
	}
	d->mount_pid = demo_spawn(mount, d->a_log);
	if (d->mount_pid < 0)
		return -errno;
	for (end = clock_mono_s() + DEMO_READY_S;
	     !demo_ping(d->a_state) || !demo_is_mounted(d->mnt); demo_sleep_ms(50)) {
		if (clock_mono_s() > end || demo_wait(d->mount_pid, 0) >= 0 ||
		    demo_interrupted) {
			fprintf(stderr, "demo: 'twinfs mount' did not start\n");
			demo_tail(d->a_log);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

static int demo_parse(struct demo *d, int argc, char **argv, const char **dir)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "large", required_argument, NULL, 'l' },
		{ "small-count", required_argument, NULL, 'n' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': *dir = optarg; break;
		case 'l':
			if (size_parse(optarg, &d->large) < 0)
				return cli_usage_error("demo", "--large wants a size such as "
						       "256M or 1G, got '%s'", optarg);
			break;
		case 'n':
			n = strtol(optarg, &end, 10);
			if (*end || n < 0 || n > 10000000)
				return cli_usage_error("demo", "--small-count wants a number "
						       "0..10000000, got '%s'", optarg);
			d->small_count = (unsigned)n;
			break;
		case 'k': d->keep = true; break;
		case 'h': demo_usage(stdout); return -1;
		default: return cli_usage_error("demo", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("demo", "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* ---- main ---- */

static int demo_run(struct demo *d)
{
	char a[32], b[32];
	struct tree_digest dm, dp;
	char data_m[4400], data_p[4400], *sync_argv[] = { d->self, "sync", "--state",
							   d->a_state, NULL };
	double t0, t_copy, t_safe;
	int st, rc;
	pid_t pid;
	char *buf;

	printf("twinfs demo: a replicated pair in %s\n", d->root);
	printf("  peer:   twinfs serve --store %s --listen %s\n", d->b_store, d->peer);
	printf("  mount:  twinfs mount --store %s --mountpoint %s --peer %s\n",
	       d->a_store, d->mnt, d->peer);
	rc = demo_start(d);
	if (rc < 0)
		return rc;
	printf("both running (logs: %s, %s)\n", d->a_log, d->b_log);

	printf("generating %s large file + %u small files in 20 folders ...\n",
	       size_format_iec(d->large, a, sizeof(a)), d->small_count);
	rc = demo_generate(d);
	if (rc < 0) {
		fprintf(stderr, "demo: cannot generate the data in %s: %s\n", d->src,
			strerror(-rc));
		return rc;
	}
	printf("copying %s in %" PRIu64 " files into the mount ...\n",
	       size_format_iec(d->src_bytes, a, sizeof(a)), d->src_files);
	snprintf(data_m, sizeof(data_m), "%s/data", d->mnt);
	snprintf(data_p, sizeof(data_p), "%s/data", d->b_store);
	t0 = clock_mono_s();
	pid = fork();
	if (pid == 0) {
		buf = malloc(DEMO_BLOCK);
		signal(SIGINT, SIG_DFL);
		rc = buf ? demo_copy_tree(d, d->src, data_m, buf) : -ENOMEM;
		if (rc < 0)
			fprintf(stderr, "demo: copying into the mount failed: %s\n",
				strerror(-rc));
		_exit(rc < 0 ? 1 : 0);
	}
	if (pid < 0)
		return -errno;
	st = demo_watch(d, pid, t0, "copy");
	if (st < 0)
		return st;
	t_copy = clock_mono_s() - t0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -EIO;
	printf("%6.1fs  copy done; waiting until the peer holds everything (twinfs sync)\n",
	       t_copy);
	pid = demo_spawn(sync_argv, NULL);
	if (pid < 0)
		return -errno;
	st = demo_watch(d, pid, t0, "sync");
	if (st < 0)
		return st;
	t_safe = clock_mono_s() - t0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "demo: twinfs sync failed (exit %d)\n",
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -EIO;
	}
	demo_status_line(d, t0, "synced");

	printf("\nverifying: XXH3 of every file, modes and symlinks on both sides ...\n");
	rc = tree_digest(data_m, &dm);
	if (rc == 0)
		rc = tree_digest(data_p, &dp);
	if (rc < 0) {
		fprintf(stderr, "demo: cannot hash the trees: %s\n", strerror(-rc));
		return rc;
	}
	printf("  mount tree digest: %s  (%" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64
	       " symlinks, %s)\n", dm.hex, dm.files, dm.dirs, dm.symlinks,
	       size_format_iec(dm.bytes, a, sizeof(a)));
	printf("  peer  tree digest: %s  (%" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64
	       " symlinks, %s)\n", dp.hex, dp.files, dp.dirs, dp.symlinks,
	       size_format_iec(dp.bytes, b, sizeof(b)));
	printf("\ntimings (%s, %" PRIu64 " files):\n",
	       size_format_iec(d->src_bytes, a, sizeof(a)), d->src_files);
	printf("  copy into the mount:        %7.2f s  %8.1f MB/s\n", t_copy,
	       d->src_bytes / 1e6 / (t_copy > 0 ? t_copy : 1e-9));
	printf("  safe on the peer after:     %7.2f s  %8.1f MB/s end to end\n", t_safe,
	       d->src_bytes / 1e6 / (t_safe > 0 ? t_safe : 1e-9));
	if (strcmp(dm.hex, dp.hex) != 0 || dm.bytes != d->src_bytes) {
		printf("\nRESULT: the trees DIFFER\n");
		return -EBADMSG;
	}
	printf("\nRESULT: the peer's store equals the mount\n");
	return 0;
}

int demo_cmd_main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = demo_on_signal };
	struct demo d = { .large = 256ull << 20, .small_count = 2000 };
	const char *dir = getenv("TMPDIR");
	uint16_t port = 0;
	ssize_t n;
	int rc;

	if (!dir || !*dir)
		dir = "/var/tmp";
	rc = demo_parse(&d, argc, argv, &dir);
	if (rc != 0)
		return rc < 0 ? EX_OK : rc;
	if (geteuid() != 0) {
		fprintf(stderr, "twinfs demo: needs root (it mounts a FUSE file system "
			"with allow_other)\n");
		return EX_NOPERM;
	}
	n = readlink("/proc/self/exe", d.self, sizeof(d.self) - 1);
	if (n < 0) {
		fprintf(stderr, "twinfs demo: cannot find my own binary: %s\n",
			strerror(errno));
		return EX_OSERR;
	}
	d.self[n] = '\0';
	d.copied = mmap(NULL, sizeof(*d.copied), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (d.copied == MAP_FAILED) {
		fprintf(stderr, "twinfs demo: out of memory\n");
		return EX_OSERR;
	}
	snprintf(d.root, sizeof(d.root), "%s/twinfs-demo.XXXXXX", dir);
	if (!mkdtemp(d.root)) {
		fprintf(stderr, "twinfs demo: cannot make a temporary folder in %s: %s "
			"(choose another with --dir)\n", dir, strerror(errno));
		d.root[0] = '\0';
		munmap(d.copied, sizeof(*d.copied));
		return EX_CANTCREAT;
	}
	chmod(d.root, 0755);
	snprintf(d.src, sizeof(d.src), "%s/source", d.root);
	snprintf(d.mnt, sizeof(d.mnt), "%s/mnt", d.root);
	snprintf(d.a_store, sizeof(d.a_store), "%s/primary/store", d.root);
	snprintf(d.a_state, sizeof(d.a_state), "%s/primary/state", d.root);
	snprintf(d.b_store, sizeof(d.b_store), "%s/peer/store", d.root);
	snprintf(d.b_state, sizeof(d.b_state), "%s/peer/state", d.root);
	snprintf(d.a_log, sizeof(d.a_log), "%s/primary/mount.log", d.root);
	snprintf(d.b_log, sizeof(d.b_log), "%s/peer/serve.log", d.root);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	rc = demo_mkdirs(&d);
	if (rc == 0)
		rc = demo_free_port(&port);
	if (rc < 0) {
		fprintf(stderr, "twinfs demo: cannot prepare %s: %s\n", d.root, strerror(-rc));
	} else {
		snprintf(d.peer, sizeof(d.peer), "127.0.0.1:%u", port);
		rc = demo_run(&d);
	}
	if (demo_interrupted)
		fprintf(stderr, "\ndemo: interrupted; cleaning up\n");
	else if (rc < 0 && rc != -EBADMSG)
		fprintf(stderr, "demo: failed: %s; cleaning up\n", strerror(-rc));
	if (rc < 0 && rc != -EINTR && !demo_interrupted) {
		demo_tail(d.a_log);
		demo_tail(d.b_log);
	}
	demo_cleanup(&d);
	munmap(d.copied, sizeof(*d.copied));
	if (demo_interrupted)
		return 128 + SIGINT;
	return rc == 0 ? EX_OK : rc == -EBADMSG ? EX_DATAERR : EX_SOFTWARE;
}
