/*
 * jseg — the files under STATE/journal/: segment files (seg-<first seq in
 * hex>.log, a header then records), their recovery scan (cut a torn tail),
 * a sequential record reader, and the ack file. Used by the journal (open,
 * committer, take_batch, ack) and by offline journal_list_pending.
 */
#ifndef TWINFS_JSEG_H
#define TWINFS_JSEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define JSEG_NAME_MAX 40

struct jseg_info {
	uint64_t first_seq;	/* seq of its first record (from the header) */
	uint64_t last_seq;	/* seq of its last record; first_seq - 1 if none */
	uint64_t bytes;		/* file size (header + records) */
};

void jseg_name(char *buf, size_t len, uint64_t first_seq);

/* Reads records from one segment, sequentially, in chunks. */
struct jseg_reader {
	int fd;
	uint64_t first_seq;
	uint8_t *buf;
	size_t cap, len, pos;	/* buf[pos..len) not consumed yet */
	uint64_t file_off;	/* file offset of buf[0] */
	bool eof;
};

/* Opens segment first_seq (name from jseg_name) in dirfd and checks its
 * header. Returns 0, -ENOENT, -EBADMSG (bad header), or -errno. */
int jseg_reader_open(struct jseg_reader *r, int dirfd, uint64_t first_seq);
/* Positions the reader at file offset off (a record boundary). */
void jseg_reader_seek(struct jseg_reader *r, uint64_t off);
/* Next record: *rec points into the reader's buffer (valid until the next
 * call), *off is its file offset. Returns its length, 0 at a clean end,
 * -EAGAIN for a torn (short) record at the end, -EBADMSG for a damaged
 * record, or -errno. */
int64_t jseg_reader_next(struct jseg_reader *r, const uint8_t **rec, uint64_t *seq,
			 uint64_t *off);
void jseg_reader_close(struct jseg_reader *r);

/* What a recovery scan found. */
struct jseg_scan {
	struct jseg_info *segs;	/* valid segments in seq order (malloc'd) */
	size_t nsegs;
	uint64_t head_seq;	/* last valid record (0 if none) */
	bool cut;		/* a torn or damaged tail was found */
	bool lost;		/* records were lost before the last segment's tail
				 * (damage in the middle): a full rescan is needed */
};

/* Scans every segment in dirfd in order, calling fn for each valid record
 * with seq > after_seq (rec valid only during the call). Stops at the first
 * torn/damaged record or seq gap. With repair, cuts the file there, deletes
 * later segments and segments wholly <= after_seq except the last, and
 * syncs. Returns 0 or -errno; *out must be freed with jseg_scan_free. */
int jseg_scan(int dirfd, uint64_t after_seq, bool repair,
	      int (*fn)(const uint8_t *rec, size_t len, uint64_t seq, void *arg),
	      void *arg, struct jseg_scan *out);
void jseg_scan_free(struct jseg_scan *s);

/* The ack file STATE/journal/acked: "acked <seq>\n". Missing file: 0.
 * Returns 0 or -errno (-EBADMSG if it is damaged). */
int jseg_ack_read(int dirfd, uint64_t *seq);
/* The modification time of the newest segment (when the last group commit
 * wrote it) into *out. Returns 0, -ENOENT if there is none, or -errno. */
int jseg_last_write(int dirfd, struct timespec *out);
/* The "closed" file: written by a clean close after its last commit, so
 * that the next open knows no record was lost. jseg_closed_take removes it
 * (the journal is about to be written again) and says whether it was
 * there; jseg_closed_seen only looks. Errors count as "not closed". */
void jseg_closed_write(int dirfd);
bool jseg_closed_take(int dirfd);
bool jseg_closed_seen(int dirfd);
/* Writes it atomically: acked.tmp, fsync, rename, fsync the directory. */
int jseg_ack_write(int dirfd, uint64_t seq);
/* The file "storefs": which instance of the store's file system the
 * journal was last opened on (the kernel's boot id and the store's unique
 * mount id). jseg_storefs_changed is true when the file is missing or
 * unreadable or names another instance: the store's file system was
 * mounted again (a reboot, a power cut) and lost what its page cache held.
 * jseg_storefs_write records this one: 0 or -errno. */
bool jseg_storefs_changed(int dirfd, int storefd);
int jseg_storefs_write(int dirfd, int storefd);

#endif
