/* libFuzzer target for the control socket's JSON reader, which the CLI
 * runs on every daemon reply: arbitrary text (NUL-terminated copy) looked
 * up for a few keys of each type. Rejecting is fine; over-reads are bugs. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netsync/control/ctljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "ok", "role", "error", "lag_ops", "a", "" };
	char *text = malloc(size + 1);
	char buf[64];
	uint64_t u;
	bool b;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		ctljson_get_str(text, keys[i], buf, sizeof(buf));
		ctljson_get_str(text, keys[i], buf, 1);
		ctljson_get_u64(text, keys[i], &u);
		ctljson_get_bool(text, keys[i], &b);
	}
	free(text);
	return 0;
}
