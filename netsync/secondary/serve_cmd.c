/*
 * serve_cmd — `twinfs serve`: parses options (flags override --config),
 * runs every check that can refuse before anything is created (an unsafe
 * listen address, a state directory inside the store, a second writer on
 * the store or state directory, a port in use), detaches only once the
 * daemon listens (so a script can use it on the next line) and runs
 * serve_run(). Main thread of the process, plus one thread that waits for
 * serve_run's readiness byte to tell the service manager (READY=1) and
 * the detaching parent. Owns nothing after serve_run() returns.
 */
#include "netsync/secondary/serve_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/dirlock.h"
#include "common/log.h"
#include "common/notify.h"
#include "common/startcheck.h"
#include "conf/conf.h"
#include "netsync/control/metrics.h"
#include "netsync/roles/history.h"
#include "netsync/secondary/serve.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/tls.h"

static void serve_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs serve --store DIR --state DIR --listen HOST:PORT [OPTIONS]\n"
		"       twinfs serve --config FILE [OPTIONS]\n"
		"Runs the secondary: accepts one primary on HOST:PORT and applies its\n"
		"changes to the store; detaches once it listens (unless -f).\n\n"
		"  --store DIR         directory the replicated files are written to\n"
		"  --state DIR         node id, applied seq, control socket (created)\n"
		"  --listen HOST:PORT  address to accept the primary on\n"
		"  --psk-file FILE     secure the link with this pre-shared key (TLS 1.3;\n"
		"                      the same file on the primary; 'twinfs keygen --psk')\n"
		"                      Pinned keys instead: tls.peer_id in the config\n"
		"  --metrics HOST:PORT serve Prometheus /metrics there (metrics.listen;\n"
		"                      loopback unless --insecure)\n"
		"  --insecure          allow a non-loopback address without TLS keys\n"
		"                      (peers are NOT authenticated; trusted networks only)\n"
		"  --config FILE       read these settings from a YAML file; flags override\n"
		"  -f, --foreground    stay in the foreground, log to stderr\n"
		"  -v, --verbose       more log output (repeat for debug)\n"
		"  -q, --quiet         less log output\n"
		"  -h, --help          show this help\n\n"
		"Status: twinfs status --state DIR. Stop: SIGTERM.\n"
		"Exit: 0 listening, 64 usage, 66 a path is missing, 69 store, state dir\n"
		"or port in use, 78 configuration refused; twinfs(1) has them all.\n");
}

/* Exit code for settings conf refused: a failed path check is that
 * path's fault (66 missing...) whether a flag or the file named it;
 * anything else is the file's (78) or the flags' (64). */
static int serve_conf_exit(const struct conf_diag *d, bool from_file)
{
	int err = conf_diag_path_errno(d);

	if (err)
		return cli_exit_code(-err);
	return from_file ? EX_CONFIG : EX_USAGE;
}

/* Can we listen on SS? Binds a throw-away socket the way serve_listen
 * will (SO_REUSEADDR), so that a port in use is refused before the state
 * directory is touched. 0 or -errno (EADDRINUSE, EACCES...). */
static int serve_check_port(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd, rc = 0;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Readiness relay: serve_run writes one byte to `in` once the port
 * listens and the control socket answers; this thread then sends READY=1
 * to $NOTIFY_SOCKET from the daemon itself and passes the byte on to the
 * detaching parent (`out`, or -1 in the foreground). */
struct serve_ready {
	int in, out;
	char status[512];
	pthread_t thread;
};

static void *serve_ready_main(void *arg)
{
	struct serve_ready *r = arg;
	ssize_t n;
	char c;

	do
		n = read(r->in, &c, 1);
	while (n < 0 && errno == EINTR);
	close(r->in);
	if (n == 1) {
		int rc = notify_send("READY=1\nSTATUS=%s", r->status);

		if (rc < 0)
			log_warn("cannot tell the service manager we are ready",
				 "err=\"%s\"", strerror(-rc));
		if (r->out >= 0 && write(r->out, &c, 1) != 1)
			log_warn("cannot tell the parent we are ready", "err=\"%s\"",
				 strerror(errno));
	}
	if (r->out >= 0)
		close(r->out);
	return NULL;
}

/* Starts the relay; *ready_fd becomes the end serve_run writes to. */
static int serve_ready_start(struct serve_ready *r, int *ready_fd)
{
	int p[2], rc;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	r->in = p[0];
	r->out = *ready_fd;
	rc = pthread_create(&r->thread, NULL, serve_ready_main, r);
	if (rc) {
		close(p[0]);
		close(p[1]);
		return -rc;
	}
	*ready_fd = p[1];
	return 0;
}

/*
 * The refusals, before anything is created, in the order a user fixes
 * them: TLS keys that cannot be used (missing, malformed, open to others)
 * and a non-loopback address without keys or --insecure (78: refused on
 * their own terms), a listen address that does
 * not resolve (78), a state directory inside the store (78), a second
 * writer on the store or daemon on the state directory (69, naming its
 * PID), a port in use (69) or not ours to bind (77). Then the state
 * directory is made (73, 77) and locked. EX_OK or the exit code; the
 * reason is the last line printed.
 */
static int serve_preflight(const struct conf *c, struct dirlock *store_lock,
			   struct dirlock *state_lock, struct tls_ctx **tls)
{
	struct sockaddr_storage ss;
	struct tls_opts to;
	socklen_t sslen;
	char why[512];
	bool loopback;
	int rc;

	rc = tls_opts_init(&to, c->state, c->psk_file, c->tls_cert, c->tls_key, c->tls_peer_id,
			   c->tls_peer_cert, why, sizeof(why));
	if (rc == 0 && tls_opts_enabled(&to))
		rc = tls_ctx_new(&to, true, tls, why, sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "twinfs serve: cannot secure the link: %s\n", why);
		return EX_CONFIG;
	}
	rc = addr_resolve(c->listen, AI_PASSIVE, &ss, &sslen, NULL);
	loopback = rc == 0 && addr_is_loopback((struct sockaddr *)&ss);
	if (rc < 0) {
		fprintf(stderr, "twinfs serve: refusing listen address %s: %s\n", c->listen,
			rc == -ENOENT ? "the host does not resolve" :
			"expected HOST:PORT or [IPv6]:PORT");
		return EX_CONFIG;
	}
	if (!loopback && !c->insecure && !*tls) {
		fprintf(stderr, "twinfs serve: refusing to listen on %s: it is not a loopback "
			"address and twinfs has no TLS keys to authenticate the primary; use "
			"127.0.0.1, secure the link (--psk-file, or tls.peer_id), or pass "
			"--insecure on a network you trust\n", c->listen);
		return EX_CONFIG;
	}
	if (c->metrics_listen &&
	    metrics_check(c->metrics_listen, c->insecure, why, sizeof(why)) < 0) {
		fprintf(stderr, "twinfs serve: refusing: %s\n", why);
		return EX_CONFIG;
	}
	if (startcheck_state_outside("serve", c->store, c->state) < 0)
		return EX_CONFIG;
	rc = startcheck_state_safe("serve", c->state);
	if (rc < 0)
		return rc == -EPERM ? EX_CONFIG : cli_exit_code(rc);
	rc = startcheck_lock("serve", "store", c->store, store_lock);
	if (rc < 0)
		return cli_exit_code(rc);
	if (access(c->state, F_OK) == 0) {
		rc = startcheck_lock("serve", "state directory", c->state, state_lock);
		if (rc < 0)
			return cli_exit_code(rc);
		/* a primary's journal may hold changes its peer lacks: demote first */
		rc = history_check_role("serve", c->state, HISTORY_SECONDARY);
		if (rc < 0)
			return rc == -EPERM ? EX_CONFIG : cli_exit_code(rc);
	}
	rc = serve_check_port(&ss, sslen);
	if (rc < 0) {
		fprintf(stderr, "twinfs serve: cannot listen on %s: %s%s\n", c->listen,
			strerror(-rc), rc == -EADDRINUSE ? " (is another serve using this "
			"port?)" : "");
		return cli_exit_code(rc);
	}
	if (c->metrics_listen && (rc = metrics_check_port(c->metrics_listen, why,
							  sizeof(why))) < 0) {
		fprintf(stderr, "twinfs serve: %s\n", why);
		return cli_exit_code(rc);
	}
	if (state_lock->fd < 0) {
		if (mkdir(c->state, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			fprintf(stderr, "twinfs serve: cannot create state directory %s: %s\n",
				c->state, strerror(-rc));
			return rc == -EACCES || rc == -EPERM ? EX_NOPERM : EX_CANTCREAT;
		}
		rc = startcheck_lock("serve", "state directory", c->state, state_lock);
		if (rc < 0)
			return cli_exit_code(rc);
	}
	return EX_OK;
}

/* Forks; the parent waits until the child listens (one byte on the pipe)
 * and exits 0, or exits with the child's code if it dies first. Returns
 * in the child only, with *ready_fd set. */
static int serve_daemonize(int *ready_fd)
{
	int p[2], status;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		ssize_t n;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1)
			_exit(EX_OK);
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
			_exit(WEXITSTATUS(status) ? WEXITSTATUS(status) : EX_SOFTWARE);
		_exit(EX_SOFTWARE);
	}
	close(p[0]);
	if (setsid() < 0)
		return -errno;
	*ready_fd = p[1];
	return 0;
}

/* The daemon's options from the checked configuration. */
static void serve_opts_from(struct serve_opts *so, const struct conf *c, struct tls_ctx *tls)
{
	so->store = c->store;
	so->state = c->state;
	so->listen = c->listen;
	so->node_name = c->node_name;
	so->insecure = c->insecure;
	so->tls = tls;
	so->metrics_listen = c->metrics_listen;
	so->heartbeat_s = c->heartbeat_s ? c->heartbeat_s : 1;
}

int serve_cmd_main(int argc, char **argv)
{
	enum { O_STORE = 256, O_STATE, O_LISTEN, O_INSECURE, O_CONFIG, O_PSK, O_METRICS };
	static const struct option opts[] = {
		{ "store", required_argument, NULL, O_STORE },
		{ "state", required_argument, NULL, O_STATE },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "psk-file", required_argument, NULL, O_PSK },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "foreground", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *store = NULL, *state = NULL, *listen = NULL, *config = NULL, *psk = NULL;
	const char *metrics = NULL;
	struct tls_ctx *tls = NULL;
	bool insecure = false, foreground = false;
	int verbose = 0, quiet = 0, opt, rc, ready_fd = -1;
	struct conf_diag diag = { 0 };
	struct dirlock store_lock = DIRLOCK_INIT, state_lock = DIRLOCK_INIT;
	struct serve_ready ready = { .in = -1, .out = -1 };
	struct serve_opts so = { 0 };
	struct conf c;

	optind = 1;
	opterr = 0;	/* cli_usage_error says it, in one line */
	while ((opt = getopt_long(argc, argv, ":fvqh", opts, NULL)) != -1) {
		switch (opt) {
		case O_STORE: store = optarg; break;
		case O_STATE: state = optarg; break;
		case O_LISTEN: listen = optarg; break;
		case O_INSECURE: insecure = true; break;
		case O_PSK: psk = optarg; break;
		case O_METRICS: metrics = optarg; break;
		case O_CONFIG: config = optarg; break;
		case 'f': foreground = true; break;
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h':
			serve_usage(stdout);
			return EX_OK;
		case ':':
			return cli_usage_error("serve", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("serve", "unknown option '-%c'", optopt);
			return cli_usage_error("serve", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);

	conf_init(&c);
	if (config && conf_load_file(&c, config, &diag) < 0) {
		/* a flag overrides the file's value, and its problems */
		if (store)
			conf_diag_drop_key(&diag, "store");
		if (state)
			conf_diag_drop_key(&diag, "state");
		if (listen)
			conf_diag_drop_key(&diag, "listen");
		if (diag.n_errors) {
			conf_diag_print(stderr, &diag);
			rc = serve_conf_exit(&diag, true);
			goto out_conf;
		}
	}
	conf_diag_print(stderr, &diag);	/* warnings */
	conf_diag_free(&diag);
	/* a key missing after the flags is reported against the file */
	diag = (struct conf_diag){ .source = config ? strdup(config) : NULL };
	if ((store && conf_set(&c, "store", store, &diag) < 0) ||
	    (state && conf_set(&c, "state", state, &diag) < 0) ||
	    (listen && conf_set(&c, "listen", listen, &diag) < 0) ||
	    (insecure && conf_set(&c, "tls.insecure", "true", &diag) < 0) ||
	    (psk && conf_set(&c, "tls.psk_file", psk, &diag) < 0) ||
	    (metrics && conf_set(&c, "metrics.listen", metrics, &diag) < 0)) {
		conf_diag_print(stderr, &diag);
		rc = serve_conf_exit(&diag, false);
		goto out_conf;
	}
	if (conf_validate(&c, CONF_FOR_SERVE, &diag) < 0) {
		conf_diag_print(stderr, &diag);
		rc = serve_conf_exit(&diag, config != NULL);
		goto out_conf;
	}
	conf_diag_print(stderr, &diag);	/* warnings */
	log_set_level(c.log_level);
	log_adjust(verbose, quiet);
	rc = serve_preflight(&c, &store_lock, &state_lock, &tls);
	if (rc != EX_OK)
		goto out_conf;
	if (!foreground) {
		rc = serve_daemonize(&ready_fd);
		if (rc < 0) {
			fprintf(stderr, "twinfs serve: cannot detach: %s\n", strerror(-rc));
			rc = EX_SOFTWARE;
			goto out_conf;
		}
		/* the parent took the locks and exits: the daemon holds them */
		if (dirlock_rebind(&store_lock) < 0 || dirlock_rebind(&state_lock) < 0) {
			fprintf(stderr, "twinfs serve: lost the store or state directory lock "
				"while detaching: another twinfs took it\n");
			rc = EX_UNAVAILABLE;
			goto out_conf;
		}
	}
	if (!foreground) {
		/* serve_run detaches to syslog, or to this file where no syslog
		 * socket exists */
		char file[PATH_MAX], *abs = realpath(c.state, NULL);

		snprintf(file, sizeof(file), "%s/twinfs.log", abs ? abs : c.state);
		free(abs);
		log_set_file(file, 0);
	}
	snprintf(ready.status, sizeof(ready.status), "secondary: listening on %s, store %s",
		 c.listen, c.store);
	rc = serve_ready_start(&ready, &ready_fd);
	if (rc < 0) {
		fprintf(stderr, "twinfs serve: cannot start: %s\n", strerror(-rc));
		rc = EX_SOFTWARE;
		goto out_conf;
	}
	serve_opts_from(&so, &c, tls);
	rc = serve_run(&so, ready_fd, !foreground);
	/* serve_run closed ready_fd only if it got ready; either way the relay
	 * sees EOF now and ends */
	if (rc < 0)
		close(ready_fd);
	pthread_join(ready.thread, NULL);
	notify_send("STOPPING=1\nSTATUS=secondary: stopped");
	rc = rc < 0 ? cli_exit_code(rc) : EX_OK;
out_conf:
	tls_ctx_free(tls);
	dirlock_release(&state_lock);
	dirlock_release(&store_lock);
	conf_diag_free(&diag);
	conf_free(&c);
	return rc;
}
