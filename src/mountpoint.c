/*
 * mountpoint — start-up checks on the mountpoint of `twinfs mount`, and
 * the recovery of a mount whose daemon died. Main thread of the mount
 * command, before it forks or creates any file.
 *
 * Why a dead mount is detached here: kill -9 of the daemon leaves the
 * kernel mount in place, answering ENOTCONN ("Transport endpoint is not
 * connected") to everything, so a restart by systemd would fail forever
 * until an admin ran `fusermount3 -u`. A dead mount is safe to detach
 * only when it is ours: its type is fuse.twinfs and its source names the
 * same store (fs/ mounts with fsname=twinfs:STORE). Anything else at the
 * mountpoint, live or dead, belongs to someone else and is refused.
 */
#include "src/mountpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"

int mountpoint_resolve(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	const char *name;
	char *slash;
	size_t n;

	if (!*path || strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	snprintf(buf, sizeof(buf), "%s", path);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash) {
		name = buf;
		if (!realpath(".", parent))
			return -errno;
	} else {
		*slash = '\0';
		name = slash + 1;
		if (!realpath(slash == buf ? "/" : buf, parent))
			return -errno;
	}
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		/* "/", "." or "..": no last component to avoid */
		if (!realpath(path, out))
			return -errno;
		return 0;
	}
	if ((size_t)snprintf(out, len, "%s%s%s", parent,
			     strcmp(parent, "/") == 0 ? "" : "/", name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void mountpoint_unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

int mountpoint_lookup(const char *abs, char *fstype, size_t typelen,
		      char *source, size_t srclen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root MOUNTPOINT opts [optional...] - TYPE SOURCE sb-opts */
		char *save = NULL, *tok, *mnt = NULL, *type = NULL, *src = NULL;
		bool dash = false;
		int i = 0;

		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), i++) {
			if (i == 4) {
				mnt = tok;
			} else if (i > 5 && !dash && strcmp(tok, "-") == 0) {
				dash = true;
			} else if (dash && !type) {
				type = tok;
			} else if (dash && !src) {
				src = tok;
				break;
			}
		}
		if (!mnt || !type)
			continue;
		mountpoint_unescape(mnt);
		if (strcmp(mnt, abs) != 0)
			continue;
		/* later lines are mounted on top: keep the last match */
		snprintf(fstype, typelen, "%s", type);
		snprintf(source, srclen, "%s", src ? src : "");
		mountpoint_unescape(source);
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

/* umount2(MNT_DETACH) as root; `fusermount3 -uz` for a user's own mount. */
static int mountpoint_detach(const char *abs)
{
	int status;
	pid_t pid;

	if (umount2(abs, MNT_DETACH) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "--", abs, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

static void mountpoint_warn_nonempty(const char *abs)
{
	DIR *d = opendir(abs);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			log_warn("the mountpoint is not empty; its files are hidden while "
				 "twinfs is mounted over them", "mountpoint=%s", abs);
			break;
		}
	}
	closedir(d);
}

/*
 * Something is mounted at ABS (TYPE of SOURCE). A twinfs mount of this
 * store whose daemon is gone (statfs, which the kernel never answers from
 * its caches, fails with ENOTCONN) is detached; anything else is refused.
 * The caller holds the store's writer lock, so no live twinfs daemon
 * serves this store: statfs cannot wait on one.
 */
static int mountpoint_clear(const char *abs, const char *store, const char *type,
			    const char *source)
{
	char want[PATH_MAX + 16], rstore[PATH_MAX];
	struct statvfs sv;
	int rc;

	if (!realpath(store, rstore)) {
		rc = -errno;
		fprintf(stderr, "twinfs mount: store %s: %s\n", store, strerror(-rc));
		return rc;
	}
	snprintf(want, sizeof(want), "twinfs:%s", rstore);
	if (strcmp(type, "fuse.twinfs") != 0 || strcmp(source, want) != 0) {
		fprintf(stderr, "twinfs mount: mountpoint %s is busy: %s of %s is mounted "
			"there, not this store; unmount it first (fusermount3 -u or umount)\n",
			abs, type, source);
		return -EBUSY;
	}
	if (statvfs(abs, &sv) == 0) {
		fprintf(stderr, "twinfs mount: mountpoint %s is busy: a live twinfs mount of "
			"this store is there already; unmount it first\n", abs);
		return -EBUSY;
	}
	rc = -errno;
	if (rc != -ENOTCONN && rc != -ECONNABORTED) {
		fprintf(stderr, "twinfs mount: cannot mount at %s: the twinfs mount there "
			"fails: %s\n", abs, strerror(-rc));
		return -EBUSY;
	}
	rc = mountpoint_detach(abs);
	if (rc < 0) {
		fprintf(stderr, "twinfs mount: cannot detach the dead twinfs mount at %s: %s\n",
			abs, strerror(-rc));
		return rc;
	}
	log_warn("detached a dead twinfs mount of this store left by a daemon that died",
		 "mountpoint=%s store=%s", abs, rstore);
	return 0;
}

int mountpoint_prepare(const char *mnt, const char *store, bool nonempty_ok)
{
	char abs[PATH_MAX], type[64], source[PATH_MAX + 16];
	struct stat st;
	int rc;

	rc = mountpoint_resolve(mnt, abs, sizeof(abs));
	if (rc < 0) {
		fprintf(stderr, "twinfs mount: mountpoint %s: %s\n", mnt, strerror(-rc));
		return rc;
	}
	/* mountinfo first: nothing here calls into a mount that may hang */
	rc = mountpoint_lookup(abs, type, sizeof(type), source, sizeof(source));
	if (rc > 0)
		rc = mountpoint_clear(abs, store, type, source);
	if (rc < 0)
		return rc;
	if (stat(abs, &st) < 0) {
		rc = -errno;
		fprintf(stderr, "twinfs mount: mountpoint %s: %s\n", mnt, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs mount: mountpoint %s: %s\n", mnt, strerror(ENOTDIR));
		return -ENOTDIR;
	}
	if (!nonempty_ok)
		mountpoint_warn_nonempty(abs);
	return 0;
}
