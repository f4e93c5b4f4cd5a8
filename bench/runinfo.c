/*
 * runinfo — collects the description of a benchmark run (host, command
 * line, parameters, targets) from uname, /proc and statvfs, and writes it
 * as the "run" object of the result JSON. Main thread only; it reads
 * system files and never touches a target beyond statvfs.
 */
#include "bench/runinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/json.h"
#include "common/clock.h"
#include "version.h"

void runinfo_shell_quote(char *buf, size_t len, const char *arg)
{
	size_t n = strlen(buf);
	int plain = *arg != '\0';

	for (const char *p = arg; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789-_./=:,+@%", *p))
			plain = 0;
	if (n && n + 1 < len)
		buf[n++] = ' ';
	if (plain) {
		snprintf(buf + n, len - n, "%s", arg);
		return;
	}
	/* 'it'\''s': single quotes, each embedded quote closed and escaped. */
	if (n + 1 < len)
		buf[n++] = '\'';
	for (const char *p = arg; *p && n + 5 < len; p++) {
		if (*p == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *p;
		}
	}
	if (n + 1 < len)
		buf[n++] = '\'';
	buf[n < len ? n : len - 1] = '\0';
}

/* The value of "key : value" lines (cpuinfo) or "Key: N kB" (meminfo). */
static int runinfo_proc_field(const char *file, const char *key, char *out,
			      size_t len)
{
	FILE *f = fopen(file, "re");
	char line[1024];
	size_t kl = strlen(key);
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char *v;

		if (strncmp(line, key, kl) != 0 || (line[kl] != ':' && line[kl] != ' ' &&
						    line[kl] != '\t'))
			continue;
		v = strchr(line, ':');
		if (!v)
			continue;
		for (v++; *v == ' ' || *v == '\t'; v++)
			;
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, len, "%s", v);
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

static uint64_t runinfo_meminfo(const char *key)
{
	char v[64];

	if (runinfo_proc_field("/proc/meminfo", key, v, sizeof v))
		return 0;
	return strtoull(v, NULL, 10) * 1024;	/* the kernel writes kB = KiB */
}

void runinfo_init(struct runinfo *ri, int argc, char **argv)
{
	static const char *const cpu_keys[] = { "model name", "Model", "cpu model",
						"Processor", "cpu" };
	struct utsname u;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	memset(ri, 0, sizeof(*ri));
	snprintf(ri->version, sizeof ri->version, "%s", TWINFS_VERSION);
	runinfo_shell_quote(ri->command_line, sizeof ri->command_line, "twinfs");
	for (int i = 0; i < argc; i++)
		runinfo_shell_quote(ri->command_line, sizeof ri->command_line, argv[i]);
	if (gethostname(ri->host, sizeof ri->host - 1) < 0)
		ri->host[0] = '\0';
	if (uname(&u) == 0) {
		snprintf(ri->kernel, sizeof ri->kernel, "%.64s %.180s", u.sysname, u.release);
		snprintf(ri->kernel_build, sizeof ri->kernel_build, "%s", u.version);
		snprintf(ri->arch, sizeof ri->arch, "%s", u.machine);
	}
	for (size_t i = 0; i < sizeof(cpu_keys) / sizeof(cpu_keys[0]); i++)
		if (runinfo_proc_field("/proc/cpuinfo", cpu_keys[i], ri->cpu_model,
				       sizeof ri->cpu_model) == 0)
			break;
	ri->cpus = n > 0 ? (int)n : 1;
	ri->mem_total = runinfo_meminfo("MemTotal");
	ri->mem_available = runinfo_meminfo("MemAvailable");
	clock_wall_str(ri->started, sizeof ri->started);
}

void runinfo_finish(struct runinfo *ri)
{
	clock_wall_str(ri->finished, sizeof ri->finished);
}

static struct runinfo_param *runinfo_param(struct runinfo *ri, const char *key,
					   enum runinfo_type type)
{
	struct runinfo_param *p;

	if (ri->nparams == RUNINFO_MAX_PARAMS)
		return NULL;
	p = &ri->params[ri->nparams++];
	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof p->key, "%s", key);
	p->type = type;
	return p;
}

void runinfo_param_str(struct runinfo *ri, const char *key, const char *v)
{
	struct runinfo_param *p = runinfo_param(ri, key, RUNINFO_STR);

	if (p)
		snprintf(p->s, sizeof p->s, "%s", v ? v : "");
}

void runinfo_param_uint(struct runinfo *ri, const char *key, uint64_t v)
{
	struct runinfo_param *p = runinfo_param(ri, key, RUNINFO_UINT);

	if (p)
		p->u = v;
}

void runinfo_param_int(struct runinfo *ri, const char *key, int64_t v)
{
	struct runinfo_param *p = runinfo_param(ri, key, RUNINFO_INT);

	if (p)
		p->i = v;
}

void runinfo_param_double(struct runinfo *ri, const char *key, double v)
{
	struct runinfo_param *p = runinfo_param(ri, key, RUNINFO_DOUBLE);

	if (p)
		p->d = v;
}

void runinfo_param_bool(struct runinfo *ri, const char *key, int v)
{
	struct runinfo_param *p = runinfo_param(ri, key, RUNINFO_BOOL);

	if (p)
		p->i = !!v;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void runinfo_unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Length of mount point mp if it is path or one of its parents, else 0. */
static size_t runinfo_prefix(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (strcmp(mp, "/") == 0)
		return 1;
	if (strncmp(mp, path, n) == 0 && (path[n] == '\0' || path[n] == '/'))
		return n;
	return 0;
}

int runinfo_mount_parse(const char *mountinfo, const char *real_path,
			struct runinfo_target *t)
{
	const char *line = mountinfo;
	size_t best = 0;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096], *f[12], *save = NULL, *dash = NULL;
		int nf = 0;
		size_t n;

		if (len < sizeof buf) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			for (char *tok = strtok_r(buf, " ", &save); tok && nf < 12;
			     tok = strtok_r(NULL, " ", &save)) {
				if (strcmp(tok, "-") == 0 && nf >= 6) {
					dash = tok;
					break;
				}
				f[nf++] = tok;
			}
			/* id parent dev root mountpoint options [optional...] -
			 * fstype source super_options */
			if (dash && nf >= 6) {
				char *fstype = strtok_r(NULL, " ", &save);
				char *source = strtok_r(NULL, " ", &save);
				char *super = strtok_r(NULL, " ", &save);

				runinfo_unescape(f[4]);
				n = runinfo_prefix(f[4], real_path);
				if (fstype && n && n >= best) {
					best = n;
					snprintf(t->mountpoint, sizeof t->mountpoint, "%s", f[4]);
					snprintf(t->fstype, sizeof t->fstype, "%s", fstype);
					snprintf(t->source, sizeof t->source, "%s",
						 source ? source : "");
					snprintf(t->options, sizeof t->options, "%s", f[5]);
					snprintf(t->super_options, sizeof t->super_options,
						 "%s", super ? super : "");
					runinfo_unescape(t->source);
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return best ? 0 : -ENOENT;
}

int runinfo_mount_of(const char *path, struct runinfo_target *t)
{
	char real[PATH_MAX], *text = NULL;
	size_t cap = 0, len = 0;
	FILE *f;
	int rc;

	if (!realpath(path, real))
		return -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *p = realloc(text, cap ? 2 * cap : 65536);

			if (!p) {
				fclose(f);
				free(text);
				return -ENOMEM;
			}
			text = p;
			cap = cap ? 2 * cap : 65536;
		}
		size_t got = fread(text + len, 1, 4096, f);

		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	text[len] = '\0';
	rc = runinfo_mount_parse(text, real, t);
	free(text);
	return rc;
}

int runinfo_add_target(struct runinfo *ri, const char *path)
{
	struct runinfo_target *t;
	struct statvfs sv;

	if (ri->ntargets == RUNINFO_MAX_TARGETS)
		return -ENOSPC;
	t = &ri->targets[ri->ntargets++];
	memset(t, 0, sizeof(*t));
	snprintf(t->path, sizeof t->path, "%s", path);
	runinfo_mount_of(path, t);
	if (statvfs(path, &sv) < 0)
		return -errno;
	t->block_size = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
	t->free_bytes = (uint64_t)sv.f_bavail * t->block_size;
	t->total_bytes = (uint64_t)sv.f_blocks * t->block_size;
	return 0;
}

static void runinfo_json_kv(struct json *j, const char *k, const char *v)
{
	json_key(j, k);
	json_string(j, v);
}

void runinfo_write_json(struct json *j, const struct runinfo *ri)
{
	json_key(j, "run");
	json_object_begin(j);
	runinfo_json_kv(j, "twinfs_version", ri->version);
	runinfo_json_kv(j, "command_line", ri->command_line);
	runinfo_json_kv(j, "started", ri->started);
	runinfo_json_kv(j, "finished", ri->finished);
	json_key(j, "parameters");
	json_object_begin(j);
	for (size_t i = 0; i < ri->nparams; i++) {
		const struct runinfo_param *p = &ri->params[i];

		json_key(j, p->key);
		switch (p->type) {
		case RUNINFO_STR: json_string(j, p->s); break;
		case RUNINFO_UINT: json_uint(j, p->u); break;
		case RUNINFO_INT: json_int(j, p->i); break;
		case RUNINFO_DOUBLE: json_double(j, p->d); break;
		case RUNINFO_BOOL: json_bool(j, (int)p->i); break;
		}
	}
	json_object_end(j);
	json_key(j, "host");
	json_object_begin(j);
	runinfo_json_kv(j, "name", ri->host);
	runinfo_json_kv(j, "kernel", ri->kernel);
	runinfo_json_kv(j, "kernel_build", ri->kernel_build);
	runinfo_json_kv(j, "arch", ri->arch);
	runinfo_json_kv(j, "cpu_model", ri->cpu_model);
	json_key(j, "cpus"); json_int(j, ri->cpus);
	json_key(j, "mem_total_bytes"); json_uint(j, ri->mem_total);
	json_key(j, "mem_available_bytes"); json_uint(j, ri->mem_available);
	json_object_end(j);
	json_key(j, "targets");
	json_array_begin(j);
	for (size_t i = 0; i < ri->ntargets; i++) {
		const struct runinfo_target *t = &ri->targets[i];

		json_object_begin(j);
		runinfo_json_kv(j, "path", t->path);
		runinfo_json_kv(j, "mountpoint", t->mountpoint);
		runinfo_json_kv(j, "fstype", t->fstype);
		runinfo_json_kv(j, "source", t->source);
		runinfo_json_kv(j, "mount_options", t->options);
		runinfo_json_kv(j, "super_options", t->super_options);
		json_key(j, "free_bytes"); json_uint(j, t->free_bytes);
		json_key(j, "total_bytes"); json_uint(j, t->total_bytes);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}
