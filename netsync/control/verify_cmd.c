/*
 * verify_cmd — `twinfs verify`: proof that two trees are equal, re-read on
 * both sides (netsync/delta/inventory.h), listing every path that differs
 * and how.
 *   twinfs verify SRC_DIR HOST:PORT [--psk-file F]   against a serve peer
 *   twinfs verify SRC_DIR DEST_DIR                    two local trees
 *   twinfs verify --state DIR                         a mount and its peer
 * The local inventory is built on a thread while the peer streams its own
 * over a connection of its own (HELLO role VERIFIER; TLS when keys are
 * configured). Main thread plus that one; blocking IO. Exit 0 iff equal.
 */
#include "netsync/control/verify_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/err.h>

#include "common/cli.h"
#include "common/clock.h"
#include "netsync/control/control.h"
#include "netsync/control/ctljson.h"
#include "netsync/control/ctlstate.h"
#include "netsync/delta/inventory.h"
#include "netsync/wire/addr.h"
#include "netsync/wire/limits.h"
#include "netsync/wire/proto.h"
#include "netsync/wire/tls.h"

#define VERIFY_TIMEOUT_MS 30000	/* silence from the peer before giving up */

struct verify_link {
	int fd;
	SSL *ssl;
	struct evbuffer *in;
};

static void verify_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs verify SRC_DIR HOST:PORT [--psk-file FILE] [-q]\n"
		"       twinfs verify SRC_DIR DEST_DIR [-q]\n"
		"       twinfs verify --state DIR [-q]\n"
		"       twinfs verify --config FILE [-q]\n\n"
		"Proves that two trees are equal: both sides are read again, content\n"
		"and xattrs hashed (XXH3-128), never trusting a cached hash or mtime.\n"
		"Compares type, mode, owner, size, content, mtime (ns, every type),\n"
		"link target, device numbers, hard-link groups and xattrs, and prints\n"
		"one line per difference: PATH: what differs.\n\n"
		"  HOST:PORT       a 'twinfs serve' peer; its store is compared\n"
		"  --psk-file F    the link's pre-shared key (as for serve/mount)\n"
		"  --state DIR     a running mount: its store against its peer's,\n"
		"                  with the mount's address and keys\n"
		"  --config FILE   the YAML file the mount was started from: its\n"
		"                  state directory (--state wins)\n"
		"  -q, --quiet     print only the summary line\n"
		"  -h, --help      show this help\n\n"
		"Run it when nothing writes (e.g. right after 'twinfs sync'): a change\n"
		"made while it reads shows up as a difference.\n"
		"Exit: 0 identical, 65 the trees differ, 64 usage (also: --state of a\n"
		"serve), 66 no such tree or config file, 69 the peer or daemon cannot\n"
		"be reached or the mount has no peer, 74 I/O error, 78 the config file\n"
		"names no state directory.\n");
}

/* ---- the link ---- */

static int verify_io(struct verify_link *l, void *buf, size_t n, bool wr)
{
	for (;;) {
		struct pollfd p = { .fd = l->fd, .events = wr ? POLLOUT : POLLIN };
		ssize_t r;

		if (l->ssl) {
			int k = wr ? SSL_write(l->ssl, buf, (int)n) : SSL_read(l->ssl, buf, (int)n);

			if (k > 0)
				return k;
			switch (SSL_get_error(l->ssl, k)) {
			case SSL_ERROR_WANT_READ: p.events = POLLIN; break;
			case SSL_ERROR_WANT_WRITE: p.events = POLLOUT; break;
			case SSL_ERROR_ZERO_RETURN: return 0;
			default: return k == 0 && !wr ? 0 : -EPROTO;
			}
		} else {
			r = wr ? send(l->fd, buf, n, MSG_NOSIGNAL) : recv(l->fd, buf, n, 0);
			if (r >= 0)
				return (int)r;
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
		}
		if (poll(&p, 1, VERIFY_TIMEOUT_MS) == 0)
			return -ETIMEDOUT;
	}
}

static int verify_send(struct verify_link *l, struct evbuffer *b)
{
	while (evbuffer_get_length(b)) {
		size_t n = evbuffer_get_contiguous_space(b);
		int k = verify_io(l, evbuffer_pullup(b, (ssize_t)n), n, true);

		if (k <= 0)
			return k < 0 ? k : -EPIPE;
		evbuffer_drain(b, (size_t)k);
	}
	return 0;
}

/* The next frame into *F (valid until the next call); 1, or -errno. */
static int verify_recv(struct verify_link *l, struct proto_frame *f, bool *have)
{
	char buf[65536];

	if (*have)
		proto_frame_consume(l->in, f);
	*have = false;
	for (;;) {
		/* the secondary's frames are small: a larger header is refused
		 * before its payload is waited for (limits.h) */
		int rc = limits_frame_next(l->in, PROTO_ROLE_SECONDARY, f);

		if (rc == 1) {
			*have = true;
			return 1;
		}
		if (rc < 0)
			return -EBADMSG;
		rc = verify_io(l, buf, sizeof(buf), false);
		if (rc <= 0)
			return rc < 0 ? rc : -ECONNRESET;
		evbuffer_add(l->in, buf, (size_t)rc);
	}
}

static int verify_connect(const char *hostport, struct tls_ctx *tls, struct verify_link *l,
			  char *why, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int gai = 0, rc;

	rc = addr_resolve(hostport, 0, &ss, &sl, &gai);
	if (rc < 0) {
		snprintf(why, len, "cannot resolve %s", hostport);
		return rc;
	}
	if (!tls && !addr_is_loopback((struct sockaddr *)&ss)) {
		snprintf(why, len, "%s is not a loopback address and the link has no keys "
			 "(--psk-file)", hostport);
		return -EPERM;
	}
	l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || connect(l->fd, (struct sockaddr *)&ss, sl) < 0) {
		rc = -errno;
		snprintf(why, len, "cannot connect to %s: %s", hostport, strerror(-rc));
		return rc;
	}
	if (tls) {
		char err[160];

		l->ssl = tls_ssl_new(tls);
		if (!l->ssl || !SSL_set_fd(l->ssl, l->fd) || SSL_connect(l->ssl) != 1) {
			snprintf(why, len, "TLS handshake with %s failed: %s (the same key on "
				 "both nodes?)", hostport, tls_error_string(err, sizeof(err)));
			return -EACCES;
		}
	}
	return 0;
}

/* Receives the peer's inventory into INV. 0, or -errno with WHY. */
static int verify_fetch(struct verify_link *l, struct inventory *inv, char *why, size_t len)
{
	struct proto_hello h = { .version = PROTO_VERSION, .role = PROTO_ROLE_VERIFIER,
				 .name = "verify" };
	struct evbuffer *out = evbuffer_new();
	struct proto_frame f;
	bool have = false, hello = false;
	uint64_t count;
	uint32_t err;
	int rc;

	l->in = evbuffer_new();
	if (!out || !l->in || proto_encode_hello(out, &h) < 0) {
		evbuffer_free(out);
		return -ENOMEM;
	}
	rc = verify_send(l, out);
	evbuffer_free(out);
	while (rc == 0 && (rc = verify_recv(l, &f, &have)) == 1) {
		struct proto_entry e;
		struct proto_error pe;

		rc = 0;
		if (f.h.type == PROTO_ERROR && proto_decode_error(&f, &pe) == 0) {
			snprintf(why, len, "the peer refused: %s", pe.text);
			return -ECONNREFUSED;
		}
		if (!hello) {
			if (f.h.type != PROTO_HELLO || proto_decode_hello(&f, &h) < 0 ||
			    h.role != PROTO_ROLE_SECONDARY) {
				snprintf(why, len, "the peer is not a twinfs serve");
				return -EPROTO;
			}
			if (h.version != PROTO_VERSION) {
				snprintf(why, len, "the peer speaks protocol %u, this node %u",
					 h.version, PROTO_VERSION);
				return -EPROTO;
			}
			hello = true;
			continue;
		}
		if (f.h.type == PROTO_HEARTBEAT)
			continue;
		if (f.h.type == PROTO_ENTRIES_END) {
			if (proto_decode_entries_end(&f, &count, &err) < 0 || count != inv->n) {
				snprintf(why, len, "the peer's inventory is inconsistent");
				return -EBADMSG;
			}
			if (err) {
				snprintf(why, len, "the peer could not read its whole store: %s",
					 strerror((int)err));
				return -(int)err;
			}
			return 0;
		}
		if (proto_decode_entry(&f, &e) == 0 && (e.flags & PROTO_ENTRY_F_ROOT)) {
			bool bad = false;

			if (!inventory_take_root(inv, &e, &bad) || bad || inv->n) {
				snprintf(why, len, "a malformed root entry from the peer");
				return -EBADMSG;
			}
			continue;
		}
		if (proto_decode_entry(&f, &e) < 0 ||
		    (inv->n && inventory_path_cmp(inv->e[inv->n - 1].path, e.path) >= 0)) {
			snprintf(why, len, "a malformed or out-of-order entry from the peer");
			return -EBADMSG;
		}
		rc = inventory_add(inv, &e);
	}
	if (rc < 0 && !*why)
		snprintf(why, len, "the connection to the peer failed: %s", strerror(-rc));
	return rc < 0 ? rc : -ECONNRESET;
}

/* ---- the command ---- */

struct verify_local {
	const char *root;
	struct inventory inv;
	int rc;
};

static void *verify_local_walk(void *arg)
{
	struct verify_local *v = arg;

	v->rc = inventory_build(v->root, NULL, &v->inv);
	return NULL;
}

static void verify_print(const char *path, const char *what, void *arg)
{
	if (!*(const bool *)arg)
		printf("%s: %s\n", path, what);
}

/* Reads STORE, PEER and the keys of the mount of STATE from its status. */
static int verify_from_state(const char *state, char *store, char *peer, struct tls_opts *o,
			     size_t len)
{
	char *reply = NULL, psk[4096] = "", cert[4096] = "", key[4096] = "", ids[1024] = "";
	char why[256];
	int rc = control_call(state, "status", 5000, &reply);

	if (rc < 0)
		return control_cmd_error("verify", state, rc);
	/* as `sync`: a serve's state dir is a usage error (64), a mount
	 * without a peer has nothing to compare with (69) */
	if (ctljson_get_str(reply, "role", peer, len) < 0 || strcmp(peer, "primary") != 0 ||
	    ctljson_get_str(reply, "store_dir", store, len) < 0 || !*store) {
		fprintf(stderr, "twinfs verify: the daemon of %s is not a mount (give the "
			"primary's state directory)\n", state);
		free(reply);
		return EX_USAGE;
	}
	if (ctljson_get_str(reply, "peer", peer, len) < 0 || !*peer) {
		fprintf(stderr, "twinfs verify: the mount of %s has no peer (mounted "
			"without --peer): nothing to compare with\n", state);
		free(reply);
		return EX_UNAVAILABLE;
	}
	ctljson_get_str(reply, "tls_psk_file", psk, sizeof(psk));
	ctljson_get_str(reply, "tls_cert", cert, sizeof(cert));
	ctljson_get_str(reply, "tls_key", key, sizeof(key));
	ctljson_get_str(reply, "tls_peer_ids", ids, sizeof(ids));
	free(reply);
	rc = tls_opts_init(o, state, *psk ? psk : NULL, *cert ? cert : NULL, *key ? key : NULL,
			   *ids ? ids : NULL, NULL, why, sizeof(why));
	if (o->psk_file) {	/* point into storage that outlives this frame */
		snprintf(o->cert_buf, sizeof(o->cert_buf), "%s", psk);
		o->psk_file = o->cert_buf;
	}
	if (rc < 0) {
		fprintf(stderr, "twinfs verify: %s\n", why);
		return EX_CONFIG;
	}
	return 0;
}

static int verify_run(const char *src, const char *dest, const struct tls_opts *to, bool quiet)
{
	struct verify_local local = { .root = src }, other = { .root = dest };
	struct verify_link l = { .fd = -1 };
	struct inventory peer = { 0 };
	struct tls_ctx *tls = NULL;
	char why[512] = "";
	double t0 = clock_mono_s();
	struct stat st;
	pthread_t thr;
	size_t n;
	int rc;

	if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs verify: %s is not a directory\n", src);
		return EX_NOINPUT;
	}
	if (tls_opts_enabled(to) && tls_ctx_new(to, false, &tls, why, sizeof(why)) < 0) {
		fprintf(stderr, "twinfs verify: cannot secure the link: %s\n", why);
		return EX_CONFIG;
	}
	if (pthread_create(&thr, NULL, verify_local_walk, &local) != 0) {
		tls_ctx_free(tls);
		return EX_OSERR;
	}
	if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
		verify_local_walk(&other);
		rc = other.rc;
		if (rc < 0)
			snprintf(why, sizeof(why), "cannot read %s: %s", dest, strerror(-rc));
		peer = other.inv;
	} else {
		rc = verify_connect(dest, tls, &l, why, sizeof(why));
		if (rc == 0)
			rc = verify_fetch(&l, &peer, why, sizeof(why));
	}
	pthread_join(thr, NULL);
	if (l.ssl)
		SSL_free(l.ssl);
	if (l.fd >= 0)
		close(l.fd);
	if (l.in)
		evbuffer_free(l.in);
	tls_ctx_free(tls);
	if (rc == 0 && local.rc < 0) {
		rc = local.rc;
		snprintf(why, sizeof(why), "cannot read %s: %s", src, strerror(-rc));
	}
	if (rc < 0) {
		fprintf(stderr, "twinfs verify: %s\n", why);
		inventory_free(&local.inv);
		inventory_free(&peer);
		return rc == -ENOENT || rc == -ENOTDIR ? EX_NOINPUT : rc == -EPERM ? EX_CONFIG :
		       rc == -EIO ? EX_IOERR : EX_UNAVAILABLE;
	}
	n = inventory_compare(&local.inv, &peer, "here", "on the other side",
			      verify_print, &quiet);
	printf("%s: %zu entries here, %zu on the other side, %zu difference%s; read %.1f MB "
	       "here in %.2f s\n", n ? "DIFFERENT" : "identical", local.inv.n, peer.n, n,
	       n == 1 ? "" : "s", (double)local.inv.bytes_read / 1e6, clock_mono_s() - t0);
	inventory_free(&local.inv);
	inventory_free(&peer);
	return n ? EX_DATAERR : EX_OK;
}

int verify_state(const char *state, bool quiet)
{
	char store[4096], peer[4096];
	struct tls_opts to = { 0 };
	int rc = verify_from_state(state, store, peer, &to, sizeof(store));

	return rc ? rc : verify_run(store, peer, &to, quiet);
}

int verify_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "psk-file", required_argument, NULL, 'k' },
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *psk = NULL, *state = NULL, *config = NULL;
	char why[256];
	struct tls_opts to = { 0 };
	bool quiet = false;
	int opt, rc;

	optind = 1;
	opterr = 0;	/* cli_usage_error says it, in one line */
	while ((opt = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'k': psk = optarg; break;
		case 's': state = optarg; break;
		case 'c': config = optarg; break;
		case 'q': quiet = true; break;
		case 'h': verify_usage(stdout); return EX_OK;
		case ':':
			return cli_usage_error("verify", "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("verify", "unknown option '-%c'", optopt);
			return cli_usage_error("verify", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (state || config) {
		char *st = NULL, *store = NULL;

		if (optind != argc || psk)
			return cli_usage_error("verify", "--state and --config take no trees "
					       "and no keys (they use the mount's)");
		rc = ctlstate_resolve("verify", state, config, &st, &store);
		if (rc != EX_OK)
			return rc;
		rc = verify_state(st, quiet);
		free(st);
		free(store);
		return rc;
	}
	if (argc - optind != 2)
		return cli_usage_error("verify", "give SRC_DIR and HOST:PORT (or DEST_DIR), "
				       "or --state DIR");
	rc = tls_opts_init(&to, "", psk, NULL, NULL, NULL, NULL, why, sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "twinfs verify: %s\n", why);
		return EX_CONFIG;
	}
	return verify_run(argv[optind], argv[optind + 1], &to, quiet);
}
