/*
 * posix_ops — runs one fixed sequence of POSIX operations under a root
 * directory and prints every result (errno names, attributes) and then
 * the resulting tree, so that fs_posix.sh can diff a run on a plain
 * directory against a run on a twinfs mount. Runs as root; the steps for
 * an unprivileged user run in a child process as uid/gid 65534.
 * Usage: posix_ops ROOT
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534

static int rootfd;

static const char *ename(int e)
{
	switch (e) {
	case 0: return "ok";
#define E(x) case x: return #x;
	E(ENOENT) E(EEXIST) E(ENOTEMPTY) E(EISDIR) E(ENOTDIR) E(EINVAL)
	E(ENAMETOOLONG) E(EACCES) E(EPERM) E(ENODATA) E(EXDEV) E(EBADF)
	E(EOPNOTSUPP) E(ENXIO)
	E(EBUSY) E(ELOOP) E(EFBIG) E(ENOSPC) E(ERANGE) E(EIO) E(ENOSYS)
#undef E
	default: {
		static char buf[32];

		snprintf(buf, sizeof(buf), "errno%d", e);
		return buf;
	}
	}
}

/* Prints "step: result" where result is ok or the errno name. */
static int res(const char *step, int r)
{
	printf("%s: %s\n", step, r < 0 ? ename(errno) : "ok");
	fflush(stdout);
	return r;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int put(const char *path, const char *data, mode_t mode)
{
	int fd = openat(rootfd, path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd < 0)
		return -1;
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void show_stat(const char *label, const char *path)
{
	struct stat st;

	if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		say("%s: stat %s", label, ename(errno));
		return;
	}
	say("%s: mode=%o uid=%u gid=%u size=%lld nlink=%lu", label,
	    (unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
	    (long long)st.st_size, (unsigned long)st.st_nlink);
}

static void basic_errors(void)
{
	char longname[300];
	int fd;

	res("mkdir d", mkdirat(rootfd, "d", 0755));
	res("mkdir d again", mkdirat(rootfd, "d", 0755));
	res("create d/f", put("d/f", "hello world\n", 0644));
	res("open O_EXCL existing", openat(rootfd, "d/f", O_CREAT | O_EXCL | O_WRONLY, 0644));
	res("rmdir non-empty", unlinkat(rootfd, "d", AT_REMOVEDIR));
	res("open missing", openat(rootfd, "nope", O_RDONLY));
	res("open dir for write", openat(rootfd, "d", O_WRONLY));
	res("mkdir below file", mkdirat(rootfd, "d/f/x", 0755));
	res("open below file", openat(rootfd, "d/f/x", O_RDONLY));
	res("unlink dir", unlinkat(rootfd, "d", 0));
	res("rmdir file", unlinkat(rootfd, "d/f", AT_REMOVEDIR));
	res("mkdir d/sub", mkdirat(rootfd, "d/sub", 0755));
	res("rename into own subdir", renameat(rootfd, "d", rootfd, "d/sub/d"));
	res("rename dir over file", renameat(rootfd, "d/sub", rootfd, "d/f"));
	res("rename missing", renameat(rootfd, "nope", rootfd, "nope2"));
	memset(longname, 'n', 256);
	longname[256] = '\0';
	res("create 256-char name", openat(rootfd, longname, O_CREAT | O_WRONLY, 0644));
	res("mkdir 256-char name", mkdirat(rootfd, longname, 0755));
	longname[255] = '\0';
	fd = openat(rootfd, longname, O_CREAT | O_WRONLY, 0644);
	res("create 255-char name", fd);
	if (fd >= 0)
		close(fd);
	res("unlink 255-char name", unlinkat(rootfd, longname, 0));
	res("readlink of file", readlinkat(rootfd, "d/f", longname, sizeof(longname)) < 0 ? -1 : 0);
	res("rmdir root dot", unlinkat(rootfd, "d/sub/.", AT_REMOVEDIR));
}

static void attrs(void)
{
	struct timespec tv[2];
	struct stat st;
	int fd;

	res("create a", put("a", "0123456789", 0600));
	res("chmod a 0640", fchmodat(rootfd, "a", 0640, 0));
	res("chown a 1000:1001", fchownat(rootfd, "a", 1000, 1001, 0));
	res("truncate a 4", truncate("a", 4));
	fd = openat(rootfd, "a", O_RDWR);
	res("ftruncate a 100000", ftruncate(fd, 100000));
	close(fd);
	show_stat("a", "a");
	tv[0].tv_sec = 1000000000; tv[0].tv_nsec = 123456789;
	tv[1].tv_sec = 1200000000; tv[1].tv_nsec = 987654321;
	res("utimens a explicit", utimensat(rootfd, "a", tv, 0));
	fstatat(rootfd, "a", &st, 0);
	say("a times: atime=%lld.%09ld mtime=%lld.%09ld", (long long)st.st_atim.tv_sec,
	    st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	tv[0].tv_nsec = UTIME_OMIT;
	tv[1].tv_nsec = UTIME_NOW;
	res("utimens a omit/now", utimensat(rootfd, "a", tv, 0));
	fstatat(rootfd, "a", &st, 0);
	say("a after omit/now: atime=%lld.%09ld mtime_recent=%d",
	    (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	    st.st_mtim.tv_sec > time(NULL) - 60);
	tv[0].tv_nsec = UTIME_NOW;
	tv[1].tv_sec = 1300000000; tv[1].tv_nsec = 5;
	res("utimens a now/explicit", utimensat(rootfd, "a", tv, 0));
	fstatat(rootfd, "a", &st, 0);
	say("a after now/explicit: atime_recent=%d mtime=%lld.%09ld",
	    st.st_atim.tv_sec > time(NULL) - 60, (long long)st.st_mtim.tv_sec,
	    st.st_mtim.tv_nsec);
	res("symlink s -> a", symlinkat("a", rootfd, "s"));
	tv[0].tv_sec = 1100000000; tv[0].tv_nsec = 0;
	tv[1] = tv[0];
	res("lutimens s", utimensat(rootfd, "s", tv, AT_SYMLINK_NOFOLLOW));
	fstatat(rootfd, "s", &st, AT_SYMLINK_NOFOLLOW);
	say("s mtime=%lld", (long long)st.st_mtim.tv_sec);
	res("lchown s", fchownat(rootfd, "s", 7, 8, AT_SYMLINK_NOFOLLOW));
	show_stat("s", "s");
	res("chmod via symlink", fchmodat(rootfd, "s", 0604, 0));
	show_stat("a via s", "a");
	res("dangling symlink", symlinkat("missing", rootfd, "dangle"));
	res("open dangling", openat(rootfd, "dangle", O_RDONLY));
	res("open symlink O_NOFOLLOW", openat(rootfd, "s", O_RDONLY | O_NOFOLLOW));
	res("symlink exists", symlinkat("x", rootfd, "s"));
}

static void links_and_nodes(void)
{
	char buf[64];
	ssize_t n;

	res("create h1", put("h1", "link data", 0644));
	res("link h1 h2", linkat(rootfd, "h1", rootfd, "h2", 0));
	res("link to existing", linkat(rootfd, "h1", rootfd, "h2", 0));
	res("link dir", linkat(rootfd, "d", rootfd, "dlink", 0));
	show_stat("h2 after link", "h2");
	res("unlink h1", unlinkat(rootfd, "h1", 0));
	show_stat("h2 after unlink", "h2");
	n = readlinkat(rootfd, "s", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	say("readlink s: %s", buf);
	{	/* O_NOFOLLOW: fine on a file, ELOOP on a symlink (rsync, tar) */
		int fd = openat(rootfd, "h2", O_RDONLY | O_NOFOLLOW);

		res("open O_NOFOLLOW file", fd < 0 ? -1 : 0);
		if (fd >= 0)
			close(fd);
		fd = openat(rootfd, "s", O_RDONLY | O_NOFOLLOW);
		res("open O_NOFOLLOW symlink", fd < 0 ? -1 : 0);
		if (fd >= 0)
			close(fd);
	}
	res("mkfifo", mkfifoat(rootfd, "fifo", 0640));
	res("mknod sock", mknodat(rootfd, "sock", S_IFSOCK | 0600, 0));
	res("mknod reg", mknodat(rootfd, "reg", S_IFREG | 0604, 0));
	res("mknod chr", mknodat(rootfd, "chr", S_IFCHR | 0600, makedev(1, 3)));
	res("mkfifo exists", mkfifoat(rootfd, "fifo", 0640));
	show_stat("fifo", "fifo");
	show_stat("sock", "sock");
	show_stat("chr", "chr");
	{	/* a fifo works through the mount */
		int r = openat(rootfd, "fifo", O_RDONLY | O_NONBLOCK);
		int w = openat(rootfd, "fifo", O_WRONLY | O_NONBLOCK);

		res("fifo write", w < 0 ? -1 : (int)write(w, "ping", 4) - 4);
		n = r < 0 ? -1 : read(r, buf, sizeof(buf));
		say("fifo read: %zd", n);
		close(r);
		close(w);
	}
}

static void renames(void)
{
	char buf[32];
	int fd;
	ssize_t n;

	res("create x", put("x", "content-x", 0644));
	res("create y", put("y", "content-y", 0644));
	res("rename noreplace existing", renameat2(rootfd, "x", rootfd, "y", RENAME_NOREPLACE));
	res("rename noreplace new", renameat2(rootfd, "x", rootfd, "x2", RENAME_NOREPLACE));
	res("rename exchange", renameat2(rootfd, "x2", rootfd, "y", RENAME_EXCHANGE));
	fd = openat(rootfd, "y", O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	say("y after exchange: %s", buf);
	res("rename exchange missing", renameat2(rootfd, "x2", rootfd, "nope", RENAME_EXCHANGE));
	res("mkdir e1", mkdirat(rootfd, "e1", 0755));
	res("put e1/in", put("e1/in", "in e1", 0644));
	res("exchange dir and file", renameat2(rootfd, "e1", rootfd, "y", RENAME_EXCHANGE));
	res("rename over nonempty dir", renameat(rootfd, "d", rootfd, "y"));
	res("mkdir emptydir", mkdirat(rootfd, "emptydir", 0755));
	res("rename dir over empty dir", renameat(rootfd, "y", rootfd, "emptydir"));
	res("rename file over file", renameat(rootfd, "x2", rootfd, "h2"));
	res("rename whiteout", renameat2(rootfd, "h2", rootfd, "h3", RENAME_WHITEOUT));
}

static void xattrs(void)
{
	char buf[256];
	ssize_t n;

	res("setxattr user.a", setxattr("a", "user.a", "1", 1, 0));
	{
		int fd = openat(rootfd, "a", O_RDONLY);

		res("fsetxattr user.b", fsetxattr(fd, "user.b", "two", 3, 0));
		res("fsetxattr create existing", fsetxattr(fd, "user.b", "x", 1, XATTR_CREATE));
		res("fsetxattr replace missing", fsetxattr(fd, "user.c", "x", 1, XATTR_REPLACE));
		res("fsetxattr replace", fsetxattr(fd, "user.b", "three", 5, XATTR_REPLACE));
		n = fgetxattr(fd, "user.b", buf, sizeof(buf));
		say("getxattr user.b: %zd %.*s", n, n > 0 ? (int)n : 0, buf);
		n = fgetxattr(fd, "user.b", NULL, 0);
		say("getxattr size: %zd", n);
		res("getxattr too small", fgetxattr(fd, "user.b", buf, 2) < 0 ? -1 : 0);
		res("getxattr missing", fgetxattr(fd, "user.none", buf, sizeof(buf)) < 0 ? -1 : 0);
		n = flistxattr(fd, NULL, 0);
		say("listxattr size: %zd", n);
		res("removexattr user.b", fremovexattr(fd, "user.b"));
		res("removexattr missing", fremovexattr(fd, "user.b"));
		res("setxattr bad namespace", fsetxattr(fd, "bogus.x", "1", 1, 0));
		close(fd);
	}
	{
		int dfd = openat(rootfd, "d", O_RDONLY | O_DIRECTORY);

		res("setxattr on dir", fsetxattr(dfd, "user.dir", "v", 1, 0));
		close(dfd);
	}
	res("lsetxattr on symlink", lsetxattr("s", "user.x", "1", 1, 0) == 0 ? 0 : -1);
}

static void open_unlinked(void)
{
	char buf[16];
	struct stat st;
	int fd;

	fd = openat(rootfd, "ghost", O_RDWR | O_CREAT, 0644);
	res("create ghost", fd);
	res("unlink ghost while open", unlinkat(rootfd, "ghost", 0));
	res("write unlinked", pwrite(fd, "boo!", 4, 0) == 4 ? 0 : -1);
	res("read unlinked", pread(fd, buf, 4, 0) == 4 && memcmp(buf, "boo!", 4) == 0 ? 0 : -1);
	fstat(fd, &st);
	say("unlinked: nlink=%lu size=%lld", (unsigned long)st.st_nlink, (long long)st.st_size);
	res("fchmod unlinked", fchmod(fd, 0600));
	res("ftruncate unlinked", ftruncate(fd, 2));
	fstat(fd, &st);
	say("unlinked after: mode=%o size=%lld", (unsigned)st.st_mode, (long long)st.st_size);
	res("open ghost by name", openat(rootfd, "ghost", O_RDONLY));
	close(fd);
}

static void data_ops(void)
{
	char buf[64];
	void *al = NULL;
	off_t r;
	int fd, fd2;
	ssize_t n;

	/* O_DIRECT with an aligned buffer */
	fd = openat(rootfd, "direct", O_RDWR | O_CREAT | O_DIRECT, 0644);
	res("open O_DIRECT", fd);
	if (posix_memalign(&al, 4096, 8192) == 0) {
		memset(al, 'D', 8192);
		res("write O_DIRECT", pwrite(fd, al, 8192, 0) == 8192 ? 0 : -1);
		memset(al, 0, 8192);
		res("read O_DIRECT", pread(fd, al, 4096, 4096) == 4096 &&
		    ((char *)al)[4095] == 'D' ? 0 : -1);
		free(al);
	}
	close(fd);
	show_stat("direct", "direct");

	/* sparse file: data at 0 and at 1 MiB */
	fd = openat(rootfd, "sparse", O_RDWR | O_CREAT, 0644);
	res("write sparse 0", pwrite(fd, "data", 4, 0) == 4 ? 0 : -1);
	res("write sparse 1M", pwrite(fd, "more", 4, 1 << 20) == 4 ? 0 : -1);
	fsync(fd);
	r = lseek(fd, 0, SEEK_HOLE);
	say("SEEK_HOLE from 0: %lld", (long long)r);
	r = lseek(fd, 8192, SEEK_DATA);
	say("SEEK_DATA from 8192: %lld", (long long)r);
	r = lseek(fd, (1 << 20) + 10, SEEK_DATA);
	say("SEEK_DATA past end data: %lld %s", (long long)r, r < 0 ? ename(errno) : "");
	r = lseek(fd, 0, SEEK_END);
	say("SEEK_END: %lld", (long long)r);

	/* fallocate */
	res("fallocate extend", fallocate(fd, 0, 2 << 20, 4096));
	res("fallocate keep size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 << 20, 4096));
	res("punch hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	n = pread(fd, buf, 4, 0);
	say("after punch: %zd %d", n, buf[0]);
	close(fd);
	show_stat("sparse", "sparse");

	/* copy_file_range */
	fd = openat(rootfd, "cfr-src", O_RDWR | O_CREAT, 0644);
	n = pwrite(fd, "copy this range please", 22, 0);
	fd2 = openat(rootfd, "cfr-dst", O_RDWR | O_CREAT, 0644);
	{
		loff_t in = 5, out = 3;

		n = copy_file_range(fd, &in, fd2, &out, 10, 0);
		say("copy_file_range: %zd", n);
	}
	n = pread(fd2, buf, sizeof(buf), 0);
	say("cfr-dst: %zd [%c%c%c%.*s]", n, buf[0] ? buf[0] : '0', buf[1] ? buf[1] : '0',
	    buf[2] ? buf[2] : '0', n > 3 ? (int)n - 3 : 0, buf + 3);
	close(fd);
	close(fd2);

	/* O_APPEND, O_TRUNC */
	res("append 1", put("ap", "one\n", 0644));
	fd = openat(rootfd, "ap", O_WRONLY | O_APPEND);
	res("append write", write(fd, "two\n", 4) == 4 ? 0 : -1);
	close(fd);
	show_stat("ap", "ap");
	fd = openat(rootfd, "ap", O_WRONLY | O_TRUNC);
	close(fd);
	show_stat("ap truncated", "ap");
	/* read-only open refuses writes */
	fd = openat(rootfd, "a", O_RDONLY);
	res("write to O_RDONLY fd", write(fd, "x", 1) < 0 ? -1 : 0);
	close(fd);
}

/* PATH_MAX is 4096: build a path of ~6000 bytes one level at a time. */
static void deep_path(void)
{
	char name[201];
	int fd = dup(rootfd), next, depth = 0;
	struct stat st;

	memset(name, 'p', 200);
	name[200] = '\0';
	res("mkdir deep", mkdirat(rootfd, "deep", 0755));
	close(fd);
	fd = openat(rootfd, "deep", O_RDONLY | O_DIRECTORY);
	for (depth = 0; depth < 30 && fd >= 0; depth++) {
		if (mkdirat(fd, name, 0755) < 0)
			break;
		next = openat(fd, name, O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	say("deep levels: %d", depth);
	res("create at depth", (next = openat(fd, "bottom", O_CREAT | O_WRONLY, 0644)));
	res("write at depth", write(next, "deep", 4) == 4 ? 0 : -1);
	close(next);
	res("stat at depth", fstatat(fd, "bottom", &st, 0));
	res("rename at depth", renameat(fd, "bottom", fd, "bottom2"));
	close(fd);
}

/* Steps as uid/gid 65534 in a child; prints as it goes. */
static void as_nobody(void)
{
	pid_t pid;
	int status;

	res("mkdir sticky", mkdirat(rootfd, "sticky", 0777));
	res("chmod sticky 1777", fchmodat(rootfd, "sticky", 01777, 0));
	res("root file in sticky", put("sticky/rootfile", "root", 0666));
	res("chmod root file 0666", fchmodat(rootfd, "sticky/rootfile", 0666, 0));
	res("private root file", put("private", "secret", 0600));
	res("mkdir sgid", mkdirat(rootfd, "sgid", 0777));
	res("chown sgid :100", fchownat(rootfd, "sgid", 0, 100, 0));
	res("chmod sgid 2777", fchmodat(rootfd, "sgid", 02777, 0));
	res("mkdir closed", mkdirat(rootfd, "closed", 0755));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct timespec tv[2] = { { 1, 0 }, { 1, 0 } };
		int fd;

		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
			perror("drop privileges");
			_exit(1);
		}
		res("nobody: create in 0755 root dir", openat(rootfd, "closed/f", O_CREAT | O_WRONLY, 0644));
		res("nobody: mkdir in 0755 root dir", mkdirat(rootfd, "closed/d", 0755));
		res("nobody: open 0600 root file", openat(rootfd, "private", O_RDONLY));
		res("nobody: access W_OK 0600 root file", faccessat(rootfd, "private", W_OK, 0));
		res("nobody: access R_OK dir", faccessat(rootfd, "sticky", R_OK | X_OK, 0));
		res("nobody: create in sticky", put("sticky/mine", "mine", 0644));
		res("nobody: mkdir in sticky", mkdirat(rootfd, "sticky/mydir", 0750));
		res("nobody: symlink in sticky", symlinkat("mine", rootfd, "sticky/mylink"));
		res("nobody: mkfifo in sticky", mkfifoat(rootfd, "sticky/myfifo", 0600));
		res("nobody: unlink root file in sticky", unlinkat(rootfd, "sticky/rootfile", 0));
		res("nobody: rename root file in sticky", renameat(rootfd, "sticky/rootfile", rootfd, "sticky/stolen"));
		res("nobody: write root 0666 file", (fd = openat(rootfd, "sticky/rootfile", O_WRONLY | O_APPEND)) < 0 ? -1 :
		    (int)write(fd, "+", 1) - 1);
		close(fd);
		res("nobody: chmod root file", fchmodat(rootfd, "sticky/rootfile", 0777, 0));
		res("nobody: utimens explicit root file", utimensat(rootfd, "sticky/rootfile", tv, 0));
		res("nobody: utimens now root 0666 file", utimensat(rootfd, "sticky/rootfile", NULL, 0));
		res("nobody: chown own file to root", fchownat(rootfd, "sticky/mine", 0, 0, 0));
		res("nobody: chgrp own file to 0", fchownat(rootfd, "sticky/mine", -1, 0, 0));
		res("nobody: chmod own file", fchmodat(rootfd, "sticky/mine", 0640, 0));
		res("nobody: chmod own file setgid", fchmodat(rootfd, "sticky/mine", 02755, 0));
		res("nobody: rename own file", renameat(rootfd, "sticky/mine", rootfd, "sticky/mine2"));
		res("nobody: link own file", linkat(rootfd, "sticky/mine2", rootfd, "sticky/mine3", 0));
		res("nobody: unlink own link", unlinkat(rootfd, "sticky/mine3", 0));
		res("nobody: create in sgid dir", put("sgid/f", "g", 0664));
		res("nobody: mkdir in sgid dir", mkdirat(rootfd, "sgid/sub", 0775));
		res("nobody: truncate root file", truncate("private", 0) == 0 ? 0 : -1);
		res("nobody: setxattr root file", setxattr("sticky/rootfile", "user.n", "1", 1, 0) == 0 ? 0 : -1);
		res("nobody: rmdir in 0755 root dir", unlinkat(rootfd, "closed", AT_REMOVEDIR));
		_exit(0);
	}
	waitpid(pid, &status, 0);
	say("nobody child: %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Writes one byte at offset 0 of PATH (opened write-only, no truncate). */
static int poke(const char *path)
{
	int fd = openat(rootfd, path, O_WRONLY), r;

	if (fd < 0)
		return -1;
	r = pwrite(fd, "+", 1, 0) == 1 ? 0 : -1;
	close(fd);
	return r;
}

/* Opens PATH write-only with O_TRUNC and closes it. */
static int trunc_open(const char *path)
{
	int fd = openat(rootfd, path, O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Set-id bits and file capabilities after writes and truncates: an
 * unprivileged write or truncate (also by open with O_TRUNC) clears
 * set-user-ID (and set-group-ID where group-executable); any write or
 * truncate clears capabilities. */
static void setid_and_caps(void)
{
	/* security.capability v2: CAP_NET_BIND_SERVICE permitted */
	static const unsigned char caps[20] = { 0, 0, 0, 2, 0, 4 };
	const char *files[] = { "setid/w", "setid/t", "setid/x", "setid/r",
				"setid/o", "setid/q", "setid/p" };
	const mode_t modes[] = { 06777, 06777, 06767, 06777, 06777, 06767, 06777 };
	const int nfiles = (int)(sizeof(files) / sizeof(files[0]));
	char buf[64];
	pid_t pid;
	int status;

	res("mkdir setid", mkdirat(rootfd, "setid", 0777));
	res("chmod setid 0777", fchmodat(rootfd, "setid", 0777, 0));
	for (int k = 0; k < nfiles; k++) {
		res("set-id file", put(files[k], "data", 0644));
		res("chmod set-id file", fchmodat(rootfd, files[k], modes[k], 0));
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
			perror("drop privileges");
			_exit(1);
		}
		res("nobody: write 6777 file", poke("setid/w"));
		res("nobody: truncate 6777 file", truncate("setid/t", 2) == 0 ? 0 : -1);
		res("nobody: write 6767 file", poke("setid/x"));
		res("nobody: open O_TRUNC 6777 file", trunc_open("setid/o"));
		res("nobody: open O_TRUNC 6767 file", trunc_open("setid/q"));
		_exit(0);
	}
	waitpid(pid, &status, 0);
	say("nobody child: %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	res("root: write 6777 file", poke("setid/r"));
	res("root: open O_TRUNC 6777 file", trunc_open("setid/p"));
	for (int k = 0; k < nfiles; k++)
		show_stat(files[k], files[k]);
	res("mkdir caps", mkdirat(rootfd, "caps", 0755));
	res("file with data", put("caps/data", "data", 0755));
	res("empty file", put("caps/empty", "", 0755));
	res("setcap file with data", setxattr("caps/data", "security.capability", caps,
					       sizeof(caps), 0));
	res("setcap empty file", setxattr("caps/empty", "security.capability", caps,
					  sizeof(caps), 0));
	res("getcap", getxattr("caps/data", "security.capability", buf, sizeof(buf)) ==
	    (ssize_t)sizeof(caps) ? 0 : -1);
	res("root: write file with caps", poke("caps/data"));
	res("root: write empty file with caps", poke("caps/empty"));
	res("caps after write", getxattr("caps/data", "security.capability", buf,
					 sizeof(buf)) < 0 ? -1 : 0);
	res("caps after write to empty", getxattr("caps/empty", "security.capability",
						  buf, sizeof(buf)) < 0 ? -1 : 0);
	res("file with caps to truncate", put("caps/trunc", "data", 0755));
	res("setcap it", setxattr("caps/trunc", "security.capability", caps,
				  sizeof(caps), 0));
	res("root: open O_TRUNC file with caps", trunc_open("caps/trunc"));
	res("caps after O_TRUNC", getxattr("caps/trunc", "security.capability",
					   buf, sizeof(buf)) < 0 ? -1 : 0);
	show_stat("caps/trunc", "caps/trunc");
}

/* ---- tree dump ------------------------------------------------------- */

static uint64_t fnv(int fd)
{
	uint64_t h = 1469598103934665603ull;
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t k = 0; k < n; k++)
			h = (h ^ (unsigned char)buf[k]) * 1099511628211ull;
	return h;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dump(int dirfd, const char *rel, int depth)
{
	char *names[4096];
	int n = 0;
	DIR *dp;
	struct dirent *de;
	int fd = dup(dirfd);

	dp = fdopendir(fd);
	if (!dp)
		return;
	while ((de = readdir(dp)) && n < 4096) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			names[n++] = strdup(de->d_name);
	}
	closedir(dp);
	qsort(names, n, sizeof(names[0]), cmpstr);
	for (int k = 0; k < n; k++) {
		struct stat st;
		char path[256], xl[1024];
		const char *shown = names[k];
		char sub[64];
		ssize_t xn;

		/* long names are abbreviated: the tree is compared, not read */
		if (strlen(shown) > 40) {
			snprintf(sub, sizeof(sub), "%.8s..(%zu)", shown, strlen(shown));
			shown = sub;
		}
		if (fstatat(dirfd, names[k], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			printf("%s/%s: stat %s\n", rel, shown, ename(errno));
			free(names[k]);
			continue;
		}
		printf("%s/%s %o %u:%u nlink=%lu", rel, shown, (unsigned)st.st_mode,
		       (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned long)st.st_nlink);
		if (S_ISREG(st.st_mode)) {
			int f = openat(dirfd, names[k], O_RDONLY);

			printf(" size=%lld fnv=%016llx", (long long)st.st_size,
			       (unsigned long long)(f >= 0 ? fnv(f) : 0));
			if (f >= 0)
				close(f);
		} else if (S_ISLNK(st.st_mode)) {
			char t[256];
			ssize_t tn = readlinkat(dirfd, names[k], t, sizeof(t) - 1);

			t[tn > 0 ? tn : 0] = '\0';
			printf(" -> %s", t);
		} else if (S_ISCHR(st.st_mode)) {
			printf(" rdev=%u:%u", major(st.st_rdev), minor(st.st_rdev));
		}
		if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
			int f = openat(dirfd, names[k], O_RDONLY | O_NONBLOCK);

			xn = f >= 0 ? flistxattr(f, xl, sizeof(xl)) : -1;
			for (ssize_t p = 0; xn > 0 && p < xn; p += strlen(xl + p) + 1) {
				char v[256];
				ssize_t vn = fgetxattr(f, xl + p, v, sizeof(v));

				if (strncmp(xl + p, "user.", 5) == 0)
					printf(" %s=%.*s", xl + p, vn > 0 ? (int)vn : 0, v);
			}
			if (f >= 0)
				close(f);
		}
		putchar('\n');
		if (S_ISDIR(st.st_mode) && depth < 64) {
			int sfd = openat(dirfd, names[k], O_RDONLY | O_DIRECTORY);

			snprintf(path, sizeof(path), "%s/%s", depth < 3 ? rel : "...", shown);
			if (sfd >= 0) {
				dump(sfd, path, depth + 1);
				close(sfd);
			}
		}
		free(names[k]);
	}
}

int main(int argc, char **argv)
{
	struct statvfs sv;

	if (argc != 2) {
		fprintf(stderr, "usage: posix_ops ROOT\n");
		return 2;
	}
	umask(022);
	if (chdir(argv[1]) < 0 || (rootfd = open(".", O_RDONLY | O_DIRECTORY)) < 0) {
		perror(argv[1]);
		return 2;
	}
	basic_errors();
	attrs();
	links_and_nodes();
	renames();
	xattrs();
	open_unlinked();
	data_ops();
	deep_path();
	as_nobody();
	setid_and_caps();
	res("statvfs", statvfs(".", &sv));
	say("statvfs bsize>0: %d", sv.f_bsize > 0);
	printf("---- tree\n");
	dump(rootfd, ".", 0);
	return 0;
}
