/* libFuzzer target for the convergence engine's parsers of untrusted
 * input: the tree entries a peer streams (ENTRY), the hash lists it
 * answers (HASHES, assembled frame after frame by blockhash_add_frame with
 * every consistency rule), and the requests a mirror client sends
 * (TREE_REQ, HASH_REQ, FILE_CHECK), plus the path check every path then
 * meets. The input is cut into frames: each piece's first byte picks the
 * type, two more its length; the frame gets a valid header and check so
 * that the decoders, not the checksum, see the bytes. Rejecting input is
 * the expected outcome; an over-read, a crash or a leak is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "netsync/delta/blockhash.h"
#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t types[] = { PROTO_ENTRY, PROTO_HASHES, PROTO_TREE_REQ,
				  PROTO_HASH_REQ, PROTO_FILE_CHECK, PROTO_ENTRIES_END };

static void frame_add(struct evbuffer *in, uint16_t type, const uint8_t *p, size_t n)
{
	uint8_t hdr[PROTO_HDR_LEN];
	struct proto_hdr h = { .type = type, .len = (uint32_t)n, .clen = (uint32_t)n };
	XXH3_state_t *st = XXH3_createState();

	proto_hdr_write(hdr, &h);
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, hdr, sizeof(hdr));
	XXH3_64bits_update(st, p, n);
	h.check = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	proto_hdr_write(hdr, &h);
	evbuffer_add(in, hdr, sizeof(hdr));
	evbuffer_add(in, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	struct blockhash list = { 0 };
	struct proto_frame f;
	size_t off = 0;

	if (!in)
		return 0;
	while (off + 3 <= size) {
		uint16_t t = types[data[off] % (sizeof(types) / sizeof(types[0]))];
		size_t n = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;

		off += 3;
		if (n > size - off)
			n = size - off;
		frame_add(in, t, data + off, n);
		off += n;
	}
	while (proto_frame_next(in, &f) == 1) {
		union {
			struct proto_entry e;
			struct proto_hashes h;
			struct proto_tree_req t;
			struct proto_hash_req q;
			struct proto_file_check c;
		} m;
		uint64_t count;
		uint32_t err;

		switch (f.h.type) {
		case PROTO_ENTRY:
			if (proto_decode_entry(&f, &m.e) == 0) {
				path_check(m.e.path, false);
				if (m.e.link)
					path_check(m.e.link, false);
			}
			break;
		case PROTO_HASHES:
			/* one file's list, in the frames' order, as the client does */
			if (proto_decode_hashes(&f, &m.h) == 0 &&
			    blockhash_add_frame(&list, m.h.path, m.h.block_size, &m.h) != 0)
				blockhash_free(&list);
			break;
		case PROTO_TREE_REQ:
			if (proto_decode_tree_req(&f, &m.t) == 0)
				path_check(m.t.path, true);
			break;
		case PROTO_HASH_REQ:
			if (proto_decode_hash_req(&f, &m.q) == 0)
				path_check(m.q.path, false);
			break;
		case PROTO_FILE_CHECK:
			if (proto_decode_file_check(&f, &m.c) == 0)
				path_check(m.c.path, false);
			break;
		default:
			proto_decode_entries_end(&f, &count, &err);
			break;
		}
		proto_frame_consume(in, &f);
	}
	blockhash_free(&list);
	evbuffer_free(in);
	return 0;
}
