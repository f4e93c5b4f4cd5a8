/*
 * conf — twinfs configuration: one table of keys (name, type, default,
 * bounds, doc) drives the YAML loader, the defaults, `config check`,
 * `config print` and the command-line overrides (conf_set). Errors are
 * collected with file:line:column, never only the first. Main thread only.
 */
#ifndef TWINFS_CONF_H
#define TWINFS_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum conf_mode { CONF_MODE_ASYNC = 0, CONF_MODE_SYNC = 1 };

struct conf {
	char *node_name;	/* node.name; default: hostname */
	char *store;		/* store: directory holding the user's files */
	char *state;		/* state: journal, ids, control socket */
	char *mountpoint;	/* mountpoint (primary) */
	char *listen;		/* listen: HOST:PORT (secondary) */
	char *peer;		/* peer: HOST:PORT (primary) */
	int mode;		/* mode: enum conf_mode */
	char *psk_file;		/* tls.psk_file */
	char *tls_cert;		/* tls.cert */
	char *tls_key;		/* tls.key */
	char *tls_peer_cert;	/* tls.peer_cert (pinned) */
	char *tls_peer_id;	/* tls.peer_id (pinned fingerprints) */
	char *metrics_listen;	/* metrics.listen */
	bool insecure;		/* tls.insecure: allow non-loopback without keys */
	uint64_t journal_size_limit;	/* journal.size_limit, bytes */
	uint32_t journal_commit_ms;	/* journal.commit_ms: group-commit window */
	uint64_t block_size;	/* delta.block_size, bytes (power of two) */
	uint32_t sync_timeout_s;	/* sync.timeout: degrade sync->async after */
	uint32_t heartbeat_s;	/* net.heartbeat */
	int log_level;		/* log.level: LOG_ERR..LOG_DEBUG */
	char *fuse_options;	/* fuse.options: extra -o options */
	bool fuse_passthrough;	/* fuse.passthrough */
	bool fuse_uring;	/* fuse.uring */
};

/* One located problem. */
struct conf_error {
	char *file;	/* NULL for command-line values */
	int line, column;	/* 1-based; 0 when unknown */
	char *key;	/* dotted key or NULL */
	char *msg;
	bool warning;	/* a note that does not make the config invalid */
	int err;	/* errno of a failed path check (ENOENT...), else 0 */
};

struct conf_diag {
	struct conf_error *v;
	size_t n, cap;
	int n_errors;		/* entries that are not warnings */
	/* Set by the caller before loading: a directory that does not exist
	 * yet is a warning, not an error (`config check` without --for: the
	 * file may be written before the directories are made). */
	bool lenient_paths;
	/* Set by `mount`: a directory that is a dead FUSE mount (ENOTCONN,
	 * its daemon killed) is taken as is; the caller clears or refuses it
	 * (src/mountpoint.h) before using the path. */
	bool allow_stale;
	/* The file conf_load_file read (malloc'd, freed by conf_diag_free):
	 * a key conf_validate finds missing is reported against it, not
	 * against the command line. */
	char *source;
};

/* What a config is for; decides which keys are required. */
enum conf_purpose {
	CONF_FOR_ANY,		/* config check: store+state, and mountpoint or listen */
	CONF_FOR_MOUNT,		/* store, state, mountpoint */
	CONF_FOR_SERVE,		/* store, state, listen */
};

void conf_init(struct conf *c);		/* every key at its default */
void conf_free(struct conf *c);

/* Loads FILE over *c. Returns 0, or -EINVAL with every problem in *d. */
int conf_load_file(struct conf *c, const char *file, struct conf_diag *d);
/* Loads FILE for a command that only needs to find the daemon (`status`,
 * `sync`): every key the file sets is read, and only a file that cannot
 * be read, is not YAML or has no `state:` fails. Problems with other keys
 * (a mountpoint whose daemon died, say) do not stop a status query.
 * Returns 0 with c->state set, or -errno / -EINVAL with the reason in *d
 * (only that reason). */
int conf_load_for_state(struct conf *c, const char *file, struct conf_diag *d);
/* Sets dotted KEY from a command-line string (same parsing and bounds as
 * the file). Returns 0 or -EINVAL with the problem in *d. */
int conf_set(struct conf *c, const char *key, const char *value, struct conf_diag *d);
/* Checks required keys and paths for PURPOSE. Returns 0 or -EINVAL. */
int conf_validate(const struct conf *c, enum conf_purpose purpose, struct conf_diag *d);

/* Prints the effective config as YAML (every key, defaults filled in). */
void conf_print(FILE *out, const struct conf *c);
/* Prints "file:line:col: key: msg" lines, one per error. */
void conf_diag_print(FILE *out, const struct conf_diag *d);
void conf_diag_free(struct conf_diag *d);
/* Forgets the errors about KEY (a flag that overrides the file's value:
 * `mount.twinfs CONFIG MOUNTPOINT` must not trip over the file's own
 * mountpoint). */
void conf_diag_drop_key(struct conf_diag *d, const char *key);
/* The errno shared by every error in d when all are failed path checks
 * (a missing store is "no input" whether a flag or the file named it),
 * else 0. */
int conf_diag_path_errno(const struct conf_diag *d);
/* Prints one line per key: name, type, default, range, doc (for --help
 * and `config keys`). */
void conf_print_keys(FILE *out);

/* One row of the key table as text, for the printers and the man page
 * (conf/confman.c). Strings are the table's constants (def: NULL when the
 * key has no default); min/max are empty for keys without bounds. */
struct conf_key_info {
	const char *name, *type, *def, *doc;
	char min[32], max[32];	/* as the loader reads them: 16MiB, 1000 */
	bool is_path;		/* a directory or file path */
	bool must_exist;	/* ...that must exist when the config is used */
	bool pow2;		/* a size that must be a power of two */
};
size_t conf_key_count(void);
void conf_key_get(size_t i, struct conf_key_info *out);
/* A size as the loader reads it back exactly ("1GiB", "128KiB", "4097");
 * returns buf. */
const char *conf_size_text(uint64_t v, char *buf, size_t len);

#endif
