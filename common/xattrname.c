/*
 * xattrname — the replicated extended attribute names (xattrname.h).
 * Stateless; any thread.
 */
#include "common/xattrname.h"

#include <string.h>

bool xattrname_replicated(const char *name)
{
	return strncmp(name, "user.", 5) == 0 || strncmp(name, "trusted.", 8) == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0 ||
	       strcmp(name, XATTRNAME_CAPS) == 0;
}
