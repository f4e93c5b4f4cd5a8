/* libFuzzer target for the replication protocol's parsing: arbitrary bytes
 * from the network go through proto_frame_next and every decoder (and the
 * path check the receiver applies), exactly as serve reads them. Any
 * over-read or crash is a bug; rejecting input is the expected outcome.
 * Input byte 0 chooses: odd = a raw byte stream (framing); even = byte 1
 * picks a type and the rest becomes the payload of a frame with a valid
 * header and check, so that the decoders see payloads the XXH3 check
 * would otherwise keep the fuzzer from reaching. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "netsync/wire/path.h"
#include "netsync/wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	struct proto_frame f;

	if (!in || size < 2)
		goto out;
	if (data[0] & 1) {
		/* Two pieces, as a socket would deliver them ("need more"). */
		evbuffer_add(in, data + 1, (size - 1) / 2);
		if (proto_frame_next(in, &f) < 0)
			goto out;
		evbuffer_add(in, data + 1 + (size - 1) / 2, size - 1 - (size - 1) / 2);
	} else {
		size_t plen = size - 2;
		uint8_t hdr[PROTO_HDR_LEN];
		struct proto_hdr h = { .type = (uint16_t)(data[1] % 9 + 1),
				       .len = (uint32_t)plen, .clen = (uint32_t)plen };
		XXH3_state_t *st = XXH3_createState();

		if (h.type == PROTO_DATA)	/* split head/block at a fuzzed point */
			h.clen = plen ? (uint32_t)(data[0] * 7u % (plen + 1)) : 0;
		proto_hdr_write(hdr, &h);
		XXH3_64bits_reset(st);
		XXH3_64bits_update(st, hdr, sizeof(hdr));
		XXH3_64bits_update(st, data + 2, h.clen);
		h.check = XXH3_64bits_digest(st);
		XXH3_freeState(st);
		proto_hdr_write(hdr, &h);
		evbuffer_add(in, hdr, sizeof(hdr));
		evbuffer_add(in, data + 2, plen);
	}
	while (proto_frame_next(in, &f) == 1) {
		union {
			struct proto_hello hello;
			struct proto_op op;
			struct proto_data data;
			struct proto_attr attr;
			struct proto_error err;
		} m;
		const char *s;
		uint64_t v;

		switch (f.h.type) {
		case PROTO_HELLO:
			proto_decode_hello(&f, &m.hello);
			break;
		case PROTO_OP:
			if (proto_decode_op(&f, &m.op) == 0) {
				path_check(m.op.op.path, true);
				if (m.op.op.path2)
					path_check(m.op.op.path2, false);
			}
			break;
		case PROTO_DATA:
			if (proto_decode_data(&f, &m.data) == 0) {
				proto_data_verify(&m.data);
				path_check(m.data.path, false);
			}
			break;
		case PROTO_ATTR:
			if (proto_decode_attr(&f, &m.attr) == 0)
				path_check(m.attr.path, true);
			break;
		case PROTO_BATCH_END:
		case PROTO_ACK:
			proto_decode_seq(&f, &v);
			break;
		case PROTO_HEARTBEAT:
			proto_decode_heartbeat(&f, &v);
			break;
		case PROTO_GOODBYE:
			proto_decode_goodbye(&f, &s);
			break;
		case PROTO_ERROR:
			proto_decode_error(&f, &m.err);
			break;
		}
		proto_frame_consume(in, &f);
	}
out:
	evbuffer_free(in);
	return 0;
}
