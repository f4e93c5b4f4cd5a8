/*
 * treewalk — the iterative subtree walk behind the sender's baseline send.
 * Owns a stack of open DIR* (at most TREEWALK_DEPTH_MAX), one PATH_MAX path
 * buffer and a table of multiply-linked inodes seen. Runs on whichever
 * thread owns the walk (the sender's loop thread); it only reads the store
 * and never blocks on anything but the local filesystem.
 */
#include "netsync/primary/treewalk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "netsync/wire/path.h"

struct tw_frame {
	DIR *d;
	size_t plen;		/* length of this directory's path in w->path */
	size_t name_off;	/* where its own name starts in w->path */
};

struct tw_link {
	dev_t dev;
	ino_t ino;
	char *path;		/* NULL: free slot */
};

struct treewalk {
	struct path_ref root;	/* parent of the walk's root, and its name */
	bool root_done;
	bool root_is_dir;
	struct stat root_st;
	dev_t dev;		/* the store's filesystem: never leave it */
	bool close_top;		/* the top frame was yielded as left: pop it */
	int depth;
	struct tw_frame st[TREEWALK_DEPTH_MAX];
	char path[PATH_MAX];
	struct tw_link *links;	/* open addressing, power-of-two size */
	size_t n_links, cap_links;
};

static size_t tw_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = ((uint64_t)ino * 0x9E3779B97F4A7C15ull) ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static int tw_links_grow(struct treewalk *w)
{
	size_t cap = w->cap_links ? w->cap_links * 2 : 64;
	struct tw_link *nl = calloc(cap, sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	for (size_t i = 0; i < w->cap_links; i++) {
		struct tw_link *o = &w->links[i];
		size_t k;

		if (!o->path)
			continue;
		for (k = tw_hash(o->dev, o->ino, cap); nl[k].path; k = (k + 1) & (cap - 1))
			;
		nl[k] = *o;
	}
	free(w->links);
	w->links = nl;
	w->cap_links = cap;
	return 0;
}

/* The first path of (dev, ino) in this walk, or NULL after recording
 * PATH as its first. */
static int tw_link_seen(struct treewalk *w, const struct stat *st, const char *path,
			const char **first)
{
	size_t k;
	int rc;

	*first = NULL;
	if ((w->n_links + 1) * 2 > w->cap_links) {
		rc = tw_links_grow(w);
		if (rc < 0)
			return rc;
	}
	for (k = tw_hash(st->st_dev, st->st_ino, w->cap_links); w->links[k].path;
	     k = (k + 1) & (w->cap_links - 1)) {
		if (w->links[k].dev == st->st_dev && w->links[k].ino == st->st_ino) {
			*first = w->links[k].path;
			return 0;
		}
	}
	w->links[k].path = strdup(path);
	if (!w->links[k].path)
		return -ENOMEM;
	w->links[k].dev = st->st_dev;
	w->links[k].ino = st->st_ino;
	w->n_links++;
	return 0;
}

/* Opens directory NAME in DIRFD as the new top frame; the caller has put
 * its path in w->path[0..plen). */
static int tw_push(struct treewalk *w, int dirfd, const char *name, size_t plen,
		   size_t name_off)
{
	struct tw_frame *f;
	int fd;

	if (w->depth >= TREEWALK_DEPTH_MAX)
		return -ENAMETOOLONG;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = &w->st[w->depth];
	f->d = fdopendir(fd);
	if (!f->d) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	f->plen = plen;
	f->name_off = name_off;
	w->depth++;
	return 0;
}

int treewalk_open(int store_fd, const char *root, struct treewalk **out)
{
	struct treewalk *w;
	struct stat sst;
	int rc;

	if (strlen(root) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (fstat(store_fd, &sst) < 0)
		return -errno;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->dev = sst.st_dev;
	rc = path_resolve(store_fd, root, true, &w->root);
	if (rc < 0)
		goto out_free;
	if (fstatat(w->root.dirfd, w->root.name, &w->root_st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto out_put;
	}
	strcpy(w->path, root);
	w->root_is_dir = S_ISDIR(w->root_st.st_mode) && w->root_st.st_dev == w->dev;
	*out = w;
	return 0;
out_put:
	path_put(&w->root);
out_free:
	free(w);
	return rc;
}

int treewalk_next(struct treewalk *w, struct treewalk_item *it)
{
	struct tw_frame *f;
	struct dirent *de;
	size_t plen, nlen;
	int rc;

	memset(it, 0, sizeof(*it));
	if (!w->root_done) {
		w->root_done = true;
		if (w->root_is_dir) {
			size_t len = strlen(w->path);
			const char *slash = strrchr(w->path, '/');

			rc = tw_push(w, w->root.dirfd, w->root.name, len,
				     slash ? (size_t)(slash - w->path) + 1 : 0);
			if (rc < 0)
				return rc;
		}
		it->path = w->path;
		it->dirfd = w->root.dirfd;
		it->name = w->root.name;
		it->st = w->root_st;
		return 1;
	}
	if (w->close_top) {
		w->close_top = false;
		closedir(w->st[--w->depth].d);
	}
	while (w->depth > 0) {
		f = &w->st[w->depth - 1];
		errno = 0;
		de = readdir(f->d);
		if (!de) {
			if (errno)
				return -errno;
			/* Left: yielded with its parent's fd, then popped. */
			w->path[f->plen] = '\0';
			it->leave = true;
			it->path = w->path;
			if (w->depth > 1) {
				it->dirfd = dirfd(w->st[w->depth - 2].d);
				it->name = w->path + f->name_off;
			} else {
				it->dirfd = w->root.dirfd;
				it->name = w->root.name;
			}
			if (fstatat(it->dirfd, it->name, &it->st, AT_SYMLINK_NOFOLLOW) < 0) {
				closedir(f->d);
				w->depth--;
				continue;	/* gone meanwhile */
			}
			w->close_top = true;
			return 1;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		plen = f->plen;
		nlen = strlen(de->d_name);
		if (plen + 1 + nlen >= sizeof(w->path)) {
			log_error("a path in the store is too long to send", "dir=%.*s name=%s",
				  (int)plen, w->path, de->d_name);
			return -ENAMETOOLONG;
		}
		if (plen > 0)
			w->path[plen++] = '/';
		memcpy(w->path + plen, de->d_name, nlen + 1);
		if (fstatat(dirfd(f->d), de->d_name, &it->st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* removed since readdir: a later op says so */
			return -errno;
		}
		it->path = w->path;
		it->dirfd = dirfd(f->d);
		it->name = w->path + plen;
		if (!S_ISDIR(it->st.st_mode) && it->st.st_nlink > 1) {
			rc = tw_link_seen(w, &it->st, w->path, &it->link_to);
			if (rc < 0)
				return rc;
		}
		if (S_ISDIR(it->st.st_mode)) {
			if (it->st.st_dev != w->dev) {
				log_warn("a mount point inside the store is not replicated",
					 "path=%s", w->path);
				return 1;
			}
			rc = tw_push(w, dirfd(f->d), de->d_name, plen + nlen, plen);
			if (rc == -ENOENT)
				continue;
			if (rc < 0) {
				if (rc == -ENAMETOOLONG)
					log_error("the store is nested too deep to send", "path=%s "
						  "max_depth=%d", w->path, TREEWALK_DEPTH_MAX);
				return rc;
			}
		}
		return 1;
	}
	return 0;
}

void treewalk_free(struct treewalk *w)
{
	if (!w)
		return;
	while (w->depth > 0)
		closedir(w->st[--w->depth].d);
	for (size_t i = 0; i < w->cap_links; i++)
		free(w->links[i].path);
	free(w->links);
	path_put(&w->root);
	free(w);
}
