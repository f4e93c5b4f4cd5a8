/*
 * addr — the addresses of peers and listeners: HOST:PORT or [IPv6]:PORT
 * syntax, resolution, and the loopback test behind the rule that without
 * TLS keys twinfs talks only on loopback addresses unless told --insecure
 * (a file store must not be readable by anyone who can reach the port).
 * Stateless; any thread (addr_resolve blocks in getaddrinfo).
 */
#ifndef TWINFS_ADDR_H
#define TWINFS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Splits "host:port" or "[v6]:port" (port 1..65535, no spaces in host)
 * into HOST (NUL-terminated, less than HOSTLEN) and *PORT. 0 or -EINVAL. */
int addr_parse(const char *s, char *host, size_t hostlen, uint16_t *port);

/* Resolves HOSTPORT to its first stream address. AI_FLAGS are added to
 * getaddrinfo's (AI_PASSIVE for a listen address, AI_ADDRCONFIG for a
 * peer to connect to). Returns 0 and fills *SS and *LEN, -EINVAL (syntax)
 * or -ENOENT (it does not resolve; *GAI_ERR, if not NULL, then holds the
 * code for gai_strerror). */
int addr_resolve(const char *hostport, int ai_flags, struct sockaddr_storage *ss,
		 socklen_t *len, int *gai_err);

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool addr_is_loopback(const struct sockaddr *sa);
/* Checks the primary's peer address before it starts: HOST:PORT syntax,
 * and without insecure (or TLS keys: pass insecure=true then) only
 * loopback addresses. Returns 0 (also for a name that does not resolve
 * yet: the sender retries), or -EINVAL/-EPERM with a sentence for the
 * user in why. */
int addr_check_peer(const char *peer, bool insecure, char *why, size_t len);

#endif
