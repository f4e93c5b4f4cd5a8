/*
 * state — the small files of a node's state directory (docs/protocol.md,
 * "State files"): node.id, generation and, on a secondary, applied (the
 * last durably applied seq and whether a batch was half applied). Every
 * write is atomic and durable (temp file, fsync, rename, fsync of the
 * directory; applied: in place, see below). Plain blocking file IO.
 */
#ifndef TWINFS_STATE_H
#define TWINFS_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct state_node {
	uint8_t id[16];
	char id_hex[33];
	uint64_t generation;
};

/* Creates DIR (mode 0700) if it is missing; its parent must exist.
 * Returns 0 or -errno. */
int state_dir_prepare(const char *dir);
/* Reads STATE/node.id and STATE/generation, creating them (random id,
 * generation 1) on a new node. Returns 0, or -EBADMSG for a corrupt file,
 * or -errno. */
int state_node_load(const char *dir, struct state_node *n);
/*
 * STATE/applied: the last durably applied seq and the dirty flag, written
 * in place (two checksummed slots, one pwrite + fdatasync per update; a
 * torn write leaves the previous value). state_applied_open creates it (seq
 * 0, clean) on a new node and returns the current value; put may be called
 * from any thread (serialised inside).
 */
struct state_applied;
int state_applied_open(const char *dir, struct state_applied **out, uint64_t *seq,
		       bool *dirty);
int state_applied_put(struct state_applied *a, uint64_t seq, bool dirty);
void state_applied_close(struct state_applied *a);
/* One-shot forms (open, read or put, close). */
int state_applied_read(const char *dir, uint64_t *seq, bool *dirty);
int state_applied_write(const char *dir, uint64_t seq, bool dirty);
/* Replaces STATE/NAME with LEN bytes of BUF, atomically and durably. */
int state_write_atomic(const char *dir, const char *name, const void *buf, size_t len);

#endif
