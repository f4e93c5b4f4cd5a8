/*
 * mirror_cmd — `twinfs mirror`: options, the destination (a serve peer
 * over TCP/TLS, or a local folder served in-process by the same peer-side
 * engine, netsync/secondary/mirrorsess.h, over a socketpair), the
 * itemized list, the summary (text or --json) and the exit code. It lives
 * in src/ because a local destination wires the client engine
 * (netsync/delta/) to the peer's (netsync/secondary/). Main thread, plus
 * the local destination's session thread.
 */
#include "src/mirror_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/size.h"
#include "netsync/delta/exclude.h"
#include "netsync/delta/hashcache.h"
#include "netsync/delta/mirror.h"
#include "netsync/secondary/mirrorsess.h"
#include "netsync/wire/link.h"
#include "netsync/wire/tls.h"

#define MIRROR_TIMEOUT_MS (600 * 1000)

static void mirror_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs mirror SRC_DIR HOST:PORT|DEST_DIR [OPTIONS]\n\n"
		"Makes the store of a 'twinfs serve' peer (HOST:PORT), or a local folder\n"
		"(DEST_DIR), equal to SRC_DIR: content, type, mode, owner and group (as\n"
		"root), mtime (ns, every type), symlinks, hard links, xattrs (user.*,\n"
		"trusted.*, POSIX ACLs, file capabilities), device numbers, and SRC_DIR's\n"
		"own mode, owner, mtime and xattrs. Files whose size or mtime differ are\n"
		"compared by block hashes and only the differing blocks are sent; new\n"
		"files go whole; renamed files are moved, not re-sent (with --delete).\n\n"
		"  --delete           remove what SRC_DIR lacks from the destination\n"
		"  -n, --dry-run      change nothing; list what would change (with -i)\n"
		"  -i, --itemize      one line per changed path: YXcstpoghlx PATH (rsync's\n"
		"                     --itemize-changes: > sent, c created, h hard link,\n"
		"                     R renamed, . attributes, *deleting)\n"
		"  -c, --checksum     compare content digests read fresh on both sides,\n"
		"                     not size and mtime (ignores any hash cache)\n"
		"  --exclude PATTERN  leave out matching paths on both sides (repeatable;\n"
		"                     no '/': a name at any depth; with '/': the path;\n"
		"                     trailing '/': folders only); excluded names are\n"
		"                     never deleted\n"
		"  --bwlimit RATE     send at most RATE bytes per second (e.g. 20M)\n"
		"  --block-size SIZE  delta block size, a power of two from 4KiB to 1MiB\n"
		"                     (default 128KiB, as delta.block_size)\n"
		"  --cache DIR        keep this side's block hashes in DIR/hashcache, so\n"
		"                     an unchanged large file is not read again (the\n"
		"                     source's file system is synced at the end, so the\n"
		"                     hashes still hold after a reboot)\n"
		"  --progress WHEN    auto (default: when stderr is a terminal), always,\n"
		"                     never\n"
		"  --json             print a JSON summary instead of the text line\n"
		"  --psk-file F       the link's pre-shared key (as for serve/mount)\n"
		"  --force            write even into the replication target of a mount\n"
		"  -q, --quiet        no summary line\n"
		"  -h, --help         show this help\n\n"
		"Exit: 0 done, 64 usage, 65 malformed data from the peer, 66 SRC_DIR or\n"
		"DEST_DIR missing, 69 the peer cannot be reached or refused, 74 the\n"
		"destination failed to apply (its reason is shown), 75 timed out, 78 keys\n"
		"needed for a non-loopback peer.\n");
}

struct mirror_cli {
	const char *src, *dest;
	struct mirror_opts o;
	struct exclude ex;
	struct tls_opts to;
	const char *psk, *cache_dir;
	uint64_t bwlimit;
	bool json, quiet, force, local;
	int progress;
};

static void mirror_print_item(const char *line, void *arg)
{
	(void)arg;
	printf("%s\n", line);
}

static int mirror_exit_code(int rc)
{
	switch (rc) {
	case -ENOENT:
	case -ENOTDIR:
		return EX_NOINPUT;
	case -EPERM:
		return EX_CONFIG;
	case -EBADMSG:
	case -EPROTO:
	case -EINVAL:
		return EX_DATAERR;
	case -ETIMEDOUT:
		return EX_TEMPFAIL;
	case -EIO:
	case -ENOSPC:
	case -EROFS:
	case -EDQUOT:
		return EX_IOERR;
	case -ENOMEM:
		return EX_OSERR;
	default:
		return EX_UNAVAILABLE;
	}
}

static void mirror_summary(const struct mirror_cli *m, const struct mirror_stats *st, int rc)
{
	char a[32], b[32], w[32], t[32];

	if (m->json) {
		struct json j;

		json_init(&j, stdout);
		json_object_begin(&j);
		json_key(&j, "ok"); json_bool(&j, rc == 0);
		json_key(&j, "error"); json_string(&j, rc ? st->error : NULL);
		json_key(&j, "dry_run"); json_bool(&j, m->o.dry_run);
		json_key(&j, "src"); json_string(&j, m->src);
		json_key(&j, "dest"); json_string(&j, m->dest);
		json_key(&j, "entries_scanned_src"); json_uint(&j, st->entries_src);
		json_key(&j, "entries_scanned_dest"); json_uint(&j, st->entries_peer);
		json_key(&j, "files_sent_whole"); json_uint(&j, st->files_whole);
		json_key(&j, "bytes_sent_whole"); json_uint(&j, st->bytes_whole);
		json_key(&j, "files_delta"); json_uint(&j, st->files_delta);
		json_key(&j, "bytes_sent_delta"); json_uint(&j, st->bytes_delta);
		json_key(&j, "bytes_matched"); json_uint(&j, st->bytes_matched);
		json_key(&j, "renamed"); json_uint(&j, st->renamed);
		json_key(&j, "linked"); json_uint(&j, st->linked);
		json_key(&j, "deleted"); json_uint(&j, st->deleted);
		json_key(&j, "attributes_only"); json_uint(&j, st->meta);
		json_key(&j, "skipped_unchanged"); json_uint(&j, st->unchanged);
		json_key(&j, "bytes_read"); json_uint(&j, st->bytes_read);
		json_key(&j, "wire_bytes_sent"); json_uint(&j, st->wire_tx);
		json_key(&j, "wire_bytes_received"); json_uint(&j, st->wire_rx);
		json_key(&j, "seconds"); json_double(&j, st->seconds);
		json_object_end(&j);
		printf("\n");
		return;
	}
	if (rc) {
		fprintf(stderr, "twinfs mirror: %s\n", st->error[0] ? st->error : strerror(-rc));
		return;
	}
	if (m->quiet)
		return;
	printf("%s %s to %s: %llu files sent whole (%s), %llu by delta (%s sent, %s matched), "
	       "%llu renamed, %llu linked, %llu deleted, %llu unchanged; %s on the wire in "
	       "%.2f s\n", m->o.dry_run ? "would mirror" : "mirrored", m->src, m->dest,
	       (unsigned long long)st->files_whole, size_format_iec(st->bytes_whole, a, sizeof(a)),
	       (unsigned long long)st->files_delta, size_format_iec(st->bytes_delta, b, sizeof(b)),
	       size_format_iec(st->bytes_matched, w, sizeof(w)), (unsigned long long)st->renamed,
	       (unsigned long long)st->linked, (unsigned long long)st->deleted,
	       (unsigned long long)st->unchanged,
	       size_format_iec(st->wire_tx + st->wire_rx, t, sizeof(t)), st->seconds);
}

struct mirror_local {
	struct link l;
	struct mirrorsess_opts o;
	int rc;
};

static void *mirror_local_run(void *arg)
{
	struct mirror_local *s = arg;

	s->rc = mirrorsess_run(&s->l, &s->o);
	shutdown(s->l.fd, SHUT_RDWR);
	return NULL;
}

/* Connects L to DEST (a serve peer, or a session thread on a local
 * folder) and exchanges HELLOs. */
static int mirror_open(struct mirror_cli *m, struct link *l, struct tls_ctx *tls,
		       struct mirror_local *loc, pthread_t *thr, struct mirror_stats *st)
{
	struct proto_hello h = { .version = PROTO_VERSION, .role = PROTO_ROLE_MIRROR,
				 .name = "mirror", .flags = m->force ? PROTO_HELLO_F_FORCE : 0 };
	struct proto_hello peer;
	int sp[2], rc;

	if (m->local) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
			return -errno;
		if (link_init(&loc->l, MIRROR_TIMEOUT_MS) < 0 ||
		    link_adopt(&loc->l, sp[1], NULL, NULL) < 0 ||
		    link_adopt(l, sp[0], NULL, NULL) < 0)
			return -ENOMEM;
		loc->o.store = m->dest;
		loc->o.send_hello = true;
		loc->o.name = "local";
		if (pthread_create(thr, NULL, mirror_local_run, loc) != 0)
			return -EAGAIN;
	} else {
		rc = link_connect(l, m->dest, tls, st->error, sizeof(st->error));
		if (rc < 0)
			return rc;
	}
	return link_hello(l, &h, &peer, st->error, sizeof(st->error));
}

static int mirror_go(struct mirror_cli *m)
{
	struct mirror_local loc = { .l.fd = -1 };
	struct mirror_stats st = { 0 };
	struct tls_ctx *tls = NULL;
	struct hashcache *cache = NULL;
	int srcfd = -1;
	struct link l;
	pthread_t thr;
	bool thr_up;
	int rc;

	if (tls_opts_enabled(&m->to) &&
	    tls_ctx_new(&m->to, false, &tls, st.error, sizeof(st.error)) < 0) {
		fprintf(stderr, "twinfs mirror: cannot secure the link: %s\n", st.error);
		return EX_CONFIG;
	}
	if (m->cache_dir) {
		/* the cache's lists describe the source tree: its file system
		 * decides which of them are believed (hashcache.h) */
		srcfd = open(m->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = srcfd < 0 ? -errno : hashcache_open(m->cache_dir, srcfd, &cache);
		if (rc < 0) {
			fprintf(stderr, "twinfs mirror: cannot use the cache in %s: %s\n",
				m->cache_dir, strerror(-rc));
			if (srcfd >= 0)
				close(srcfd);
			tls_ctx_free(tls);
			return EX_CANTCREAT;
		}
	}
	m->o.cache = cache;
	rc = link_init(&l, MIRROR_TIMEOUT_MS);
	l.bwlimit = m->bwlimit;
	if (rc == 0)
		rc = mirror_open(m, &l, tls, &loc, &thr, &st);
	thr_up = m->local && loc.l.fd >= 0 && rc != -EAGAIN;
	if (rc == 0)
		rc = mirror_run(&l, m->src, &m->o, &st);
	if (rc == 0) {
		struct evbuffer *b = evbuffer_new();

		if (b && proto_encode_goodbye(b, "mirror done") == 0)
			link_send(&l, b);
		if (b)
			evbuffer_free(b);
	}
	link_close(&l);
	if (thr_up) {
		pthread_join(thr, NULL);
		link_close(&loc.l);
	}
	if (cache) {
		hashcache_save_synced(cache);
		hashcache_close(cache);
		close(srcfd);
	}
	tls_ctx_free(tls);
	mirror_summary(m, &st, rc);
	return rc ? mirror_exit_code(rc) : EX_OK;
}

/* Checks the trees before anything is opened: a refused command changes
 * nothing. Returns 0 or an exit code. */
static int mirror_check_trees(struct mirror_cli *m)
{
	char rs[PATH_MAX], rd[PATH_MAX];
	struct stat st;

	if (stat(m->src, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs mirror: cannot mirror %s: %s\n", m->src,
			errno && stat(m->src, &st) < 0 ? strerror(errno) : "not a directory");
		return EX_NOINPUT;
	}
	m->local = stat(m->dest, &st) == 0 && S_ISDIR(st.st_mode);
	if (!m->local && !strchr(m->dest, ':')) {
		fprintf(stderr, "twinfs mirror: %s is neither a folder nor HOST:PORT\n", m->dest);
		return EX_NOINPUT;
	}
	if (m->local && realpath(m->src, rs) && realpath(m->dest, rd)) {
		size_t n = strlen(rs);

		if (!strncmp(rd, rs, n) && (rd[n] == '/' || !rd[n] || n == 1)) {
			fprintf(stderr, "twinfs mirror: %s is inside %s; a mirror into itself "
				"would never end\n", m->dest, m->src);
			return EX_USAGE;
		}
		if (!strncmp(rs, rd, strlen(rd)) && rs[strlen(rd)] == '/' && m->o.delete) {
			fprintf(stderr, "twinfs mirror: %s is inside %s; --delete would remove "
				"the source\n", m->src, m->dest);
			return EX_USAGE;
		}
	}
	return 0;
}

int mirror_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delete", no_argument, NULL, 'D' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "itemize", no_argument, NULL, 'i' },
		{ "itemize-changes", no_argument, NULL, 'i' },
		{ "checksum", no_argument, NULL, 'c' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "bwlimit", required_argument, NULL, 'b' },
		{ "block-size", required_argument, NULL, 'B' },
		{ "cache", required_argument, NULL, 'C' },
		{ "progress", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "psk-file", required_argument, NULL, 'k' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mirror_cli m = { 0 };
	char why[256];
	uint64_t v;
	int opt, rc;

	m.o.block_size = MIRROR_BLOCK_SIZE;
	progress_mode("auto", &m.progress);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "nicqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'D': m.o.delete = true; break;
		case 'n': m.o.dry_run = true; break;
		case 'i': m.o.item = mirror_print_item; break;
		case 'c': m.o.checksum = true; break;
		case 'x':
			if (exclude_add(&m.ex, optarg) < 0) {
				exclude_free(&m.ex);
				return cli_usage_error("mirror", "--exclude '%s': an empty pattern",
						       optarg);
			}
			break;
		case 'b':
			if (size_parse(optarg, &m.bwlimit) < 0 || !m.bwlimit) {
				exclude_free(&m.ex);
				return cli_usage_error("mirror", "--bwlimit '%s': not a rate (e.g. "
						       "20M for 20 MiB/s)", optarg);
			}
			break;
		case 'B':
			if (size_parse(optarg, &v) < 0 || v > UINT32_MAX ||
			    !proto_block_size_ok((uint32_t)v)) {
				exclude_free(&m.ex);
				return cli_usage_error("mirror", "--block-size '%s': a power of two "
						       "from 4KiB to 1MiB", optarg);
			}
			m.o.block_size = (uint32_t)v;
			break;
		case 'C': m.cache_dir = optarg; break;
		case 'p':
			if (progress_mode(optarg, &m.progress) < 0) {
				exclude_free(&m.ex);
				return cli_usage_error("mirror", "--progress '%s': auto, always or "
						       "never", optarg);
			}
			break;
		case 'j': m.json = true; break;
		case 'k': m.psk = optarg; break;
		case 'f': m.force = true; break;
		case 'q': m.quiet = true; break;
		case 'h': mirror_usage(stdout); exclude_free(&m.ex); return EX_OK;
		default: exclude_free(&m.ex); return cli_usage_error("mirror", "unknown option");
		}
	}
	if (argc - optind != 2) {
		exclude_free(&m.ex);
		return cli_usage_error("mirror", "give SRC_DIR and HOST:PORT (or DEST_DIR)");
	}
	m.src = argv[optind];
	m.dest = argv[optind + 1];
	m.o.exclude = m.ex.n ? &m.ex : NULL;
	m.o.progress = m.progress && !m.json;
	rc = mirror_check_trees(&m);
	if (rc == 0 && tls_opts_init(&m.to, "", m.psk, NULL, NULL, NULL, NULL, why,
				     sizeof(why)) < 0) {
		fprintf(stderr, "twinfs mirror: %s\n", why);
		rc = EX_CONFIG;
	}
	if (rc == 0)
		rc = mirror_go(&m);
	exclude_free(&m.ex);
	return rc;
}
