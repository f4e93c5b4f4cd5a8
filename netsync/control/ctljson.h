/*
 * ctljson — just enough JSON for the control socket (named apart from
 * bench/json.h, which writes reports to a FILE): a writer for one flat
 * object into an evbuffer (strings escaped), and a reader that looks up a
 * top-level key of a flat object (strings, numbers, true/false/null).
 * Not a general JSON library: no nesting on either side. Any thread.
 */
#ifndef TWINFS_CTLJSON_H
#define TWINFS_CTLJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

struct ctljson {
	struct evbuffer *b;
	int n;		/* keys written so far */
};

/* Starts "{" in b. */
void ctljson_begin(struct ctljson *j, struct evbuffer *b);
void ctljson_str(struct ctljson *j, const char *key, const char *val);	/* NULL -> null */
void ctljson_u64(struct ctljson *j, const char *key, uint64_t val);
void ctljson_i64(struct ctljson *j, const char *key, int64_t val);
void ctljson_double(struct ctljson *j, const char *key, double val);
void ctljson_bool(struct ctljson *j, const char *key, bool val);
/* Ends with "}\n". */
void ctljson_end(struct ctljson *j);

/* Looks up KEY in the flat object TEXT. Return 0, -ENOENT (no such key),
 * or -EINVAL (wrong type / malformed). ctljson_get_str copies the unescaped
 * string into buf (truncated to len-1). A null value reads as "" / 0 / false. */
int ctljson_get_str(const char *text, const char *key, char *buf, size_t len);
int ctljson_get_u64(const char *text, const char *key, uint64_t *val);
int ctljson_get_bool(const char *text, const char *key, bool *val);

#endif
