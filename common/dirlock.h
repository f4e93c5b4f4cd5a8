/*
 * dirlock — one writer per directory: an exclusive flock(2) on the
 * directory itself (its O_RDONLY fd), held for the life of a mount or
 * serve daemon. Taken on the store and on the state directory. The lock
 * adds no file (nothing appears in the store or through the mount), works
 * whatever state directory each process uses, and goes away with the
 * process, even after kill -9. Main thread only.
 */
#ifndef TWINFS_DIRLOCK_H
#define TWINFS_DIRLOCK_H

#include <sys/types.h>

struct dirlock {
	int fd;		/* -1: not held */
};

#define DIRLOCK_INIT { .fd = -1 }

/* Locks DIR (which must exist). 0; -EBUSY when another process holds it,
 * with *holder set to its PID (0 if /proc/locks does not say); or the
 * -errno of opening DIR. */
int dirlock_take(const char *dir, struct dirlock *l, pid_t *holder);

/* After fork(): makes the calling process the lock's recorded holder (the
 * PID /proc/locks shows, which the forking parent would otherwise keep
 * after it exits). 0, or -EBUSY if another process took it meanwhile. */
int dirlock_rebind(struct dirlock *l);

void dirlock_release(struct dirlock *l);

/* The PID holding a flock on the inode (dev, ino), from /proc/locks;
 * 0 if none is listed. */
pid_t dirlock_holder(dev_t dev, ino_t ino);

#endif
