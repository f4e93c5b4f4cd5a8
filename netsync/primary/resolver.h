/*
 * resolver — the primary's side of `twinfs resolve` and `--restore`: the
 * versions a secondary sends (ENTRY + DATA) land in STATE/incoming/; a
 * worker thread keeps the primary's losing versions aside and writes the
 * secondary's through the mountpoint (the kernel's caches and the journal
 * see ordinary writes). The loop feeds it; the worker touches only the
 * mountpoint, the store (read), STATE/conflicts and STATE/incoming, and
 * wakes the loop through an eventfd.
 */
#ifndef TWINFS_RESOLVER_H
#define TWINFS_RESOLVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "netsync/roles/resolution.h"
#include "netsync/wire/proto.h"

struct event_base;
struct event;

struct resolver_item {
	char *path;
	uint32_t mode, uid, gid;
	int64_t mtime_ns;
	char *target;		/* symlinks */
	int fd;			/* STATE/incoming/<n> for a regular file, else -1 */
	char *xattrs;		/* name NUL, u32 length, value; back to back */
	size_t xattrs_len;
};

struct resolver;
typedef void (*resolver_done_fn)(struct resolver *r, int rc, void *arg);

struct resolver {
	char *state, *store, *mountpoint;
	struct event_base *base;
	resolver_done_fn done;
	void *arg;
	bool active;		/* from start until done (or reset) */
	bool receiving;		/* versions still arriving */
	bool restore;		/* a conflict folder put back, not a resolution */
	struct resolution plan;	/* a resolution's */
	char stamp[32];
	struct resolver_item *in;
	size_t n, cap;
	/* the worker */
	pthread_t th;
	bool th_running;
	int efd;
	struct event *ev;
	int rc;
	char err[256];
	int sfd;		/* the store, read-only, while the worker runs */
	char folder[128];	/* its conflicts/ folder: <stamp>-resolve or -restore */
};

int resolver_init(struct resolver *r, struct event_base *base, const char *state,
		  const char *store, const char *mountpoint, resolver_done_fn done, void *arg);
void resolver_fini(struct resolver *r);
/* Begins receiving: a resolution with PLAN (taken over), or a restore.
 * 0 or -errno. */
int resolver_start(struct resolver *r, struct resolution *plan, bool restore,
		   const char *stamp);
int resolver_on_entry(struct resolver *r, const struct proto_entry *e);
int resolver_on_data(struct resolver *r, const struct proto_data *m);
/* An xattr of the version just received (an OP SETXATTR after its ENTRY). */
int resolver_on_xattr(struct resolver *r, const struct journal_op *op);
/* Every version is in: the worker applies them; done() follows on the
 * loop. 0 or -errno. */
int resolver_apply(struct resolver *r);
/* Drops what was received (a connection lost midway). */
void resolver_reset(struct resolver *r);

#endif
