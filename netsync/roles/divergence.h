/*
 * divergence — a split brain, path by path: the paths each node changed
 * after the common point, with each side's version (type, mode, size,
 * mtime, content digest, link count), as the two nodes exchange them in DIVERGED
 * frames (docs/protocol.md, "Split brain"). Both ends run the same
 * exchange: each sends its own list (flagged last), answers with its
 * versions of the paths only the other listed (flagged answer, last), and
 * keeps the paths whose versions differ. Runs on a daemon's loop thread;
 * reads (and hashes) the store's versions there.
 */
#ifndef TWINFS_DIVERGENCE_H
#define TWINFS_DIVERGENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/wire/proto.h"

struct json;

struct div_side {
	uint32_t mode;		/* 0: absent */
	uint64_t size;
	int64_t mtime_ns;
	uint8_t hash[16];
	uint32_t uid, gid;
	uint8_t xattrs[16];	/* digest of the replicated xattrs */
	uint32_t nlink;		/* names of the inode (1 for a folder): a
				 * file's hard-link group is part of it */
};

struct div_entry {
	char *path;
	struct div_side here, peer;
	bool changed_here, changed_peer;
	bool have_peer;		/* the peer's version is known */
	bool whole;		/* a folder that moved on one node (its journal
				 * says renamed, or the secondary held back its
				 * move): it stands for everything in it, is
				 * held whole in the stream and resolved with
				 * what it holds (PROTO_DIV_MODE_WHOLE) */
};

struct divergence {
	struct div_entry *e;	/* sorted by path once complete */
	size_t n, cap;
	bool peer_listed;	/* the peer's list is complete */
	uint64_t hash_budget;	/* content bytes this exchange may still hash */
	bool complete;		/* both lists and both answers are in */
	char peer_name[64];	/* for conflict copies (resolve) */
	uint64_t held;		/* HELD frames sent (secondary) or taken (primary) */
};

/*
 * Starts the exchange: PATHS (LEN bytes of NUL-terminated store paths:
 * what this node changed after the common point; an entry "/PATH" marks
 * PATH as moved, tail.h) are read from the store
 * under STORE_FD and sent as DIVERGED frames, the last one flagged.
 * Returns 0 or -errno.
 */
int divergence_begin(struct divergence *d, int store_fd, const char *paths, size_t len,
		     struct evbuffer *out);
/* A DIVERGED frame from the peer. 1 when the exchange is complete (the
 * list then holds only paths that differ), 0 if not yet, -errno. */
int divergence_on_frame(struct divergence *d, int store_fd, const struct proto_frame *f,
			struct evbuffer *out);
void divergence_free(struct divergence *d);
/* Reads this node's version of every listed path again (the primary's
 * store changes during the split brain's stream). 0 or -errno. */
int divergence_refresh(struct divergence *d, int store_fd);
/*
 * Once the exchange is complete and the primary streams (docs/protocol.md,
 * "Split brain"), a path only the primary changed is not a conflict: its
 * changes reach the secondary. Keeps the entries the secondary changed
 * (SECONDARY: this node is the secondary). Returns how many remain.
 */
size_t divergence_keep_secondary(struct divergence *d, bool secondary);
/* The entry of PATH, or NULL. */
const struct div_entry *divergence_lookup(const struct divergence *d, const char *path);
/*
 * The secondary held a frame of the stream back for PATH: the primary
 * changed it. Unless the list has it as changed on both already, PATH
 * joins it so (changed on both) and goes to the primary in a DIVERGED
 * frame flagged HELD. 1 if sent, 0 if not needed, -errno. The primary's
 * side is divergence_on_frame (returns 2 for HELD frames). Both count
 * them in d->held, so that `resolve` can tell both lists are the same.
 * WHOLE: PATH is a folder whose move was held back (div_entry.whole); a
 * listed path becoming whole is sent again, so both plans agree.
 */
int divergence_hold(struct divergence *d, int store_fd, const char *path, bool whole,
		    struct evbuffer *out);
/* The primary, as `resolve` begins: its versions of every listed path,
 * refreshed (divergence_refresh), to the secondary (DIVERGED REFRESH),
 * which takes them as the peer's. 0 or -errno. */
int divergence_send_refresh(struct divergence *d, struct evbuffer *out);
/* "changed" as a word: "here", "peer" or "both". */
const char *divergence_changed(const struct div_entry *e);
/* "diverged_paths": N and "diverged": [...] into a status reply. */
void divergence_json(const struct divergence *d, struct json *w);

#endif
