/*
 * repairs — the paths the peer failed to apply, for the sender to repair
 * from the store instead of replaying the same failing record forever:
 * what failed and why, how often in a row, up to which journal seq
 * records naming the path are replaced by its current state, and which
 * batch carried the repair (the path is repaired once the peer acks it).
 * A path that fails again and again is "stuck": it backs off the
 * reconnects and shows in status. Plain data; the sender's loop thread
 * owns it.
 */
#ifndef TWINFS_REPAIRS_H
#define TWINFS_REPAIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct repair {
	char *path;		/* store-relative, "" = the root */
	char what[32];		/* the op or frame the peer failed on */
	char reason[200];	/* the peer's words */
	unsigned failures;	/* failures in a row (0: follows from another) */
	uint64_t until;		/* records up to this seq naming it are replaced */
	uint64_t sent_end;	/* end seq of the last batch that carried it */
};

struct repairs {
	struct repair *r;
	size_t n, cap;
};

/* A path fails this many times in a row before it counts as stuck. */
#define REPAIRS_STUCK_AFTER 2

/* Takes the op and the path out of the peer's apply error text
 * ("rename 'a/b' on host: No such file or directory"). 0, or -EINVAL if
 * the text names no path. */
int repairs_parse(const char *text, char *what, size_t what_len, char *path,
		  size_t path_len);
/* The folder an apply error's text names as missing on the peer (its
 * trailing PROTO_NO_FOLDER "'<folder>']"), if it is a strict ancestor of
 * PATH: 0 with it in DIR, else -ENOENT. The caller checks it as a path. */
int repairs_hint(const char *text, const char *path, char *dir, size_t dir_len);
/* The peer failed on PATH (FAILED true) or PATH must be repaired with
 * another one (FAILED false, a rename's new name): records up to UNTIL
 * naming it (or below it) are replaced. Returns the entry or NULL. */
struct repair *repairs_note(struct repairs *rs, const char *path, const char *what,
			    const char *reason, uint64_t until, bool failed);
/* PATH is DIR or below it ("" is the root, above everything). */
bool repairs_under(const char *path, const char *dir);
/* The entry covering PATH (itself or an ancestor) for a record at SEQ
 * whose scope (repairs_scope of its own path) is highest in the tree, or
 * NULL. */
struct repair *repairs_covering(struct repairs *rs, const char *path, uint64_t seq);
/* An entry strictly below PATH that covers a record at SEQ (a rename of
 * PATH moves it), or NULL. */
struct repair *repairs_inside(struct repairs *rs, const char *path, uint64_t seq);
/* The current state of SCOPE goes out in the batch ending at END: every
 * entry at or below SCOPE is carried by it (done once END is acked). */
void repairs_carry(struct repairs *rs, const char *scope, uint64_t end);
/* The peer acked SEQ: entries whose repair it carried are done; each is
 * passed to done (may be NULL) before it goes. Returns how many went. */
size_t repairs_acked(struct repairs *rs, uint64_t seq,
		     void (*done)(const struct repair *r, void *arg), void *arg);
/* Entries that failed REPAIRS_STUCK_AFTER times or more; *first (may be
 * NULL) gets the first of them. */
size_t repairs_stuck(const struct repairs *rs, const struct repair **first);
/* How long to wait before reconnecting after the latest failure: 0 for a
 * first failure, then doubling from 1 s to 30 s. */
uint32_t repairs_backoff_ms(const struct repairs *rs);
/* What to replace for a record that R covers, into OUT, given PATH =
 * R's own path: PATH itself, or, once R failed again because something
 * above it is missing or of another type on the peer (ENOENT, ENOTDIR,
 * ELOOP), one directory higher for each further failure, up to the root
 * "". */
void repairs_scope(const struct repair *r, const char *path, char *out, size_t len);
void repairs_free(struct repairs *rs);

#endif
