/*
 * mount_cmd — `twinfs mount`: reads the config (file, then flags), checks
 * the paths, detaches once the mount is usable, and runs journal + fs
 * (+ replication) until unmount. Main thread of the mount process; the
 * readiness callback runs in fs's probe thread, peer_begin/end in FUSE
 * workers.
 *
 * Detaching: the parent forks before any thread exists (the journal and
 * libfuse start threads) and waits on a pipe. The child opens the journal,
 * mounts, and fs_run() writes 0 into the pipe once a stat through the
 * mount answered (or -errno if anything failed), so `twinfs mount ...`
 * returning 0 means the next command line can use the mount. Until then
 * the child's errors go to the terminal; afterwards it logs to syslog.
 *
 * Replication (netsync/primary/primary.h): primary_start in
 * mount_on_ready, once the mount is usable and before the parent is told
 * so (the control socket answers as soon as `twinfs mount` returns);
 * primary_peer_begin/end as fs's peer_begin/end in sync mode;
 * primary_stop after fs_run, flushing to the peer for a bounded time.
 * Without --peer the primary still serves the control socket (status,
 * and sync says there is no peer).
 *
 * Offline changes: scan_mount (netsync/delta/scan.h) compares the store
 * with STATE/manifest before fs_run, scan_unmount writes it after.
 */
#include "src/mount_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/dirlock.h"
#include "common/log.h"
#include "common/notify.h"
#include "common/startcheck.h"
#include "conf/conf.h"
#include "fs/fs.h"
#include "journal/journal.h"
#include "netsync/delta/scan.h"
#include "netsync/roles/history.h"
#include "netsync/roles/state.h"
#include "netsync/primary/primary.h"
#include "netsync/primary/sender.h"
#include "netsync/control/metrics.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/tls.h"
#include "src/mountpoint.h"
#include "src/mountstats.h"

struct mount_ctx {
	struct conf c;
	struct journal *journal;
	struct primary *primary;
	bool foreground;
	struct dirlock store_lock;	/* one writer per store */
	struct dirlock state_lock;	/* one daemon per state directory */
	bool nonempty_ok;	/* -o nonempty: mounting over files is meant */
	bool options_flag;	/* the FUSE options came from -o, not the file */
};

/* How long an unmount waits for the peer to ack what is pending. */
#define MOUNT_FLUSH_MS 10000

static void mount_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs mount --store DIR --state DIR --mountpoint DIR\n"
		"                    [--peer HOST:PORT [--mode async|sync] [--insecure]]\n"
		"                    [-f] [-o OPTIONS] [--no-passthrough] [--no-uring]\n"
		"                    [--uring-poll USEC]\n"
		"                    [-v|-q]\n"
		"       twinfs mount --config FILE [OPTIONS]   (flags override the file)\n\n"
		"Mounts the store directory at the mountpoint. Every change is\n"
		"applied to the store and recorded in the journal under the state\n"
		"directory. Without -f the command returns once the mount is usable;\n"
		"`fusermount3 -u MOUNTPOINT` or SIGTERM unmounts it.\n\n"
		"  --store DIR        directory that holds the files (must exist; one\n"
		"                     writer per store: a second mount or serve of it\n"
		"                     is refused)\n"
		"  --state DIR        journal and node state (created if missing;\n"
		"                     must be writable, never inside the store)\n"
		"  --mountpoint DIR   where to mount (an existing, unmounted directory;\n"
		"                     a dead twinfs mount of this store, left by a\n"
		"                     killed daemon, is detached)\n"
		"  --config FILE      read the settings from a YAML file first\n"
		"  --peer HOST:PORT   replicate every change to a 'twinfs serve' peer\n"
		"  --mode async|sync  with a peer: async (default) returns writes at\n"
		"                     local speed; sync makes fsync and close of a\n"
		"                     written file wait until the peer has the data\n"
		"                     (for at most sync.timeout, then degrades to\n"
		"                     async until the peer has caught up)\n"
		"  --psk-file FILE    secure the link with this pre-shared key (TLS 1.3;\n"
		"                     the same file on the peer; 'twinfs keygen --psk');\n"
		"                     pinned keys instead: tls.peer_id in the config\n"
		"  --metrics HOST:PORT serve Prometheus /metrics there (metrics.listen;\n"
		"                     loopback unless --insecure)\n"
		"  --insecure         allow a non-loopback peer without TLS keys\n"
		"                     (traffic is neither encrypted nor authenticated)\n"
		"  -o OPTIONS         extra FUSE mount options (comma list); nonempty:\n"
		"                     mount over files without the warning\n"
		"  --no-passthrough   serve every read and write through twinfs, with\n"
		"                     the kernel's writeback cache (by default, when\n"
		"                     root mounts on kernel 6.9+, the kernel reads\n"
		"                     files and writes new ones in the store itself)\n"
		"  --no-uring         take requests through /dev/fuse only (by default,\n"
		"                     on kernel 6.14+ with FUSE io_uring, requests are\n"
		"                     served on the CPU of the calling program; root\n"
		"                     turns the kernel's fuse.enable_uring on; sync\n"
		"                     mode always uses /dev/fuse)\n"
		"  --uring-poll USEC  while the mount is busy, a ring thread polls\n"
		"                     this long for the next request instead of\n"
		"                     sleeping, so a round trip does not wait for an\n"
		"                     idle CPU to wake up (fuse.uring_poll_us, default\n"
		"                     200; 0: never poll; an idle mount never polls)\n"
		"  -f, --foreground   stay in the foreground, log to stderr\n"
		"  -d, --debug        print every FUSE request (implies -f)\n"
		"  -v, --verbose      log more (repeat for debug)\n"
		"  -q, --quiet        log less\n"
		"  -h, --help         show this help\n\n"
		"'twinfs status --state DIR' shows the replication state, 'twinfs sync\n"
		"--state DIR' waits until the peer holds every change.\n"
		"Exit: 0 mounted, 64 usage, 66 a path is missing, 69 store, state dir\n"
		"or mountpoint in use, 78 configuration refused; twinfs(1) has them all.\n");
}

/* Exit code for settings conf refused: a failed path check is the fault
 * of that path (66 missing, 77 permission...) whether a flag or the file
 * named it; anything else is the file's (78) or the flags' (64). */
static int mount_conf_exit(const struct conf_diag *d, bool from_file)
{
	int err = conf_diag_path_errno(d);

	if (err)
		return cli_exit_code(-err);
	return from_file ? EX_CONFIG : EX_USAGE;
}

/* Does the state directory exist? Creates it if not (0700) and checks we
 * can write in it. *created tells whether it was made now. 0 or -errno. */
static int mount_check_state(const char *state, bool *created)
{
	char probe[PATH_MAX];
	int fd, rc;

	*created = false;
	if (mkdir(state, 0700) == 0)
		*created = true;
	else if (errno != EEXIST) {
		rc = -errno;
		goto out_err;
	}
	snprintf(probe, sizeof(probe), "%s/.twinfs-probe.XXXXXX", state);
	fd = mkstemp(probe);
	if (fd < 0) {
		rc = -errno;
		goto out_err;
	}
	close(fd);
	unlink(probe);
	return 0;
out_err:
	fprintf(stderr, "twinfs mount: cannot use state directory %s: %s\n", state,
		strerror(-rc));
	return rc;
}

/* Replaces *path by its absolute, resolved form. 0 or -errno. */
static int mount_absolute(char **path)
{
	char *abs = realpath(*path, NULL);

	if (!abs) {
		int e = errno;

		fprintf(stderr, "twinfs mount: %s: %s\n", *path, strerror(e));
		return -e;
	}
	free(*path);
	*path = abs;
	return 0;
}

static bool mount_peer_begin(void *arg, uint64_t *ticket)
{
	struct mount_ctx *m = arg;

	return primary_peer_begin(m->primary, ticket);
}

static int mount_peer_end(void *arg, uint64_t ticket)
{
	struct mount_ctx *m = arg;

	return primary_peer_end(m->primary, ticket);
}

static int mount_on_ready(void *arg)
{
	struct mount_ctx *m = arg;
	int rc;

	if (m->journal) {
		mountstats_register();
		rc = primary_start(m->journal, &m->c, m->c.mountpoint, &m->primary);
		if (rc < 0) {
			log_error("cannot start replication", "peer=%s err=\"%s\"",
				  m->c.peer ? m->c.peer : "-", strerror(-rc));
			return rc;
		}
	}
	/* the mount answers stat and replication runs: tell systemd (Type=
	 * notify) from the daemon itself, before the parent returns */
	rc = notify_send("READY=1\nSTATUS=primary: %s mounted at %s, %s%s%s",
			 m->c.store, m->c.mountpoint, m->c.peer ? "peer " : "local only",
			 m->c.peer ? m->c.peer : "",
			 m->c.peer ? (m->c.mode == CONF_MODE_SYNC ? " (sync)" : " (async)") : "");
	if (rc < 0)
		log_warn("cannot tell the service manager we are ready", "err=\"%s\"",
			 strerror(-rc));
	if (!m->foreground) {
		/* The parent has what it needs; from now on we are a daemon. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		char file[PATH_MAX];

		/* syslog, or STATE/twinfs.log where no syslog socket exists */
		snprintf(file, sizeof(file), "%s/twinfs.log", m->c.state);
		log_set_file(file, 0);
		log_setup("twinfs", log_get_level(), LOG_SINK_SYSLOG);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
	}
	return 0;
}

/* Runs the mount in this process; writes readiness to ready_fd (or -1). */
static int mount_serve(struct mount_ctx *m, int ready_fd, bool debug)
{
	struct fs_opts o = {
		.store = m->c.store,
		.mountpoint = m->c.mountpoint,
		.fuse_options = m->c.fuse_options,
		.passthrough = m->c.fuse_passthrough,
		.uring = m->c.fuse_uring,
		.uring_poll_us = m->c.fuse_uring_poll_us,
		.debug = debug,
		.on_ready = mount_on_ready,
		.on_ready_arg = m,
		.ready_fd = ready_fd,
		/* Only sync mode with a peer waits; NULL keeps async and
		 * local-only mounts free of the call. */
		.peer_begin = m->c.peer && m->c.mode == CONF_MODE_SYNC ?
			      mount_peer_begin : NULL,
		.peer_end = mount_peer_end,
		.peer_arg = m,
	};
	struct journal_opts jo = {
		.state_dir = m->c.state,
		.store_dir = m->c.store,
		.size_limit = m->c.journal_size_limit,
		.commit_ms = m->c.journal_commit_ms,
	};
	struct history h;
	int rc;

	/* A promoted node's first journal continues the seqs of the line it
	 * was a copy of (docs/protocol.md, "Generations"). */
	if (history_load(m->c.state, &h) == 0 && history_cur(&h))
		jo.base_seq = history_cur(&h)->start;
	rc = journal_open(&jo, &m->journal);
	if (rc < 0) {
		log_error("cannot open the journal; check the state directory",
			  "state=%s err=\"%s\"", m->c.state, strerror(-rc));
		if (ready_fd >= 0) {
			ssize_t w = write(ready_fd, &rc, sizeof(rc));

			(void)w;
			close(ready_fd);
		}
		return rc;
	}
	/* What changed in the store while it was not mounted goes into the
	 * journal before the first FUSE request (netsync/delta/scan.h); a
	 * failed scan has recorded the whole store, so the mount goes on. */
	(void)scan_mount(m->journal, m->c.store, m->c.state);
	o.journal = m->journal;
	rc = fs_run(&o);
	/* unmounted; flushing to the peer may take up to MOUNT_FLUSH_MS */
	notify_send("STOPPING=1\nSTATUS=primary: unmounted, flushing to the peer");
	primary_stop(m->primary, MOUNT_FLUSH_MS);
	m->primary = NULL;
	mountstats_unregister();
	journal_close(m->journal);
	/* Nothing changes the store through twinfs any more: the next mount
	 * compares the store with this. */
	(void)scan_unmount(m->c.store, m->c.state);
	return rc;
}

/*
 * The refusals, in the order a user fixes them, before anything is
 * created: the peer address (78: refused on its own terms), the store
 * (66), a state directory inside the store (78), a mountpoint inside the
 * store or around it (78), a second writer on the store (69, naming its
 * PID), the mountpoint (a dead mount of this store is detached; anything
 * else mounted there is 69, missing 66), a second daemon on the state
 * directory (69, naming its PID).
 * Then the state directory is created if missing (73, 77 permission), and
 * the paths are made absolute for the daemon, which runs in "/".
 * Returns EX_OK or the exit code, the reason printed as the last line.
 */
/*
 * The FUSE options, checked as libfuse will read them (an unknown one is
 * refused now: 64 from -o, 78 from fuse.options, instead of failing after
 * the journal was made). `nonempty`, which libfuse 3 dropped and fstab
 * lines from FUSE 2 days still carry, is ours: it says mounting over
 * files is meant, so the warning about hiding them is not given.
 */
static int mount_check_fuse_options(struct mount_ctx *m)
{
	char *o = m->c.fuse_options, *w = o, *tok, *save = NULL;

	if (!o || !*o)
		return EX_OK;
	for (tok = strtok_r(o, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "nonempty") == 0) {
			m->nonempty_ok = true;
			continue;
		}
		if (w != o)
			*w++ = ',';
		memmove(w, tok, strlen(tok));
		w += strlen(tok);
	}
	*w = '\0';
	if (fs_check_options(o) == 0)
		return EX_OK;
	fprintf(stderr, "twinfs mount: refusing FUSE options '%s': libfuse does not know "
		"the one named above (see mount.fuse3(8))\n", o);
	return m->options_flag ? EX_USAGE : EX_CONFIG;
}

static int mount_preflight(struct mount_ctx *m)
{
	bool created;
	int rc;

	if (m->c.peer && m->c.peer[0]) {
		struct tls_ctx *tls = NULL;
		struct tls_opts to;
		char why[512];

		/* the keys are loaded once here only to refuse bad ones before
		 * anything is created; the replication thread loads its own */
		rc = tls_opts_init(&to, m->c.state, m->c.psk_file, m->c.tls_cert, m->c.tls_key,
				   m->c.tls_peer_id, m->c.tls_peer_cert, why, sizeof(why));
		if (rc == 0 && tls_opts_enabled(&to))
			rc = tls_ctx_new(&to, false, &tls, why, sizeof(why));
		tls_ctx_free(tls);
		if (rc < 0) {
			fprintf(stderr, "twinfs mount: cannot secure the link: %s\n", why);
			return EX_CONFIG;
		}
		rc = addr_check_peer(m->c.peer, m->c.insecure || tls_opts_enabled(&to), why,
				       sizeof(why));
		if (rc < 0) {
			fprintf(stderr, "twinfs mount: refusing to replicate: %s\n", why);
			return rc == -EPERM ? EX_CONFIG : EX_USAGE;
		}
	}
	if (m->c.metrics_listen) {
		char why[300];

		rc = metrics_check(m->c.metrics_listen, m->c.insecure, why, sizeof(why));
		if (rc < 0) {
			fprintf(stderr, "twinfs mount: refusing: %s\n", why);
			return EX_CONFIG;
		}
	}
	if (mount_absolute(&m->c.store) < 0)
		return EX_NOINPUT;
	if (startcheck_state_outside("mount", m->c.store, m->c.state) < 0)
		return EX_CONFIG;
	rc = startcheck_state_safe("mount", m->c.state);
	if (rc < 0)
		return rc == -EPERM ? EX_CONFIG : cli_exit_code(rc);
	if (startcheck_inside(m->c.store, m->c.mountpoint) ||
	    startcheck_inside(m->c.mountpoint, m->c.store)) {
		fprintf(stderr, "twinfs mount: refusing mountpoint %s: it and the store %s "
			"contain one another, and the mount would serve itself\n",
			m->c.mountpoint, m->c.store);
		return EX_CONFIG;
	}
	rc = startcheck_lock("mount", "store", m->c.store, &m->store_lock);
	if (rc < 0)
		return cli_exit_code(rc);
	rc = mount_check_fuse_options(m);
	if (rc != EX_OK)
		return rc;
	rc = mountpoint_prepare(m->c.mountpoint, m->c.store, m->nonempty_ok);
	if (rc < 0)
		return cli_exit_code(rc);
	if (mount_absolute(&m->c.mountpoint) < 0)
		return EX_NOINPUT;
	if (access(m->c.state, F_OK) == 0) {
		rc = startcheck_lock("mount", "state directory", m->c.state, &m->state_lock);
		if (rc < 0)
			return cli_exit_code(rc);
		/* a secondary's copy is mounted only once promoted */
		rc = history_check_role("mount", m->c.state, HISTORY_PRIMARY);
		if (rc < 0)
			return rc == -EPERM ? EX_CONFIG : cli_exit_code(rc);
	}
	if (m->c.metrics_listen) {
		char why[300];

		rc = metrics_check_port(m->c.metrics_listen, why, sizeof(why));
		if (rc < 0) {
			fprintf(stderr, "twinfs mount: %s\n", why);
			return cli_exit_code(rc);
		}
	}
	rc = mount_check_state(m->c.state, &created);
	if (rc < 0)
		return rc == -EACCES || rc == -EPERM ? EX_NOPERM : EX_CANTCREAT;
	if (created) {
		rc = startcheck_lock("mount", "state directory", m->c.state, &m->state_lock);
		if (rc < 0)
			return cli_exit_code(rc);
	}
	if (mount_absolute(&m->c.state) < 0)
		return EX_CANTCREAT;
	{
		struct state_node n;

		rc = state_node_load(m->c.state, &n);
		if (rc == 0)
			rc = history_make_primary(m->c.state, n.id);
		if (rc < 0) {
			fprintf(stderr, "twinfs mount: cannot record this node's generation in "
				"%s: %s\n", m->c.state, strerror(-rc));
			return cli_exit_code(rc);
		}
	}
	return EX_OK;
}

/* Forks; the parent returns the exit code once the child reported
 * readiness (0) or failure; the child returns -1 to go on serving. */
static int mount_detach(int *ready_fd)
{
	int p[2], status, rc = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "twinfs mount: cannot detach: pipe: %s\n", strerror(errno));
		return EX_SOFTWARE;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "twinfs mount: cannot detach: fork: %s\n", strerror(errno));
		return EX_SOFTWARE;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		*ready_fd = p[1];
		return -1;
	}
	close(p[1]);
	do {
		n = read(p[0], &rc, sizeof(rc));
	} while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == sizeof(rc))
		return rc == 0 ? EX_OK : cli_exit_code(rc);
	/* The child died before saying anything. */
	waitpid(pid, &status, 0);
	fprintf(stderr, "twinfs mount: the mount process exited before the "
		"mount was ready (see the messages above)\n");
	return EX_SOFTWARE;
}

int mount_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 'S' },
		{ "state", required_argument, NULL, 's' },
		{ "mountpoint", required_argument, NULL, 'm' },
		{ "peer", required_argument, NULL, 'p' },
		{ "mode", required_argument, NULL, 'M' },
		{ "psk-file", required_argument, NULL, 'k' },
		{ "metrics", required_argument, NULL, 'X' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "no-passthrough", no_argument, NULL, 'P' },
		{ "no-uring", no_argument, NULL, 'U' },
		{ "uring-poll", required_argument, NULL, 'W' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* Flags are collected first and applied after the file. */
	struct { const char *key, *value; } set[16];
	struct conf_diag diag = { 0 };
	static struct mount_ctx m = {
		.store_lock = DIRLOCK_INIT, .state_lock = DIRLOCK_INIT,
	};
	const char *config = NULL;
	int nset = 0, verbose = 0, quiet = 0, ready_fd = -1;
	bool debug = false;
	int opt, rc, ex;

	optind = 1;
	opterr = 0;	/* cli_usage_error says it, in one line */
	while ((opt = getopt_long(argc, argv, ":o:fdvqh", opts, NULL)) != -1) {
		const char *key = NULL;

		switch (opt) {
		case 'c': config = optarg; break;
		case 'S': key = "store"; break;
		case 's': key = "state"; break;
		case 'm': key = "mountpoint"; break;
		case 'p': key = "peer"; break;
		case 'M': key = "mode"; break;
		case 'k': key = "tls.psk_file"; break;
		case 'X': key = "metrics.listen"; break;
		case 'I': key = "tls.insecure"; optarg = "true"; break;
		case 'o': key = "fuse.options"; m.options_flag = true; break;
		case 'P': key = "fuse.passthrough"; optarg = "false"; break;
		case 'U': key = "fuse.uring"; optarg = "false"; break;
		case 'W': key = "fuse.uring_poll_us"; break;
		case 'f': m.foreground = true; break;
		case 'd': debug = true; m.foreground = true; break;
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h':
			mount_usage(stdout);
			return EX_OK;
		case ':':
			return cli_usage_error("mount", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("mount", "unknown option '-%c'", optopt);
			return cli_usage_error("mount", "unknown option '%s'", argv[optind - 1]);
		}
		if (key && nset < (int)(sizeof(set) / sizeof(set[0]))) {
			set[nset].key = key;
			set[nset].value = optarg;
			nset++;
		}
	}
	if (optind != argc)
		return cli_usage_error("mount", "unexpected argument '%s'",
				       argv[optind]);

	/* Every check that can refuse runs before the first file is made. */
	conf_init(&m.c);
	diag.allow_stale = true;	/* a dead mount is mountpoint_prepare's */
	if (config && conf_load_file(&m.c, config, &diag) < 0) {
		/* what a flag overrides is the flag's business (mount(8) passes
		 * the mountpoint; the file's need not exist) */
		for (int k = 0; k < nset; k++)
			conf_diag_drop_key(&diag, set[k].key);
		if (diag.n_errors) {
			conf_diag_print(stderr, &diag);
			ex = mount_conf_exit(&diag, true);
			goto out_conf;
		}
	}
	conf_diag_print(stderr, &diag);	/* warnings */
	conf_diag_free(&diag);
	/* a key missing after the flags is reported against the file */
	diag = (struct conf_diag){ .allow_stale = true, .source = config ? strdup(config) : NULL };
	for (int k = 0; k < nset; k++) {
		if (conf_set(&m.c, set[k].key, set[k].value, &diag) < 0) {
			conf_diag_print(stderr, &diag);
			ex = mount_conf_exit(&diag, false);
			goto out_conf;
		}
	}
	if (conf_validate(&m.c, CONF_FOR_MOUNT, &diag) < 0) {
		conf_diag_print(stderr, &diag);
		ex = mount_conf_exit(&diag, config != NULL);
		goto out_conf;
	}
	log_set_level(m.c.log_level);
	log_adjust(verbose, quiet);
	ex = mount_preflight(&m);
	if (ex != EX_OK)
		goto out_conf;
	if (!m.foreground) {
		ex = mount_detach(&ready_fd);
		if (ex >= 0)
			goto out_conf;
		if (chdir("/") < 0)
			log_warn("cannot chdir to /", "err=\"%s\"", strerror(errno));
		/* the locks were taken by the parent, which exits now */
		if (dirlock_rebind(&m.store_lock) < 0 || dirlock_rebind(&m.state_lock) < 0) {
			ssize_t w;

			rc = -EBUSY;	/* the parent exits 69 with this */
			log_error("lost the store or state directory lock while detaching: "
				  "another twinfs took it", "store=%s state=%s", m.c.store,
				  m.c.state);
			w = write(ready_fd, &rc, sizeof(rc));
			(void)w;
			ex = EX_UNAVAILABLE;
			goto out_conf;
		}
	}
	rc = mount_serve(&m, ready_fd, debug);
	ex = rc < 0 ? cli_exit_code(rc) : EX_OK;
out_conf:
	dirlock_release(&m.state_lock);
	dirlock_release(&m.store_lock);
	conf_diag_free(&diag);
	conf_free(&m.c);
	return ex;
}
