/*
 * sender_links — hard-link groups of the files a batch sends whole. Owns
 * the cursor's table of multiply-linked inodes sent (first name, names
 * counted) and the search of the store for the names a batch did not send.
 * Runs only on the primary thread's event_base (sender_int.h); reads the
 * store, never writes it.
 */
#include "netsync/primary/sender_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/buffer.h>

#include "common/array.h"
#include "common/log.h"
#include "journal/journal.h"
#include "netsync/primary/treewalk.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

/*
 * Hard links across walks. A walk links the names of an inode it meets
 * (treewalk.c); a batch may send one inode's names through different
 * walks and scan entries (two NEEDS_SCAN paths, a folder and a renamed
 * name), and each went over as an inode of its own. So the batch keeps
 * the first path of each multiply-linked file it sends whole, and a later
 * name of it is sent as LINK to that path (which the peer has by then:
 * frames apply in order). Hashed by inode: a baseline meets every such
 * file of the store. Only a walk records a first name, as it sends the
 * file's xattrs and opens it for its content then: a scan's entry goes
 * before its walk, and a name gone by the time of the walk would have
 * left every other name linked to an inode whose xattrs and content
 * never went.
 */
static void cursor_link_count(struct cursor *c, size_t i, const char *path)
{
	if (pathset_add(&c->blink_names, path, i) == 1)
		c->blink_names_n[i]++;
}

const char *cursor_link_known(const struct cursor *c, const struct stat *st,
			      const char *path)
{
	struct pathset_entry *e;
	char id[48];

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		return NULL;
	snprintf(id, sizeof(id), "%llx:%llx", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
	e = pathset_find(&c->blink_ids, id);
	return !e || strcmp(c->blinks[e->value], path) == 0 ? NULL : c->blinks[e->value];
}

const char *cursor_link_first(struct cursor *c, const struct stat *st, const char *path)
{
	struct pathset_entry *e;
	char id[48];

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		return NULL;
	snprintf(id, sizeof(id), "%llx:%llx", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
	e = pathset_find(&c->blink_ids, id);
	if (e) {
		cursor_link_count(c, e->value, path);
		return strcmp(c->blinks[e->value], path) == 0 ? NULL : c->blinks[e->value];
	}
	if (ARRAY_GROW(c->blinks, c->cap_blinks, c->n_blinks + 1, 16) < 0 ||
	    ARRAY_GROW(c->blink_names_n, c->cap_blink_names_n, c->n_blinks + 1, 16) < 0)
		return NULL;
	c->blinks[c->n_blinks] = strdup(path);
	if (!c->blinks[c->n_blinks])
		return NULL;
	if (pathset_add(&c->blink_ids, id, c->n_blinks) < 0) {
		free(c->blinks[c->n_blinks]);
		return NULL;
	}
	c->blink_names_n[c->n_blinks] = 0;
	cursor_link_count(c, c->n_blinks, path);
	c->n_blinks++;
	return NULL;
}

void cursor_forget_links(struct cursor *c)
{
	for (size_t i = 0; i < c->n_blinks; i++)
		free(c->blinks[i]);
	free(c->blinks);
	free(c->blink_names_n);
	pathset_clear(&c->blink_ids);
	pathset_clear(&c->blink_names);
	c->blinks = NULL;
	c->blink_names_n = NULL;
	c->n_blinks = c->cap_blinks = c->cap_blink_names_n = 0;
}

/* The linked files this batch sent fewer names of than the store has now
 * (their first name re-read): true if there is any; WANT[i] says which. */
static bool links_short(struct sender *s, bool *want)
{
	struct cursor *c = &s->c;
	struct pathset_entry *e;
	struct path_ref ref;
	bool any = false;
	struct stat st;
	char id[48];

	for (size_t i = 0; i < c->n_blinks; i++) {
		/* no symlink followed on the way, as for every store path */
		want[i] = false;
		if (path_resolve(s->store_fd, c->blinks[i], false, &ref) < 0)
			continue;
		if (fstatat(ref.dirfd, ref.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode) && st.st_nlink > c->blink_names_n[i]) {
			/* still the inode sent: another one there links nothing */
			snprintf(id, sizeof(id), "%llx:%llx", (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
			e = pathset_find(&c->blink_ids, id);
			want[i] = e && e->value == i;
		}
		path_put(&ref);
		any |= want[i];
	}
	return any;
}

/* LINK of the first name of inode I to PATH, another name of it here, and
 * its folder's times afterwards. 0 or -errno. */
static int links_put_one(struct sender *s, struct evbuffer *out, size_t i, const char *path)
{
	struct cursor *c = &s->c;
	struct journal_op op = { .type = JOP_LINK, .path = c->blinks[i], .path2 = path };
	char parent[PATH_MAX];
	char *slash;

	if (proto_encode_op(out, c->cur->b->end_seq, &op) < 0) {
		sender_set_error(s, "cannot send %s (name too long?)", path);
		return -EINVAL;
	}
	cursor_link_count(c, i, path);
	/* linking over its old name changes the folder's mtime there */
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	else
		parent[0] = '\0';
	return pathset_add(&c->attrs_after, parent, 0) < 0 ? -ENOMEM : 0;
}

/*
 * A file with several names sent whole by a scan or a walk (the journal
 * was full, or the store changed while not mounted) may have names the
 * batch did not touch: a name renamed while the journal overflowed, the
 * folder holding it renamed, while its other names stayed. The peer made
 * a new inode for what it was sent, and its other names still name the
 * old one. So once the walks are done, the store is searched (stat only)
 * for the other names of each such file, and each goes as LINK to the
 * first name sent: the peer replaces what it holds there (or finds it
 * linked already). The search costs a walk of the store's names, and only
 * happens for a batch that sent a linked file without all its names.
 */
int sender_put_link_groups(struct sender *s, struct evbuffer *out)
{
	struct cursor *c = &s->c;
	struct treewalk *w = NULL;
	struct treewalk_item it;
	struct pathset_entry *e;
	bool *want;
	char id[48];
	int rc = 0, sent = 0;

	want = calloc(c->n_blinks, sizeof(*want));
	if (!want)
		return -ENOMEM;
	if (!links_short(s, want))
		goto out;
	rc = treewalk_open(s->store_fd, "", &w);
	while (rc >= 0 && (rc = treewalk_next(w, &it)) > 0) {
		if (it.leave || S_ISDIR(it.st.st_mode) || it.st.st_nlink < 2)
			continue;
		snprintf(id, sizeof(id), "%llx:%llx", (unsigned long long)it.st.st_dev,
			 (unsigned long long)it.st.st_ino);
		e = pathset_find(&c->blink_ids, id);
		if (!e || !want[e->value] || pathset_find(&c->blink_names, it.path))
			continue;
		log_info("a name of a linked file sent whole was not in the batch; linking it",
			 "peer=%s path=/%s first=/%s", s->peer, it.path, c->blinks[e->value]);
		rc = links_put_one(s, out, e->value, it.path);
		sent = 1;
	}
	treewalk_free(w);
	if (rc < 0) {
		log_error("cannot search the store for the names of a linked file",
			  "err=%s", strerror(-rc));
		sender_set_error(s, "cannot search the store for linked names: %s",
				 strerror(-rc));
	}
out:
	free(want);
	/* once per batch: the table is done with */
	cursor_forget_links(c);
	return rc < 0 ? rc : sent;
}
