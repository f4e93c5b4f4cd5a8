/*
 * pending — prints the paths the journal in STATE still has to send
 * (journal_list_pending), one "why<TAB>path" line each, for the crash
 * test. Works while no mount runs (offline), e.g. after a SIGKILL.
 * Usage: pending STATE STORE
 */
#include <stdio.h>
#include <string.h>

#include "journal/journal.h"

static void print_one(const char *path, const char *why, void *arg)
{
	(void)arg;
	if (strcmp(why, "renamed") != 0)	/* a second line for a path */
		printf("%s\t%s\n", why, path);
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: pending STATE STORE\n");
		return 2;
	}
	rc = journal_list_pending(argv[1], argv[2], print_one, NULL);
	if (rc < 0) {
		fprintf(stderr, "pending: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	return 0;
}
