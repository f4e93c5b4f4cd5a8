/*
 * proto_int — the frame writer shared by the protocol's encoders
 * (proto.c, proto_delta.c): one contiguous reservation per frame, filled
 * through a bounds-checked writer, then header and check. Private to
 * netsync/wire/proto*.c; any thread, one evbuffer per thread.
 */
#ifndef TWINFS_PROTO_INT_H
#define TWINFS_PROTO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "netsync/wire/wire.h"

struct proto_out {
	struct evbuffer_iovec v;
	struct wire_writer w;
	size_t plen;
};

/* Reserves a frame of PLEN payload bytes in OUT. 0 or -ENOMEM. */
int proto_out_begin(struct evbuffer *out, struct proto_out *o, size_t plen);
/* Writes header and check (over CLEN payload bytes) and commits the frame.
 * 0, -EINVAL (the payload was not filled exactly) or -ENOMEM. */
int proto_out_end(struct evbuffer *out, struct proto_out *o, uint16_t type, uint32_t len,
		  uint32_t clen);
/* NULL or at most MAX bytes long. */
bool proto_strlen_ok(const char *s, size_t max);

#endif
