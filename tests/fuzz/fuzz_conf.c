/*
 * fuzz_conf — feeds arbitrary bytes to the YAML config loader: it must
 * report errors, never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fuzz_conf.XXXXXX";
	struct conf c;
	struct conf_diag d = { .lenient_paths = 1 };
	int fd = mkstemp(path);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	conf_init(&c);
	if (conf_load_file(&c, path, &d) == 0)
		conf_validate(&c, CONF_FOR_ANY, &d);
	conf_diag_free(&d);
	conf_free(&c);
	unlink(path);
	return 0;
}
