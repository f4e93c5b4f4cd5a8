/*
 * runinfo — what a benchmark run was: twinfs version, the command line,
 * every parameter, the host (name, kernel, CPU, memory), each target's
 * filesystem, mount options and free space, and when it started and ended.
 * Every result file opens with it, so two results can be compared and a
 * run repeated. Filled and read on the main thread only.
 */
#ifndef TWINFS_BENCH_RUNINFO_H
#define TWINFS_BENCH_RUNINFO_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct json;

#define RUNINFO_MAX_PARAMS 48
#define RUNINFO_MAX_TARGETS 16

enum runinfo_type { RUNINFO_STR, RUNINFO_UINT, RUNINFO_INT, RUNINFO_DOUBLE,
		    RUNINFO_BOOL };

struct runinfo_param {
	char key[32];
	enum runinfo_type type;
	char s[512];
	uint64_t u;
	int64_t i;
	double d;
};

struct runinfo_target {
	char path[PATH_MAX];		/* as given on the command line */
	char mountpoint[PATH_MAX];	/* "" when it could not be found */
	char fstype[64];		/* "ext4", "fuse.twinfs", ... */
	char source[256];		/* the device or the FUSE daemon's name */
	char options[1024];		/* per-mount options (rw,relatime) */
	char super_options[1024];	/* the filesystem's own options */
	uint64_t free_bytes;		/* statvfs f_bavail * f_frsize */
	uint64_t total_bytes;
	uint64_t block_size;		/* statvfs f_frsize */
};

struct runinfo {
	char version[32];
	char command_line[4096];	/* shell-quoted, "twinfs bench ..." */
	char host[256];
	char kernel[256];		/* uname -r */
	char kernel_build[256];		/* uname -v */
	char arch[72];
	char cpu_model[256];
	int cpus;			/* online */
	uint64_t mem_total, mem_available;	/* bytes, /proc/meminfo */
	char started[40], finished[40];	/* ISO 8601 with the zone */
	struct runinfo_param params[RUNINFO_MAX_PARAMS];
	size_t nparams;
	struct runinfo_target targets[RUNINFO_MAX_TARGETS];
	size_t ntargets;
};

/* Fills the host, version, command line ("twinfs" + argv) and start time.
 * Never fails: what cannot be read stays "" or 0. */
void runinfo_init(struct runinfo *ri, int argc, char **argv);
/* Parameters in the order they are added; a full table drops the rest
 * (RUNINFO_MAX_PARAMS is above what any command adds). */
void runinfo_param_str(struct runinfo *ri, const char *key, const char *v);
void runinfo_param_uint(struct runinfo *ri, const char *key, uint64_t v);
void runinfo_param_int(struct runinfo *ri, const char *key, int64_t v);
void runinfo_param_double(struct runinfo *ri, const char *key, double v);
void runinfo_param_bool(struct runinfo *ri, const char *key, int v);
/* Adds a target and reads its filesystem and free space now. 0, or -errno
 * from statvfs (the entry is added either way, with what could be read). */
int runinfo_add_target(struct runinfo *ri, const char *path);
/* Stamps the end time. */
void runinfo_finish(struct runinfo *ri);

/* Finds the mount that holds path in /proc/self/mountinfo (the deepest
 * mount point above its real path; the last one when mounts stack) and
 * fills t's mountpoint, fstype, source and options. 0 or -errno
 * (-ENOENT when no mount matches). */
int runinfo_mount_of(const char *path, struct runinfo_target *t);
/* Same, reading a mountinfo text instead of the live one (for tests). */
int runinfo_mount_parse(const char *mountinfo, const char *real_path,
			struct runinfo_target *t);

/* Writes the "run" key and its object into an open JSON object. */
void runinfo_write_json(struct json *j, const struct runinfo *ri);
/* Appends `arg` to buf (length len) quoted for a POSIX shell when it
 * needs it, after a space unless buf is empty. */
void runinfo_shell_quote(char *buf, size_t len, const char *arg);

#endif
