/*
 * xattrname — which extended attributes are part of a file's replicated
 * state: user.* and trusted.*, POSIX ACLs (system.posix_acl_access and
 * _default) and file capabilities (security.capability), which a failover
 * must keep as it keeps set-id bits. Other security.* (SELinux labels,
 * IMA/EVM, whose values are per-host policy or keyed per host) and other
 * system.* names belong to each host. Stateless; any thread.
 */
#ifndef TWINFS_XATTRNAME_H
#define TWINFS_XATTRNAME_H

#include <stdbool.h>

#define XATTRNAME_CAPS "security.capability"

bool xattrname_replicated(const char *name);

#endif
