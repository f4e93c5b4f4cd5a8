/*
 * twinfs_confman — the build-time tool that writes twinfs.yaml(5) from the
 * config key table: `twinfs_confman OUTFILE`. Not installed; CMake runs
 * it whenever the conf library changes (conf/CMakeLists.txt).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/confman.h"
#include "version.h"

int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: twinfs_confman OUTFILE\n");
		return 64;
	}
	f = fopen(argv[1], "we");
	if (!f) {
		fprintf(stderr, "twinfs_confman: cannot write %s: %s\n", argv[1], strerror(errno));
		return 73;
	}
	confman_print(f, TWINFS_VERSION);
	if (fclose(f) != 0) {
		fprintf(stderr, "twinfs_confman: cannot write %s: %s\n", argv[1], strerror(errno));
		return 74;
	}
	return 0;
}
