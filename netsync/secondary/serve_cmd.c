/*
 * serve_cmd — `twinfs serve`: parses options (flags override --config),
 * refuses unsafe listen addresses, detaches only once the daemon listens
 * (so a script can use it on the next line) and runs serve_run(). Main
 * thread of the process; owns nothing after serve_run() returns.
 */
#include "netsync/secondary/serve_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/log.h"
#include "conf/conf.h"
#include "netsync/secondary/serve.h"
#include "netsync/wire/addr.h"

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
		"  --insecure          allow a non-loopback address without TLS keys\n"
		"                      (peers are NOT authenticated; trusted networks only)\n"
		"  --config FILE       read these settings from a YAML file; flags override\n"
		"  -f, --foreground    stay in the foreground, log to stderr\n"
		"  -v, --verbose       more log output (repeat for debug)\n"
		"  -q, --quiet         less log output\n"
		"  -h, --help          show this help\n\n"
		"Status: twinfs status --state DIR. Stop: SIGTERM.\n");
}

/* Start-up failures -> exit codes, for both the foreground and the
 * detached child (whose code the parent passes on). */
static int serve_exit_code(int rc)
{
	switch (-rc) {
	case EADDRINUSE:
		return EX_UNAVAILABLE;
	case EPERM:
		return EX_CONFIG;
	default:
		return cli_exit_code(rc);
	}
}

/* Is STATE (which may not exist yet) inside STORE? The primary could then
 * overwrite the node's state through replicated changes. */
static bool serve_state_inside_store(const char *store, const char *state)
{
	char rstore[PATH_MAX], rstate[PATH_MAX], parent[PATH_MAX];
	const char *base;
	size_t n;

	if (!realpath(store, rstore))
		return false;
	if (!realpath(state, rstate)) {
		/* not created yet: resolve its parent */
		snprintf(parent, sizeof(parent), "%s", state);
		base = strrchr(parent, '/');
		if (base == parent) {
			snprintf(rstate, sizeof(rstate), "%s", state);
		} else if (base) {
			parent[base - parent] = '\0';
			if (!realpath(parent, rstate))
				return false;
			n = strlen(rstate);
			snprintf(rstate + n, sizeof(rstate) - n, "/%s", base + 1);
		} else if (!getcwd(rstate, sizeof(rstate))) {
			return false;
		} else {
			n = strlen(rstate);
			snprintf(rstate + n, sizeof(rstate) - n, "/%s", state);
		}
	}
	n = strlen(rstore);
	return strcmp(rstore, "/") == 0 ||
	       (strncmp(rstate, rstore, n) == 0 && (rstate[n] == '/' || rstate[n] == '\0'));
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

int serve_cmd_main(int argc, char **argv)
{
	enum { O_STORE = 256, O_STATE, O_LISTEN, O_INSECURE, O_CONFIG };
	static const struct option opts[] = {
		{ "store", required_argument, NULL, O_STORE },
		{ "state", required_argument, NULL, O_STATE },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "foreground", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *store = NULL, *state = NULL, *listen = NULL, *config = NULL;
	bool insecure = false, foreground = false;
	int verbose = 0, quiet = 0, opt, rc, ready_fd = -1;
	struct conf_diag diag = { 0 };
	struct serve_opts so = { 0 };
	struct sockaddr_storage ss;
	socklen_t sslen;
	bool loopback;
	struct conf c;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "fvqh", opts, NULL)) != -1) {
		switch (opt) {
		case O_STORE: store = optarg; break;
		case O_STATE: state = optarg; break;
		case O_LISTEN: listen = optarg; break;
		case O_INSECURE: insecure = true; break;
		case O_CONFIG: config = optarg; break;
		case 'f': foreground = true; break;
		case 'v': verbose++; break;
		case 'q': quiet++; break;
		case 'h':
			serve_usage(stdout);
			return EX_OK;
		default:
			return cli_usage_error("serve", "unknown option");
		}
	}
	if (optind != argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);

	conf_init(&c);
	if (config)
		conf_load_file(&c, config, &diag);
	if (store)
		conf_set(&c, "store", store, &diag);
	if (state)
		conf_set(&c, "state", state, &diag);
	if (listen)
		conf_set(&c, "listen", listen, &diag);
	if (insecure)
		conf_set(&c, "tls.insecure", "true", &diag);
	if (diag.n_errors == 0)
		conf_validate(&c, CONF_FOR_SERVE, &diag);
	if (diag.n_errors) {
		conf_diag_print(stderr, &diag);
		fprintf(stderr, "twinfs serve: %s. Try 'twinfs serve --help'.\n",
			config ? "fix the config or the flags" : "fix the flags");
		rc = config ? EX_CONFIG : EX_USAGE;
		goto out_conf;
	}
	conf_diag_print(stderr, &diag);	/* warnings */
	if (c.psk_file || c.tls_cert || c.tls_key || c.tls_peer_cert) {
		fprintf(stderr, "twinfs serve: tls.* keys are set, but this version of serve "
			"has no TLS support yet; remove them (loopback only, or tls.insecure "
			"on a trusted network)\n");
		rc = EX_CONFIG;
		goto out_conf;
	}
	if (serve_state_inside_store(c.store, c.state)) {
		rc = cli_usage_error("serve", "the state directory %s is inside the store %s; "
				     "the primary's changes could overwrite it. Put it "
				     "elsewhere (e.g. /var/lib/twinfs)", c.state, c.store);
		goto out_conf;
	}
	rc = addr_resolve(c.listen, AI_PASSIVE, &ss, &sslen, NULL);
	loopback = rc == 0 && addr_is_loopback((struct sockaddr *)&ss);
	if (rc < 0) {
		rc = cli_usage_error("serve", "--listen %s: %s", c.listen,
				     rc == -ENOENT ? "host does not resolve" :
				     "expected HOST:PORT or [IPv6]:PORT");
		goto out_conf;
	}
	if (!loopback && !c.insecure) {
		rc = cli_usage_error("serve",
			"refusing to listen on %s: it is not a loopback address and twinfs "
			"has no TLS keys to authenticate the primary. Use 127.0.0.1, or pass "
			"--insecure on a network you trust", c.listen);
		goto out_conf;
	}

	log_set_level(c.log_level);
	log_adjust(verbose, quiet);
	if (!foreground) {
		rc = serve_daemonize(&ready_fd);
		if (rc < 0) {
			fprintf(stderr, "twinfs serve: cannot detach: %s\n", strerror(-rc));
			rc = EX_OSERR;
			goto out_conf;
		}
	}
	so.store = c.store;
	so.state = c.state;
	so.listen = c.listen;
	so.node_name = c.node_name;
	so.insecure = c.insecure;
	so.heartbeat_s = c.heartbeat_s ? c.heartbeat_s : 1;
	rc = serve_run(&so, ready_fd, !foreground);
	rc = rc < 0 ? serve_exit_code(rc) : EX_OK;
out_conf:
	conf_diag_free(&diag);
	conf_free(&c);
	return rc;
}
