/*
 * startcheck — refusals shared by `twinfs mount` and `twinfs serve`,
 * checked before anything is created so that a refused command leaves the
 * disk as it found it. Main thread only.
 */
#include "common/startcheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* realpath of PATH, or of its parent + its name when it does not exist. */
static int startcheck_resolve(const char *path, char *out)
{
	char parent[PATH_MAX], buf[PATH_MAX];
	const char *name;
	char *slash;
	size_t n;

	if (realpath(path, out))
		return 0;
	if (errno != ENOENT || strlen(path) >= sizeof(buf))
		return -errno;
	snprintf(buf, sizeof(buf), "%s", path);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash) {
		name = buf;
		snprintf(parent, sizeof(parent), ".");
	} else {
		*slash = '\0';
		name = slash + 1;
		snprintf(parent, sizeof(parent), "%s", slash == buf ? "/" : buf);
	}
	if (!realpath(parent, out))
		return -errno;
	n = strlen(out);
	if (n + 1 + strlen(name) >= PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(out + n, PATH_MAX - n, "%s%s", strcmp(out, "/") ? "/" : "", name);
	return 0;
}

bool startcheck_inside(const char *dir, const char *path)
{
	char rdir[PATH_MAX], rpath[PATH_MAX];
	size_t n;

	if (startcheck_resolve(dir, rdir) < 0 || startcheck_resolve(path, rpath) < 0)
		return false;
	n = strlen(rdir);
	if (strcmp(rdir, "/") == 0)
		return true;
	return strncmp(rpath, rdir, n) == 0 && (rpath[n] == '/' || rpath[n] == '\0');
}

int startcheck_state_outside(const char *cmd, const char *store, const char *state)
{
	if (!startcheck_inside(store, state))
		return 0;
	fprintf(stderr, "twinfs %s: refusing state directory %s: it is inside the store %s, "
		"whose changes could overwrite it; put it elsewhere (e.g. /var/lib/twinfs)\n",
		cmd, state, store);
	return -EINVAL;
}

/* One directory of the state dir (NAME "" for the top): a directory, not
 * writable by group or others, owned by us, with no symlink in it. 0,
 * -ENOENT if it does not exist, or -EPERM after printing why. */
static int startcheck_state_dir(const char *cmd, const char *state, const char *name)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	if (snprintf(path, sizeof(path), "%s%s%s", state, *name ? "/" : "", name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	/* the state dir itself may be reached through a link of the admin's;
	 * journal/ and tls/ inside it may not */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (*name ? O_NOFOLLOW : 0));
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && *name) {
		fprintf(stderr, "twinfs %s: refusing state directory %s: %s is not a "
			"directory but a link or a file; twinfs follows no link in its state "
			"directory\n", cmd, state, name);
		return -EPERM;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "twinfs %s: refusing state directory %s: %s is owned by uid "
			"%u, not by this user (uid %u), who alone may change it; chown it\n",
			cmd, state, *name ? name : "it", (unsigned)st.st_uid,
			(unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr, "twinfs %s: refusing state directory %s: %s is writable by "
			"%s (mode %04o), who could replace the journal or the keys; chmod "
			"go-w it\n", cmd, state, *name ? name : "it",
			(st.st_mode & S_IWOTH) ? "others" : "its group",
			(unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode)) {
			fprintf(stderr, "twinfs %s: refusing state directory %s: %s%s%s is a "
				"symbolic link; twinfs creates none there and follows none: "
				"put the file itself there\n", cmd, state, name, *name ? "/" : "",
				de->d_name);
			rc = -EPERM;
			break;
		}
	}
	closedir(d);
	return rc;
}

int startcheck_state_safe(const char *cmd, const char *state)
{
	static const char *const dirs[] = { "", "journal", "tls" };
	int rc;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		rc = startcheck_state_dir(cmd, state, dirs[i]);
		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			if (rc != -EPERM)
				fprintf(stderr, "twinfs %s: state directory %s: %s\n", cmd, state,
					strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int startcheck_lock(const char *cmd, const char *what, const char *dir, struct dirlock *l)
{
	pid_t holder;
	int rc;

	rc = dirlock_take(dir, l, &holder);
	if (rc == -EBUSY && holder > 0)
		fprintf(stderr, "twinfs %s: %s %s is in use by another twinfs process "
			"(pid %ld); stop it first, one writer per %s\n", cmd, what, dir,
			(long)holder, what);
	else if (rc == -EBUSY)
		fprintf(stderr, "twinfs %s: %s %s is in use by another twinfs process; "
			"stop it first, one writer per %s\n", cmd, what, dir, what);
	else if (rc < 0)
		fprintf(stderr, "twinfs %s: %s %s: %s\n", cmd, what, dir, strerror(-rc));
	return rc;
}
