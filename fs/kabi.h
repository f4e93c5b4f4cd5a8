/*
 * kabi — copies of the kernel's FUSE ABI (include/uapi/linux/fuse.h,
 * protocol 7.42) that Debian 12's headers (7.38) and libfuse 3.14 lack:
 * the INIT messages with flags2 and max_stack_depth, passthrough (open
 * flag, backing ioctls) and FUSE over io_uring. Only the layouts we read or
 * write, each pinned by static assertions so that a wrong offset fails the
 * build instead of a mount. Names carry a kabi_ prefix because
 * <linux/fuse.h> declares older, shorter versions of some of them.
 * No code; included by fs/fuse314.c, fs/ring.c and fs/procfd.c.
 */
#ifndef TWINFS_FS_KABI_H
#define TWINFS_FS_KABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

/* fuse_init_in.flags (bit n) and flags2 (bit n - 32) */
#define KABI_FUSE_INIT_EXT (1u << 30)	/* flags2 is valid */
#define KABI_FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#define KABI_FUSE_PASSTHROUGH_FLAGS2 (1u << (37 - 32))
#define KABI_FUSE_OVER_IO_URING_FLAGS2 (1u << (41 - 32))

/* fuse_open_out.open_flags */
#define KABI_FOPEN_PASSTHROUGH (1u << 7)

/* fuse_write_in.write_flags, fuse_setattr_in.valid, fuse_open_in.open_flags */
#define KABI_FUSE_WRITE_KILL_SUIDGID (1u << 2)
#define KABI_FATTR_KILL_SUIDGID (1u << 11)
#define KABI_FUSE_OPEN_KILL_SUIDGID (1u << 0)

struct kabi_fuse_init_in {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint32_t flags2;
	uint32_t unused[11];
};
_Static_assert(offsetof(struct kabi_fuse_init_in, flags) == 12, "init_in.flags");
_Static_assert(offsetof(struct kabi_fuse_init_in, flags2) == 16, "init_in.flags2");
_Static_assert(sizeof(struct kabi_fuse_init_in) == 64, "fuse_init_in");

struct kabi_fuse_init_out {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
	uint16_t request_timeout;
	uint16_t unused[11];
};
_Static_assert(offsetof(struct kabi_fuse_init_out, flags) == 12, "init_out.flags");
_Static_assert(offsetof(struct kabi_fuse_init_out, max_write) == 20, "init_out.max_write");
_Static_assert(offsetof(struct kabi_fuse_init_out, max_pages) == 28, "init_out.max_pages");
_Static_assert(offsetof(struct kabi_fuse_init_out, flags2) == 32, "init_out.flags2");
_Static_assert(offsetof(struct kabi_fuse_init_out, max_stack_depth) == 36,
	       "init_out.max_stack_depth");
_Static_assert(sizeof(struct kabi_fuse_init_out) == 64, "fuse_init_out");

/* The end of an open or create reply; backing_id was "padding" in 7.38. */
struct kabi_fuse_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};
_Static_assert(offsetof(struct kabi_fuse_open_out, open_flags) == 8, "open_out.open_flags");
_Static_assert(offsetof(struct kabi_fuse_open_out, backing_id) == 12, "open_out.backing_id");
_Static_assert(sizeof(struct kabi_fuse_open_out) == 16, "fuse_open_out");

/* FUSE_DEV_IOC_BACKING_OPEN's argument; the ioctl returns the id. */
struct kabi_fuse_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
_Static_assert(sizeof(struct kabi_fuse_backing_map) == 16, "fuse_backing_map");

#define KABI_FUSE_DEV_IOC_MAGIC 229
#define KABI_FUSE_DEV_IOC_BACKING_OPEN \
	_IOW(KABI_FUSE_DEV_IOC_MAGIC, 1, struct kabi_fuse_backing_map)
#define KABI_FUSE_DEV_IOC_BACKING_CLOSE _IOW(KABI_FUSE_DEV_IOC_MAGIC, 2, uint32_t)

/* FUSE over io_uring: enum fuse_uring_cmd (the SQE's cmd_op) */
#define KABI_FUSE_IO_URING_CMD_REGISTER 1
#define KABI_FUSE_IO_URING_CMD_COMMIT_AND_FETCH 2

#define KABI_FUSE_URING_IN_OUT_HEADER_SZ 128
#define KABI_FUSE_URING_OP_IN_OUT_SZ 128

struct kabi_fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;	/* the request's, to be echoed in the commit */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};
_Static_assert(offsetof(struct kabi_fuse_uring_ent_in_out, commit_id) == 8,
	       "uring_ent_in_out.commit_id");
_Static_assert(offsetof(struct kabi_fuse_uring_ent_in_out, payload_sz) == 16,
	       "uring_ent_in_out.payload_sz");
_Static_assert(sizeof(struct kabi_fuse_uring_ent_in_out) == 32, "fuse_uring_ent_in_out");

/* The header buffer of a ring entry (iov[0] at registration). */
struct kabi_fuse_uring_req_header {
	char in_out[KABI_FUSE_URING_IN_OUT_HEADER_SZ];	/* fuse_in_header in,
							 * fuse_out_header out */
	char op_in[KABI_FUSE_URING_OP_IN_OUT_SZ];	/* the opcode's argument */
	struct kabi_fuse_uring_ent_in_out ring_ent_in_out;
};
_Static_assert(offsetof(struct kabi_fuse_uring_req_header, op_in) == 128,
	       "uring_req_header.op_in");
_Static_assert(offsetof(struct kabi_fuse_uring_req_header, ring_ent_in_out) == 256,
	       "uring_req_header.ring_ent_in_out");
_Static_assert(sizeof(struct kabi_fuse_uring_req_header) == 288, "fuse_uring_req_header");

/* In the SQE's command area (IORING_SETUP_SQE128: 80 bytes). */
struct kabi_fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
_Static_assert(offsetof(struct kabi_fuse_uring_cmd_req, qid) == 16, "uring_cmd_req.qid");
_Static_assert(sizeof(struct kabi_fuse_uring_cmd_req) == 24, "fuse_uring_cmd_req");

/* The *xattrat system calls (6.13) and their argument. The numbers are
 * the unified table's, the same on x86_64 and the asm-generic
 * architectures; elsewhere the path calls are used (fs/procfd.c). */
#if defined(__x86_64__) || defined(__aarch64__) || defined(__riscv)
#define KABI_HAVE_XATTRAT true
#define KABI_SYS_setxattrat 463
#define KABI_SYS_getxattrat 464
#define KABI_SYS_listxattrat 465
#define KABI_SYS_removexattrat 466
#else
#define KABI_HAVE_XATTRAT false
#define KABI_SYS_setxattrat (-1)
#define KABI_SYS_getxattrat (-1)
#define KABI_SYS_listxattrat (-1)
#define KABI_SYS_removexattrat (-1)
#endif

struct kabi_xattr_args {
	uint64_t value;		/* user pointer */
	uint32_t size;
	uint32_t flags;		/* XATTR_CREATE, XATTR_REPLACE (set only) */
};
_Static_assert(offsetof(struct kabi_xattr_args, size) == 8, "xattr_args.size");
_Static_assert(sizeof(struct kabi_xattr_args) == 16, "xattr_args");

#endif
