/*
 * mountrec — reads and writes STATE/mount ("store PATH\nmountpoint
 * PATH\n"). Owns only that file. Written once per mount start, read by
 * CLI commands; never touched by the FUSE threads.
 */
#include "netsync/roles/mountrec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mountrec_write(const char *state_dir, const char *store, const char *mountpoint)
{
	char path[4096], tmp[4200];
	FILE *f;
	int rc = 0, fd;

	snprintf(path, sizeof(path), "%s/mount", state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	/* 0600 whatever the umask (the mount runs with umask 0, fs/fs.c): no
	 * file in STATE is for other users */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return rc;
	}
	if (fprintf(f, "store %s\nmountpoint %s\n", store, mountpoint) < 0 ||
	    fflush(f) != 0 || fsync(fileno(f)) < 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int mountrec_read(const char *state_dir, char *store, size_t store_len,
		  char *mountpoint, size_t mp_len)
{
	char path[4096], line[4200];
	bool got_store = false;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mount", state_dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (strncmp(line, "store ", 6) == 0) {
			if (store)
				snprintf(store, store_len, "%s", line + 6);
			got_store = true;
		} else if (strncmp(line, "mountpoint ", 11) == 0 && mountpoint) {
			snprintf(mountpoint, mp_len, "%s", line + 11);
		}
	}
	fclose(f);
	return got_store ? 0 : -EBADMSG;
}
