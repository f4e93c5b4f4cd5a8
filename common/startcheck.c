/*
 * startcheck — refusals shared by `twinfs mount` and `twinfs serve`,
 * checked before anything is created so that a refused command leaves the
 * disk as it found it. Main thread only.
 */
#include "common/startcheck.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
