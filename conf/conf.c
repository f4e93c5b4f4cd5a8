/*
 * conf — the table of configuration keys and everything driven by it:
 * defaults (conf_init), the YAML loader (conf_load_file), command-line
 * overrides (conf_set), validation for a purpose (conf_validate) and the
 * printers. Main thread only; no globals besides the constant table.
 *
 * Design: every key is one row of conf_keys[] (dotted name, type, field
 * offset, default as text, bounds, doc). Defaults, file values and flags
 * all go through conf_set_value(), so a value means the same thing
 * wherever it comes from, and a bound is checked in one place. Errors are
 * appended to a conf_diag with their file:line:column so that `config
 * check` can print every problem, not just the first.
 */
#include "conf/conf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "common/array.h"
#include "common/log.h"
#include "common/size.h"
#include "netsync/wire/addr.h"

#define CONF_MAX_VALUE 4096

enum conf_type {
	CT_STRING,	/* free text */
	CT_DIR,		/* an existing directory */
	CT_STATEDIR,	/* a directory, or a missing one whose parent exists */
	CT_FILE,	/* an existing regular file */
	CT_ADDR,	/* HOST:PORT */
	CT_MODE,	/* async | sync */
	CT_BOOL,
	CT_UINT,	/* seconds, milliseconds, counts */
	CT_SIZE,	/* bytes, with units */
	CT_POW2SIZE,	/* bytes, a power of two */
	CT_LOGLEVEL,
};

struct conf_key {
	const char *name;
	enum conf_type type;
	size_t off;
	const char *def;	/* NULL: unset */
	uint64_t min, max;	/* CT_UINT, CT_SIZE */
	const char *doc;
};

#define F(field) offsetof(struct conf, field)

static const struct conf_key conf_keys[] = {
	{ "node.name", CT_STRING, F(node_name), NULL, 0, 0,
	  "name of this node in logs and status (default: the hostname)" },
	{ "store", CT_DIR, F(store), NULL, 0, 0,
	  "directory that holds the replicated files" },
	{ "state", CT_STATEDIR, F(state), NULL, 0, 0,
	  "directory for the journal, node id and control socket (created if missing)" },
	{ "mountpoint", CT_DIR, F(mountpoint), NULL, 0, 0,
	  "where the primary mounts the store (primary only)" },
	{ "listen", CT_ADDR, F(listen), NULL, 0, 0,
	  "HOST:PORT the secondary accepts the primary on (secondary only)" },
	{ "peer", CT_ADDR, F(peer), NULL, 0, 0,
	  "HOST:PORT of the secondary (primary only; none: local-only mount)" },
	{ "mode", CT_MODE, F(mode), "async", 0, 0,
	  "async: writes return at local speed; sync: fsync/close wait for the peer" },
	{ "tls.psk_file", CT_FILE, F(psk_file), NULL, 0, 0,
	  "file with the pre-shared key both nodes use" },
	{ "tls.cert", CT_FILE, F(tls_cert), NULL, 0, 0,
	  "this node's certificate (PEM; with tls.key)" },
	{ "tls.key", CT_FILE, F(tls_key), NULL, 0, 0,
	  "this node's private key (PEM; with tls.cert)" },
	{ "tls.peer_cert", CT_FILE, F(tls_peer_cert), NULL, 0, 0,
	  "the peer's certificate (PEM), pinned by its fingerprint" },
	{ "tls.peer_id", CT_STRING, F(tls_peer_id), NULL, 0, 0,
	  "the peer's id from 'twinfs id' (pinned keys; several, comma-separated, "
	  "while a key is replaced)" },
	{ "tls.insecure", CT_BOOL, F(insecure), "false", 0, 0,
	  "allow non-loopback peers without keys (traffic is not authenticated)" },
	{ "journal.size_limit", CT_SIZE, F(journal_size_limit), "1GiB",
	  16ull << 20, 1ull << 40,
	  "unacknowledged journal kept on disk; beyond it files are marked for rescan" },
	{ "journal.commit_ms", CT_UINT, F(journal_commit_ms), "5", 1, 1000,
	  "group-commit window of the journal, milliseconds" },
	{ "delta.block_size", CT_POW2SIZE, F(block_size), "128KiB",
	  4096, 1ull << 20, "block size of the block-hash delta (a power of two, at most 1MiB)" },
	{ "sync.timeout", CT_UINT, F(sync_timeout_s), "10", 1, 3600,
	  "seconds a sync-mode fsync waits for the peer before degrading to async" },
	{ "net.heartbeat", CT_UINT, F(heartbeat_s), "1", 1, 60,
	  "seconds between heartbeats; the link is declared dead after 5 missed" },
	{ "metrics.listen", CT_ADDR, F(metrics_listen), NULL, 0, 0,
	  "HOST:PORT to serve Prometheus /metrics on (none: off; loopback unless "
	  "tls.insecure)" },
	{ "log.level", CT_LOGLEVEL, F(log_level), "notice", 0, 0,
	  "error, warn, notice, info or debug" },
	{ "fuse.options", CT_STRING, F(fuse_options), NULL, 0, 0,
	  "extra comma-separated FUSE mount options (-o)" },
	{ "fuse.passthrough", CT_BOOL, F(fuse_passthrough), "true", 0, 0,
	  "let the kernel read files and write new ones in the store directly "
	  "(FUSE passthrough; kernel 6.9+, mounted by root)" },
	{ "fuse.uring", CT_BOOL, F(fuse_uring), "true", 0, 0,
	  "take FUSE requests over io_uring on the caller's CPU (kernel 6.14+; "
	  "root turns fuse.enable_uring on; not in sync mode)" },
};

#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

static const char *const conf_type_names[] = {
	[CT_STRING] = "string", [CT_DIR] = "directory", [CT_STATEDIR] = "directory",
	[CT_FILE] = "file", [CT_ADDR] = "host:port", [CT_MODE] = "async|sync",
	[CT_BOOL] = "bool", [CT_UINT] = "integer", [CT_SIZE] = "size",
	[CT_POW2SIZE] = "size", [CT_LOGLEVEL] = "level",
};

/* ---- diagnostics ------------------------------------------------------ */

static void diag_vadd(struct conf_diag *d, bool warning, const char *file, int line,
		      int col, const char *key, const char *fmt, va_list ap)
	__attribute__((format(printf, 7, 0)));
static void diag_add(struct conf_diag *d, const char *file, int line, int col,
		     const char *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void diag_warn(struct conf_diag *d, const char *file, int line, int col,
		      const char *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void diag_add(struct conf_diag *d, const char *file, int line, int col,
		     const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(d, false, file, line, col, key, fmt, ap);
	va_end(ap);
}

static void diag_warn(struct conf_diag *d, const char *file, int line, int col,
		      const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(d, true, file, line, col, key, fmt, ap);
	va_end(ap);
}

static void diag_vadd(struct conf_diag *d, bool warning, const char *file, int line,
		      int col, const char *key, const char *fmt, va_list ap)
{
	struct conf_error *e;
	char *msg = NULL;

	if (!d)
		return;
	if (ARRAY_GROW(d->v, d->cap, d->n + 1, 8) < 0)
		return;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	e = &d->v[d->n++];
	e->warning = warning;
	if (!warning)
		d->n_errors++;
	e->file = file ? strdup(file) : NULL;
	e->line = line;
	e->column = col;
	e->key = key ? strdup(key) : NULL;
	e->msg = msg;
	e->err = 0;
}

void conf_diag_drop_key(struct conf_diag *d, const char *key)
{
	int j = 0;

	d->n_errors = 0;
	for (size_t i = 0; i < d->n; i++) {
		struct conf_error *e = &d->v[i];

		if (!e->warning && e->key && strcmp(e->key, key) == 0) {
			free(e->file);
			free(e->key);
			free(e->msg);
			continue;
		}
		if (!e->warning)
			d->n_errors++;
		d->v[j++] = *e;
	}
	d->n = j;
}

int conf_diag_path_errno(const struct conf_diag *d)
{
	int err = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct conf_error *e = &d->v[i];

		if (e->warning)
			continue;
		if (!e->err || (err && e->err != err))
			return 0;
		err = e->err;
	}
	return err;
}

void conf_diag_print(FILE *out, const struct conf_diag *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct conf_error *e = &d->v[i];

		if (e->file && e->line)
			fprintf(out, "%s:%d:%d: ", e->file, e->line, e->column);
		else if (e->file)
			fprintf(out, "%s: ", e->file);
		else
			fprintf(out, "command line: ");
		fprintf(out, "%s%s\n", e->warning ? "warning: " : "",
			e->msg ? e->msg : "out of memory");
	}
}

void conf_diag_free(struct conf_diag *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].key);
		free(d->v[i].msg);
	}
	free(d->v);
	free(d->source);
	memset(d, 0, sizeof(*d));
}

/* ---- value parsing ---------------------------------------------------- */

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Parses VALUE for key K into c. Returns 0, or -EINVAL after adding one
 * error (located at file:line:col) to d.
 */
static int conf_set_value(struct conf *c, const struct conf_key *k, const char *value,
			  struct conf_diag *d, const char *file, int line, int col)
{
	char *base = (char *)c + k->off;
	struct stat st;
	char sz[32], sz2[32];

#define BAD(...) do { diag_add(d, file, line, col, k->name, __VA_ARGS__); return -EINVAL; } while (0)
	/* a failed path check also records its errno (conf_diag_path_errno) */
#define PATHBAD(e, ...) do { \
		diag_add(d, file, line, col, k->name, __VA_ARGS__); \
		if (d && d->n) \
			d->v[d->n - 1].err = (e); \
		return -EINVAL; \
	} while (0)
	if (strlen(value) > CONF_MAX_VALUE)
		BAD("key '%s': value too long (%zu bytes, at most %d)", k->name,
		    strlen(value), CONF_MAX_VALUE);
	switch (k->type) {
	case CT_DIR:
	case CT_STATEDIR:
	case CT_FILE:
		if (!*value)
			BAD("key '%s': empty path", k->name);
		if (stat(value, &st) != 0) {
			int serr = errno;

			if (serr == ENOTCONN && k->type == CT_DIR && d && d->allow_stale)
				goto store_string;
			if (k->type == CT_STATEDIR && errno == ENOENT) {
				char *parent = strdup(value), *slash;
				int ok;

				if (!parent)
					return -ENOMEM;
				slash = strrchr(parent, '/');
				if (slash == parent)
					slash[1] = '\0';
				else if (slash)
					*slash = '\0';
				else
					strcpy(parent, ".");
				ok = stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
				free(parent);
				if (ok)
					goto store_string;
				PATHBAD(ENOENT, "key '%s': '%s' does not exist and neither does its parent "
				    "directory (create the parent first)", k->name, value);
			}
			if (errno == ENOENT && d && d->lenient_paths) {
				diag_warn(d, file, line, col, k->name,
					  "key '%s': '%s' does not exist yet (create it before "
					  "starting twinfs)", k->name, value);
				goto store_string;
			}
			PATHBAD(serr, "key '%s': '%s': %s", k->name, value, strerror(serr));
		}
		if (k->type != CT_FILE && !S_ISDIR(st.st_mode))
			PATHBAD(ENOTDIR, "key '%s': '%s' is not a directory", k->name, value);
		if (k->type == CT_FILE && !S_ISREG(st.st_mode))
			BAD("key '%s': '%s' is not a regular file", k->name, value);
		goto store_string;
	case CT_ADDR: {
		char host[256];
		uint16_t port;

		if (addr_parse(value, host, sizeof(host), &port))
			BAD("key '%s': '%s' is not HOST:PORT (port 1-65535; IPv6 as [::1]:7420)",
			    k->name, value);
		goto store_string;
	}
	case CT_STRING:
	store_string: {
		char **p = (char **)base, *dup = strdup(value);

		if (!dup)
			return -ENOMEM;
		free(*p);
		*p = dup;
		return 0;
	}
	case CT_MODE:
		if (strcmp(value, "async") == 0)
			*(int *)base = CONF_MODE_ASYNC;
		else if (strcmp(value, "sync") == 0)
			*(int *)base = CONF_MODE_SYNC;
		else
			BAD("key '%s': '%s' is not a mode (use async or sync)", k->name, value);
		return 0;
	case CT_BOOL:
		if (parse_bool(value, (bool *)base))
			BAD("key '%s': '%s' is not a boolean (use true or false)", k->name, value);
		return 0;
	case CT_LOGLEVEL: {
		int l = log_level_parse(value);

		if (l < 0)
			BAD("key '%s': '%s' is not a log level (error, warn, notice, info, debug)",
			    k->name, value);
		*(int *)base = l;
		return 0;
	}
	case CT_UINT: {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(value, &end, 10);
		if (!isdigit((unsigned char)value[0]) || *end || errno == ERANGE)
			BAD("key '%s': '%s' is not a non-negative integer", k->name, value);
		if (v < k->min || v > k->max)
			BAD("key '%s': %llu is out of range (%llu to %llu)", k->name, v,
			    (unsigned long long)k->min, (unsigned long long)k->max);
		*(uint32_t *)base = (uint32_t)v;
		return 0;
	}
	case CT_SIZE:
	case CT_POW2SIZE: {
		uint64_t v;

		if (size_parse(value, &v))
			BAD("key '%s': '%s' is not a size (e.g. 512M, 1GiB, 64KiB)", k->name, value);
		if (v < k->min || v > k->max)
			BAD("key '%s': %s is out of range (%s to %s)", k->name, value,
			    conf_size_text(k->min, sz, sizeof(sz)),
			    conf_size_text(k->max, sz2, sizeof(sz2)));
		if (k->type == CT_POW2SIZE && (v & (v - 1)))
			BAD("key '%s': %s is not a power of two", k->name, value);
		*(uint64_t *)base = v;
		return 0;
	}
	}
#undef BAD
#undef PATHBAD
	return -EINVAL;
}

static const struct conf_key *conf_find(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(conf_keys[i].name, name) == 0)
			return &conf_keys[i];
	return NULL;
}

/* Edit distance, for "did you mean". */
static size_t conf_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

/* The closest key name (also comparing against the last component), or NULL. */
static const char *conf_suggest(const char *name)
{
	const char *best = NULL;
	size_t bestd = SIZE_MAX;

	for (size_t i = 0; i < N_KEYS; i++) {
		size_t dd = conf_distance(name, conf_keys[i].name);
		const char *dot = strrchr(conf_keys[i].name, '.');

		if (dot) {
			size_t d2 = conf_distance(name, dot + 1);
			if (d2 < dd)
				dd = d2;
		}
		if (dd < bestd) {
			bestd = dd;
			best = conf_keys[i].name;
		}
	}
	if (best && bestd <= 3 && bestd * 3 <= strlen(name) + 2)
		return best;
	return NULL;
}

/* ---- public API ------------------------------------------------------- */

void conf_init(struct conf *c)
{
	char host[256];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < N_KEYS; i++)
		if (conf_keys[i].def)
			conf_set_value(c, &conf_keys[i], conf_keys[i].def, NULL, NULL, 0, 0);
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		c->node_name = strdup(host);
	}
}

void conf_free(struct conf *c)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		enum conf_type t = conf_keys[i].type;

		if (t == CT_STRING || t == CT_DIR || t == CT_STATEDIR || t == CT_FILE ||
		    t == CT_ADDR) {
			char **p = (char **)((char *)c + conf_keys[i].off);
			free(*p);
			*p = NULL;
		}
	}
}

int conf_set(struct conf *c, const char *key, const char *value, struct conf_diag *d)
{
	const struct conf_key *k = conf_find(key);

	if (!k) {
		const char *s = conf_suggest(key);

		diag_add(d, NULL, 0, 0, key, "unknown key '%s'%s%s%s", key,
			 s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
		return -EINVAL;
	}
	return conf_set_value(c, k, value, d, NULL, 0, 0);
}

/* A plain `~`, `null` or nothing: the key is present but unset. */
static bool conf_is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	for (size_t i = 0; i < 5; i++)
		if (strcmp((const char *)n->data.scalar.value, nulls[i]) == 0)
			return true;
	return false;
}

/* Unsets K: strings become NULL, everything else returns to its default. */
static void conf_unset(struct conf *c, const struct conf_key *k)
{
	enum conf_type t = k->type;

	if (t == CT_STRING || t == CT_DIR || t == CT_STATEDIR || t == CT_FILE ||
	    t == CT_ADDR) {
		char **p = (char **)((char *)c + k->off);
		free(*p);
		*p = NULL;
	} else if (k->def) {
		conf_set_value(c, k, k->def, NULL, NULL, 0, 0);
	}
}

/* Walks one mapping node. prefix: dotted path of the mapping ("" at top). */
static void conf_walk_map(struct conf *c, yaml_document_t *doc, yaml_node_t *map,
			  const char *prefix, const char *file, struct conf_diag *d)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(doc, p->value);
		int line = (int)kn->start_mark.line + 1, col = (int)kn->start_mark.column + 1;
		char name[256];
		const struct conf_key *k;
		bool section = false;

		if (kn->type != YAML_SCALAR_NODE) {
			diag_add(d, file, line, col, NULL, "a key must be a plain name");
			continue;
		}
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "",
			 (const char *)kn->data.scalar.value);

		/* Duplicate keys: libyaml keeps both; the first one wins silently
		 * elsewhere, so refuse the file instead. */
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *qk = yaml_document_get_node(doc, q->key);
			if (qk->type == YAML_SCALAR_NODE &&
			    strcmp((char *)qk->data.scalar.value, (char *)kn->data.scalar.value) == 0) {
				diag_add(d, file, line, col, name,
					 "duplicate key '%s' (first set at line %d)", name,
					 (int)qk->start_mark.line + 1);
				goto next;
			}
		}
		k = conf_find(name);
		if (!k) {
			size_t n = strlen(name);
			for (size_t i = 0; i < N_KEYS; i++)
				if (strncmp(conf_keys[i].name, name, n) == 0 &&
				    conf_keys[i].name[n] == '.')
					section = true;
		}
		if (section) {
			if (conf_is_null(vn))
				continue;	/* every key below commented out */
			if (vn->type != YAML_MAPPING_NODE) {
				diag_add(d, file, (int)vn->start_mark.line + 1,
					 (int)vn->start_mark.column + 1, name,
					 "key '%s' is a section: expected a mapping of keys below it",
					 name);
				continue;
			}
			conf_walk_map(c, doc, vn, name, file, d);
			continue;
		}
		if (!k) {
			const char *s = conf_suggest(name);
			diag_add(d, file, line, col, name, "unknown key '%s'%s%s%s", name,
				 s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
			continue;
		}
		if (conf_is_null(vn)) {
			conf_unset(c, k);
			continue;
		}
		if (vn->type != YAML_SCALAR_NODE) {
			diag_add(d, file, (int)vn->start_mark.line + 1,
				 (int)vn->start_mark.column + 1, name,
				 "key '%s': expected a single %s value, got a %s", name,
				 conf_type_names[k->type],
				 vn->type == YAML_MAPPING_NODE ? "mapping" : "list");
			continue;
		}
		if (vn->data.scalar.length != strlen((char *)vn->data.scalar.value)) {
			diag_add(d, file, (int)vn->start_mark.line + 1,
				 (int)vn->start_mark.column + 1, name,
				 "key '%s': value contains a NUL byte", name);
			continue;
		}
		conf_set_value(c, k, (const char *)vn->data.scalar.value, d, file,
			       (int)vn->start_mark.line + 1, (int)vn->start_mark.column + 1);
next:;
	}
}

/* Turns a byte offset into 1-based line and column (libyaml reports
 * encoding errors by offset only). */
static void conf_offset_to_mark(FILE *f, size_t offset, int *line, int *col)
{
	int ch;

	*line = 1;
	*col = 1;
	if (fseek(f, 0, SEEK_SET) != 0)
		return;
	for (size_t i = 0; i < offset && (ch = fgetc(f)) != EOF; i++) {
		if (ch == '\n') {
			(*line)++;
			*col = 1;
		} else if ((ch & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

int conf_load_file(struct conf *c, const char *file, struct conf_diag *d)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct stat st;
	FILE *f;
	int before = d ? d->n_errors : 0, rc = 0;

	if (d && !d->source)
		d->source = strdup(file);
	f = fopen(file, "rb");
	if (!f) {
		int e = errno;

		diag_add(d, file, 0, 0, NULL, "cannot open config file: %s", strerror(e));
		if (d && d->n)
			d->v[d->n - 1].err = e;
		return -e;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		diag_add(d, file, 0, 0, NULL, "is a directory, not a config file");
		fclose(f);
		return -EISDIR;
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		int line = (int)parser.problem_mark.line + 1;
		int col = (int)parser.problem_mark.column + 1;

		if (parser.error == YAML_READER_ERROR)	/* bad bytes: only an offset */
			conf_offset_to_mark(f, parser.problem_offset, &line, &col);
		diag_add(d, file, line, col, NULL, "invalid YAML: %s%s%s",
			 parser.problem ? parser.problem : "parse error",
			 parser.context ? " " : "", parser.context ? parser.context : "");
		rc = -EINVAL;
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		diag_add(d, file, 0, 0, NULL,
			 "the file is empty (see conf/twinfs.example.yaml for the keys)");
		rc = -EINVAL;
	} else if (root->type != YAML_MAPPING_NODE) {
		diag_add(d, file, (int)root->start_mark.line + 1,
			 (int)root->start_mark.column + 1, NULL,
			 "expected a mapping of keys (key: value) at the top level");
		rc = -EINVAL;
	} else {
		conf_walk_map(c, &doc, root, "", file, d);
	}
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	fclose(f);
	if (rc == 0 && d && d->n_errors > before)
		rc = -EINVAL;
	return rc;
}

int conf_load_for_state(struct conf *c, const char *file, struct conf_diag *d)
{
	struct conf_diag all = { .lenient_paths = true, .allow_stale = true };
	int rc = conf_load_file(c, file, &all);

	if (c->state && c->state[0]) {
		conf_diag_free(&all);
		return 0;
	}
	/* pass on the file-level problem (cannot open, bad YAML) or, if the
	 * file is fine, the missing key; nothing about other keys */
	for (size_t i = 0; i < all.n; i++) {
		struct conf_error *e = &all.v[i];

		if (e->warning || (e->key && strcmp(e->key, "state") != 0))
			continue;
		diag_add(d, e->file, e->line, e->column, e->key, "%s", e->msg);
		if (d && d->n)
			d->v[d->n - 1].err = e->err;
		conf_diag_free(&all);
		return rc < 0 && rc != -EINVAL ? rc : -EINVAL;
	}
	conf_diag_free(&all);
	diag_add(d, file, 0, 0, "state", "no 'state:' key: the file does not name the "
		 "daemon's state directory");
	return -EINVAL;
}

int conf_validate(const struct conf *c, enum conf_purpose purpose, struct conf_diag *d)
{
	int before = d ? d->n_errors : 0;
	const char *src = d ? d->source : NULL;	/* NULL: flags only */

#define NEED(field, key, why) \
	do { if (!c->field) diag_add(d, src, 0, 0, key, "missing required key '%s' (%s)", key, why); } while (0)
	NEED(store, "store", "the directory that holds the files");
	NEED(state, "state", "the directory for the journal and node id");
	switch (purpose) {
	case CONF_FOR_MOUNT:
		NEED(mountpoint, "mountpoint", "where to mount");
		break;
	case CONF_FOR_SERVE:
		NEED(listen, "listen", "HOST:PORT to accept the primary on");
		break;
	case CONF_FOR_ANY:
		if (!c->mountpoint && !c->listen)
			diag_add(d, src, 0, 0, NULL,
				 "missing required key: 'mountpoint' (a primary) or 'listen' "
				 "(a secondary)");
		break;
	}
#undef NEED
	if (c->store && c->state && strcmp(c->store, c->state) == 0)
		diag_add(d, src, 0, 0, "state",
			 "'state' must not be the store directory (the store holds only "
			 "your files)");
	if (c->store && c->mountpoint && strcmp(c->store, c->mountpoint) == 0)
		diag_add(d, src, 0, 0, "mountpoint",
			 "'mountpoint' must differ from 'store'");
	if ((c->tls_cert != NULL) != (c->tls_key != NULL))
		diag_add(d, src, 0, 0, "tls.cert",
			 "'tls.cert' and 'tls.key' must be given together");
	return d && d->n_errors > before ? -EINVAL : 0;
}

const char *conf_size_text(uint64_t v, char *buf, size_t len)
{
	if (v && (v & ((1ull << 40) - 1)) == 0)
		snprintf(buf, len, "%lluTiB", (unsigned long long)(v >> 40));
	else if (v && (v & ((1ull << 30) - 1)) == 0)
		snprintf(buf, len, "%lluGiB", (unsigned long long)(v >> 30));
	else if (v && (v & ((1ull << 20) - 1)) == 0)
		snprintf(buf, len, "%lluMiB", (unsigned long long)(v >> 20));
	else if (v && (v & 1023) == 0)
		snprintf(buf, len, "%lluKiB", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static void conf_print_value(FILE *out, const struct conf *c, const struct conf_key *k)
{
	const char *base = (const char *)c + k->off;
	char sz[32];

	switch (k->type) {
	case CT_STRING: case CT_DIR: case CT_STATEDIR: case CT_FILE: case CT_ADDR: {
		const char *s = *(char *const *)base;
		if (!s) {
			fputs("null", out);
			break;
		}
		fputc('"', out);
		for (; *s; s++) {
			if (*s == '"' || *s == '\\')
				fputc('\\', out);
			fputc(*s, out);
		}
		fputc('"', out);
		break;
	}
	case CT_MODE:
		fputs(*(const int *)base == CONF_MODE_SYNC ? "sync" : "async", out);
		break;
	case CT_BOOL:
		fputs(*(const bool *)base ? "true" : "false", out);
		break;
	case CT_LOGLEVEL:
		fputs(log_level_name(*(const int *)base), out);
		break;
	case CT_UINT:
		fprintf(out, "%u", *(const uint32_t *)base);
		break;
	case CT_SIZE: case CT_POW2SIZE:
		fputs(conf_size_text(*(const uint64_t *)base, sz, sizeof(sz)), out);
		break;
	}
}

void conf_print(FILE *out, const struct conf *c)
{
	char section[64] = "";

	fprintf(out, "# effective twinfs configuration (defaults filled in)\n");
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		const char *dot = strchr(k->name, '.');

		if (dot) {
			size_t n = (size_t)(dot - k->name);
			if (strncmp(section, k->name, n) != 0 || section[n] != '\0') {
				snprintf(section, sizeof(section), "%.*s", (int)n, k->name);
				fprintf(out, "%s:\n", section);
			}
			fprintf(out, "  %s: ", dot + 1);
		} else {
			section[0] = '\0';
			fprintf(out, "%s: ", k->name);
		}
		conf_print_value(out, c, k);
		fputc('\n', out);
	}
}

size_t conf_key_count(void)
{
	return N_KEYS;
}

void conf_key_get(size_t i, struct conf_key_info *out)
{
	const struct conf_key *k = &conf_keys[i];

	memset(out, 0, sizeof(*out));
	out->name = k->name;
	out->type = conf_type_names[k->type];
	out->def = k->def;
	if (!k->def && k->off == F(node_name))
		out->def = "the hostname";	/* as conf_init sets it */
	out->doc = k->doc;
	out->is_path = k->type == CT_DIR || k->type == CT_STATEDIR || k->type == CT_FILE;
	out->must_exist = k->type == CT_DIR || k->type == CT_FILE;
	out->pow2 = k->type == CT_POW2SIZE;
	if (k->type == CT_UINT) {
		snprintf(out->min, sizeof(out->min), "%llu", (unsigned long long)k->min);
		snprintf(out->max, sizeof(out->max), "%llu", (unsigned long long)k->max);
	} else if (k->type == CT_SIZE || k->type == CT_POW2SIZE) {
		conf_size_text(k->min, out->min, sizeof(out->min));
		conf_size_text(k->max, out->max, sizeof(out->max));
	}
}

void conf_print_keys(FILE *out)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		struct conf_key_info ki;
		char range[72] = "-";

		conf_key_get(i, &ki);
		if (ki.min[0])
			snprintf(range, sizeof(range), "%s..%s", ki.min, ki.max);
		fprintf(out, "  %-20s %-10s %-8s %-14s %s\n", ki.name, ki.type,
			ki.def ? ki.def : "-", range, ki.doc);
	}
}
