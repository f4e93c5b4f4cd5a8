/*
 * jseg — segment files, their recovery scan and reader, and the ack file
 * under STATE/journal/ (netsync/jseg.h). Owns no long-lived state; the
 * journal calls it from open (main thread), the committer thread (new
 * segments), the sender thread (reads, ack) and offline list_pending.
 * It never writes records (the journal's committer does).
 */
#include "journal/jseg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "journal/jrec.h"

#define JSEG_READ_CHUNK (1u << 20)

void jseg_name(char *buf, size_t len, uint64_t first_seq)
{
	snprintf(buf, len, "seg-%016" PRIx64 ".log", first_seq);
}

static int jseg_parse_name(const char *name, uint64_t *first_seq)
{
	char *end;

	if (strncmp(name, "seg-", 4) != 0 || strlen(name) != 4 + 16 + 4 ||
	    strcmp(name + 20, ".log") != 0)
		return -EINVAL;
	errno = 0;
	*first_seq = strtoull(name + 4, &end, 16);
	if (errno || end != name + 20)
		return -EINVAL;
	return 0;
}

int jseg_reader_open(struct jseg_reader *r, int dirfd, uint64_t first_seq)
{
	char name[JSEG_NAME_MAX];
	uint8_t hdr[JSEG_HDR];
	uint64_t hseq;
	ssize_t n;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	jseg_name(name, sizeof name, first_seq);
	r->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (r->fd < 0)
		return -errno;
	n = pread(r->fd, hdr, sizeof hdr, 0);
	if (n < 0) {
		rc = -errno;
		goto out_close;
	}
	rc = jseg_hdr_check(hdr, (size_t)n, &hseq);
	if (rc == 0 && hseq != first_seq)
		rc = -EBADMSG;
	if (rc < 0) {
		rc = -EBADMSG;
		goto out_close;
	}
	r->first_seq = first_seq;
	r->cap = 2 * JSEG_READ_CHUNK;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	r->file_off = JSEG_HDR;
	return 0;
out_close:
	close(r->fd);
	r->fd = -1;
	return rc;
}

void jseg_reader_seek(struct jseg_reader *r, uint64_t off)
{
	r->file_off = off;
	r->len = r->pos = 0;
	r->eof = false;
}

/* Makes at least want bytes available at buf[pos] unless the file ends. */
static int jseg_reader_fill(struct jseg_reader *r, size_t want)
{
	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->file_off += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < want && !r->eof) {
		ssize_t n = pread(r->fd, r->buf + r->len, r->cap - r->len,
				  (off_t)(r->file_off + r->len));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			r->eof = true;
		r->len += (size_t)n;
	}
	return 0;
}

int64_t jseg_reader_next(struct jseg_reader *r, const uint8_t **rec, uint64_t *seq,
			 uint64_t *off)
{
	int64_t len;
	int rc;

	for (;;) {
		size_t avail = r->len - r->pos;

		len = jrec_check(r->buf + r->pos, avail, seq);
		if (len != -EAGAIN)
			break;
		if (r->eof)
			return avail == 0 ? 0 : -EAGAIN;	/* short record: torn */
		/* cap is twice JREC_MAX, so after compaction any record fits. */
		rc = jseg_reader_fill(r, avail + 1);
		if (rc < 0)
			return rc;
	}
	if (len < 0)
		return len;
	*rec = r->buf + r->pos;
	*off = r->file_off + r->pos;
	r->pos += (size_t)len;
	return len;
}

void jseg_reader_close(struct jseg_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

static int jseg_cmp(const void *a, const void *b)
{
	const struct jseg_info *x = a, *y = b;

	return x->first_seq < y->first_seq ? -1 : x->first_seq > y->first_seq;
}

/* Lists segment files by first seq. */
static int jseg_list(int dirfd, struct jseg_info **out, size_t *n_out)
{
	struct jseg_info *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd, rc = 0;
	DIR *d;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		uint64_t first;

		if (jseg_parse_name(de->d_name, &first) < 0)
			continue;
		if (ARRAY_GROW(v, cap, n + 1, 16) < 0) {
			rc = -ENOMEM;
			goto out_closedir;
		}
		v[n++] = (struct jseg_info){ .first_seq = first, .last_seq = first - 1 };
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), jseg_cmp);
	*out = v;
	*n_out = n;
	v = NULL;
out_closedir:
	closedir(d);
	free(v);
	return rc;
}

static int jseg_unlink(int dirfd, uint64_t first_seq)
{
	char name[JSEG_NAME_MAX];

	jseg_name(name, sizeof name, first_seq);
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Cuts segment first_seq at off and syncs it. */
static int jseg_cut(int dirfd, uint64_t first_seq, uint64_t off)
{
	char name[JSEG_NAME_MAX];
	int fd, rc = 0;

	jseg_name(name, sizeof name, first_seq);
	fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)off) < 0 || fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * Recovery scan. Records must carry consecutive seqs across segments; the
 * first record that is short, fails its checksum, or breaks the sequence
 * ends the valid journal. If that happens in the last segment it is the
 * torn tail of the last group commit (records never acknowledged to any
 * caller as durable, and covered by durable marks): cut it. If it happens
 * earlier, later segments follow a hole; they are deleted too and `lost`
 * tells the journal to schedule a full rescan, because the changes they
 * described can no longer be named.
 */
int jseg_scan(int dirfd, uint64_t after_seq, bool repair,
	      int (*fn)(const uint8_t *rec, size_t len, uint64_t seq, void *arg),
	      void *arg, struct jseg_scan *out)
{
	struct jseg_info *segs = NULL;
	size_t nsegs = 0, valid = 0;
	uint64_t expect = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = jseg_list(dirfd, &segs, &nsegs);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nsegs; i++) {
		struct jseg_info *s = &segs[i];
		struct jseg_reader r;
		uint64_t seq, off = JSEG_HDR, cut_off = 0;
		const uint8_t *rec;
		bool bad = false;
		int64_t len;

		if (expect && s->first_seq != expect) {
			log_error("journal segment does not follow the previous one; "
				  "dropping it and everything after",
				  "first_seq=%" PRIu64 " expected=%" PRIu64, s->first_seq, expect);
			out->cut = out->lost = true;
			break;
		}
		rc = jseg_reader_open(&r, dirfd, s->first_seq);
		if (rc == -ENOENT && !repair) {
			/* Read-only scan of a live journal: an ack deleted it. */
			expect = 0;
			continue;
		}
		if (rc == -EBADMSG) {
			/* A header that never became durable: an empty new segment. */
			out->cut = true;
			if (i + 1 < nsegs)
				out->lost = true;
			break;
		}
		if (rc < 0)
			goto out_free;
		expect = s->first_seq;
		for (;;) {
			len = jseg_reader_next(&r, &rec, &seq, &off);
			if (len == 0)
				break;
			if (len < 0 || seq != expect) {
				if (len < 0 && len != -EAGAIN && len != -EBADMSG) {
					rc = (int)len;
					jseg_reader_close(&r);
					goto out_free;
				}
				bad = true;
				cut_off = (len < 0) ? r.file_off + r.pos : off;
				break;
			}
			if (seq > after_seq && fn) {
				rc = fn(rec, (size_t)len, seq, arg);
				if (rc < 0) {
					jseg_reader_close(&r);
					goto out_free;
				}
			}
			s->last_seq = seq;
			expect = seq + 1;
			s->bytes = off + (uint64_t)len;
		}
		if (!bad)
			s->bytes = r.file_off + r.len;
		jseg_reader_close(&r);
		valid = i + 1;
		if (bad) {
			log_warn("journal has a torn or damaged record; cutting it and "
				 "everything after", "seq=%" PRIu64 " offset=%" PRIu64,
				 expect, cut_off);
			out->cut = true;
			if (i + 1 < nsegs)
				out->lost = true;
			if (repair) {
				rc = jseg_cut(dirfd, s->first_seq, cut_off);
				if (rc < 0)
					goto out_free;
			}
			s->bytes = cut_off;
			break;
		}
	}
	if (repair) {
		for (size_t i = valid; i < nsegs; i++) {
			rc = jseg_unlink(dirfd, segs[i].first_seq);
			if (rc < 0)
				goto out_free;
		}
	}
	nsegs = valid;
	out->head_seq = expect ? expect - 1 : 0;
	/* A last segment without records (its first record was torn) would
	 * share its name with the next segment the journal starts: drop it. */
	if (repair && nsegs > 0 && segs[nsegs - 1].last_seq < segs[nsegs - 1].first_seq) {
		rc = jseg_unlink(dirfd, segs[nsegs - 1].first_seq);
		if (rc < 0)
			goto out_free;
		nsegs--;
	}
	/* Segments wholly acknowledged are of no use (keep the last: it tells
	 * where the seq continues). */
	if (repair) {
		size_t k = 0;

		while (k + 1 < nsegs && segs[k].last_seq <= after_seq) {
			rc = jseg_unlink(dirfd, segs[k].first_seq);
			if (rc < 0)
				goto out_free;
			k++;
		}
		if (k) {
			memmove(segs, segs + k, (nsegs - k) * sizeof(*segs));
			nsegs -= k;
		}
	}
	if (repair && (out->cut || out->lost) && fsutil_sync_dirfd(dirfd) < 0) {
		rc = -errno;
		goto out_free;
	}
	out->segs = segs;
	out->nsegs = nsegs;
	return 0;
out_free:
	free(segs);
	return rc;
}

void jseg_scan_free(struct jseg_scan *s)
{
	free(s->segs);
	memset(s, 0, sizeof(*s));
}

int jseg_last_write(int dirfd, struct timespec *out)
{
	char name[JSEG_NAME_MAX];
	struct jseg_info *v = NULL;
	struct stat st;
	size_t n = 0;
	int rc = jseg_list(dirfd, &v, &n);

	if (rc < 0)
		return rc;
	if (n == 0) {
		free(v);
		return -ENOENT;
	}
	jseg_name(name, sizeof name, v[n - 1].first_seq);
	free(v);
	if (fstatat(dirfd, name, &st, 0) < 0)
		return -errno;
	*out = st.st_mtim;
	return 0;
}

void jseg_closed_write(int dirfd)
{
	int fd = openat(dirfd, "closed", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || fsync(fd) < 0 || fsutil_sync_dirfd(dirfd) < 0)
		log_warn("journal cannot note its clean close; the next open will "
			 "treat it as a crash", "err=%s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

bool jseg_storefs_changed(int dirfd, int storefd)
{
	char now[160], was[160] = "";
	ssize_t n;
	int fd;

	if (fsutil_instance(storefd, now, sizeof now) < 0)
		return true;
	fd = openat(dirfd, "storefs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return true;
	n = read(fd, was, sizeof was - 1);
	close(fd);
	if (n <= 0)
		return true;
	was[n] = '\0';
	return strcmp(now, was) != 0;
}

int jseg_storefs_write(int dirfd, int storefd)
{
	char now[160];
	size_t len;
	int fd, rc;

	rc = fsutil_instance(storefd, now, sizeof now);
	if (rc < 0)
		return rc;
	len = strlen(now);
	fd = openat(dirfd, "storefs.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0)
		return -errno;
	if (write(fd, now, len) != (ssize_t)len || fsync(fd) < 0) {
		rc = errno ? -errno : -EIO;
		close(fd);
		return rc;
	}
	close(fd);
	if (renameat(dirfd, "storefs.tmp", dirfd, "storefs") < 0 || fsutil_sync_dirfd(dirfd) < 0)
		return -errno;
	return 0;
}

bool jseg_closed_seen(int dirfd)
{
	struct stat st;

	return fstatat(dirfd, "closed", &st, 0) == 0;
}

bool jseg_closed_take(int dirfd)
{
	if (!jseg_closed_seen(dirfd))
		return false;
	/* Gone for good before anything new is written, or it would cover a
	 * crash of this run. */
	return unlinkat(dirfd, "closed", 0) == 0 && fsutil_sync_dirfd(dirfd) == 0;
}

int jseg_ack_read(int dirfd, uint64_t *seq)
{
	char buf[64], *end;
	ssize_t n;
	int fd;

	*seq = 0;
	fd = openat(dirfd, "acked", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, "acked ", 6) != 0)
		return -EBADMSG;
	errno = 0;
	*seq = strtoull(buf + 6, &end, 10);
	if (errno || end == buf + 6 || strcmp(end, "\n") != 0)
		return -EBADMSG;
	return 0;
}

int jseg_ack_write(int dirfd, uint64_t seq)
{
	char buf[64];
	int fd, rc = 0, len;

	len = snprintf(buf, sizeof buf, "acked %" PRIu64 "\n", seq);
	fd = openat(dirfd, "acked.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)len) != len || fsync(fd) < 0) {
		rc = errno ? -errno : -EIO;
		close(fd);
		return rc;
	}
	close(fd);
	if (renameat(dirfd, "acked.tmp", dirfd, "acked") < 0 || fsutil_sync_dirfd(dirfd) < 0)
		rc = -errno;
	return rc;
}
