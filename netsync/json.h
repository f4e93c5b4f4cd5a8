/*
 * json — just enough JSON for the control socket: a writer for one flat
 * object into an evbuffer (strings escaped), and a reader that looks up a
 * top-level key of a flat object (strings, numbers, true/false/null).
 * Not a general JSON library: no nesting on either side. Any thread.
 */
#ifndef TWINFS_JSON_H
#define TWINFS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

struct json_out {
	struct evbuffer *b;
	int n;		/* keys written so far */
};

/* Starts "{" in b. */
void json_begin(struct json_out *j, struct evbuffer *b);
void json_str(struct json_out *j, const char *key, const char *val);	/* NULL -> null */
void json_u64(struct json_out *j, const char *key, uint64_t val);
void json_i64(struct json_out *j, const char *key, int64_t val);
void json_double(struct json_out *j, const char *key, double val);
void json_bool(struct json_out *j, const char *key, bool val);
/* Ends with "}\n". */
void json_end(struct json_out *j);

/* Looks up KEY in the flat object TEXT. Return 0, -ENOENT (no such key),
 * or -EINVAL (wrong type / malformed). json_get_str copies the unescaped
 * string into buf (truncated to len-1). A null value reads as "" / 0 / false. */
int json_get_str(const char *text, const char *key, char *buf, size_t len);
int json_get_u64(const char *text, const char *key, uint64_t *val);
int json_get_bool(const char *text, const char *key, bool *val);

#endif
