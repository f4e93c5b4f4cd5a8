/*
 * nodeid — this node's identity in STATE/: node.id (16 random bytes as 32
 * hex digits, created once) and generation (a decimal u64, 1 on a new
 * node), the two values a HELLO carries (docs/protocol.md, "State files").
 * Called at start-up from any one thread.
 */
#ifndef TWINFS_NODEID_H
#define TWINFS_NODEID_H

#include <stdint.h>

struct node_identity {
	uint8_t node_id[16];
	uint64_t generation;
	char name[64];		/* host name, for logs and the peer's status */
};

/* Reads STATE/node.id and STATE/generation, creating them (atomically:
 * tmp + fsync + rename) if missing. Returns 0 or -errno (-EBADMSG for a
 * damaged file, which is never overwritten). */
int node_identity_load(const char *state_dir, struct node_identity *id);

#endif
