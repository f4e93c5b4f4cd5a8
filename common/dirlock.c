/*
 * dirlock — exclusive flock on a directory fd, and who holds it (read from
 * /proc/locks, since flock itself does not tell). Main thread only.
 *
 * flock works on a directory opened O_RDONLY, unlike fcntl/OFD write
 * locks, which need a file open for writing; so the store itself is the
 * lock and no lock file has to live inside it (where the mount and the
 * peer would see it).
 */
#include "common/dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

pid_t dirlock_holder(dev_t dev, ino_t ino)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	pid_t pid = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF";
		 * waiters read "1: -> FLOCK ..." and are skipped */
		char kind[16], mode[16], rw[16];
		unsigned int maj, min;
		unsigned long long i;
		long p;

		if (sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode, rw, &p,
			   &maj, &min, &i) != 7)
			continue;
		if (strcmp(kind, "FLOCK") == 0 && maj == major(dev) && min == minor(dev) &&
		    i == (unsigned long long)ino) {
			pid = (pid_t)p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int dirlock_take(const char *dir, struct dirlock *l, pid_t *holder)
{
	struct stat st;
	int fd, rc;

	*holder = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (rc == -EBUSY && fstat(fd, &st) == 0)
			*holder = dirlock_holder(st.st_dev, st.st_ino);
		close(fd);
		return rc;
	}
	l->fd = fd;
	return 0;
}

int dirlock_rebind(struct dirlock *l)
{
	char path[64];
	int fd;

	if (l->fd < 0)
		return 0;
	/* a new open file description, so that its lock is this process's */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", l->fd);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	flock(l->fd, LOCK_UN);
	close(l->fd);
	l->fd = -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int rc = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return rc;
	}
	l->fd = fd;
	return 0;
}

void dirlock_release(struct dirlock *l)
{
	if (l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
}
