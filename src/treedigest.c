/*
 * treedigest — walks a tree in a fixed order (byte-wise sorted names) and
 * feeds one manifest line per entry into a streaming XXH3-128. Reads
 * files with plain read() in 1 MiB blocks; opens nothing for writing.
 * Called by `twinfs demo` from its main thread.
 */
#include "src/treedigest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/log.h"

#define TD_BLOCK (1u << 20)

struct td_walk {
	XXH3_state_t *st;
	struct tree_digest *out;
	char *buf;
};

static int td_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int td_file_hash(int dfd, const char *name, struct td_walk *w, uint64_t *h)
{
	XXH3_state_t *fs;
	ssize_t n;
	int fd, rc = 0;

	/* No O_NOFOLLOW: the caller has just lstat'ed a regular file, and the
	 * twinfs mount of this build fails O_NOFOLLOW opens with ELOOP. */
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fs = XXH3_createState();
	if (!fs) {
		rc = -ENOMEM;
		goto out_close;
	}
	XXH3_64bits_reset(fs);
	while ((n = read(fd, w->buf, TD_BLOCK)) > 0) {
		XXH3_64bits_update(fs, w->buf, (size_t)n);
		w->out->bytes += (uint64_t)n;
	}
	if (n < 0)
		rc = -errno;
	*h = XXH3_64bits_digest(fs);
	XXH3_freeState(fs);
out_close:
	close(fd);
	return rc;
}

/* Adds the entries of directory DFD (named REL) to the digest, recursing. */
static int td_dir(int dfd, const char *rel, struct td_walk *w)
{
	char **names = NULL, line[12288], target[4096], sub[4096];
	size_t n = 0, cap = 0;
	struct dirent *de;
	struct stat st;
	uint64_t h = 0;
	ssize_t tl;
	DIR *d;
	int rc = 0, cfd;

	d = fdopendir(dup(dfd));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				rc = -ENOMEM;
				goto out_free;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = -ENOMEM;
			goto out_free;
		}
		n++;
	}
	if (n > 1)	/* an empty directory has no array */
		qsort(names, n, sizeof(*names), td_cmp);
	for (size_t i = 0; i < n && rc == 0; i++) {
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", names[i]);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			break;
		}
		if (S_ISREG(st.st_mode)) {
			rc = td_file_hash(dfd, names[i], w, &h);
			snprintf(line, sizeof(line), "f %04o %" PRIu64 " %016" PRIx64 " %s\n",
				 (unsigned)(st.st_mode & 07777), (uint64_t)st.st_size, h, sub);
			w->out->files++;
		} else if (S_ISLNK(st.st_mode)) {
			tl = readlinkat(dfd, names[i], target, sizeof(target) - 1);
			if (tl < 0) {
				rc = -errno;
				break;
			}
			target[tl] = '\0';
			snprintf(line, sizeof(line), "l %s -> %s\n", sub, target);
			w->out->symlinks++;
		} else if (S_ISDIR(st.st_mode)) {
			snprintf(line, sizeof(line), "d %04o %s\n",
				 (unsigned)(st.st_mode & 07777), sub);
			w->out->dirs++;
		} else {
			snprintf(line, sizeof(line), "o %06o %s\n", (unsigned)st.st_mode, sub);
			w->out->others++;
		}
		if (rc < 0)
			break;
		XXH3_128bits_update(w->st, line, strlen(line));
		if (S_ISDIR(st.st_mode)) {
			cfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC);
			if (cfd < 0) {
				rc = -errno;
				break;
			}
			rc = td_dir(cfd, sub, w);
			close(cfd);
		}
	}
	if (rc < 0)
		log_error("cannot read a file while hashing the tree", "path=%s err=%s",
			  rel, strerror(-rc));
out_free:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int tree_digest(const char *root, struct tree_digest *out)
{
	struct td_walk w = { 0 };
	XXH128_hash_t h;
	struct stat st;
	char line[32];
	int fd, rc;

	memset(out, 0, sizeof(*out));
	w.out = out;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w.st = XXH3_createState();
	w.buf = malloc(TD_BLOCK);
	if (!w.st || !w.buf) {
		rc = -ENOMEM;
		goto out_free;
	}
	XXH3_128bits_reset(w.st);
	if (fstat(fd, &st) == 0) {
		snprintf(line, sizeof(line), "root %04o\n", (unsigned)(st.st_mode & 07777));
		XXH3_128bits_update(w.st, line, strlen(line));
	}
	rc = td_dir(fd, "", &w);
	h = XXH3_128bits_digest(w.st);
	snprintf(out->hex, sizeof(out->hex), "%016llx%016llx",
		 (unsigned long long)h.high64, (unsigned long long)h.low64);
out_free:
	if (w.st)
		XXH3_freeState(w.st);
	free(w.buf);
	close(fd);
	return rc;
}
