/*
 * addr — HOST:PORT syntax, resolution and the loopback test, shared by the
 * primary's sender (its --peer) and `serve` (its --listen and the primaries
 * it accepts) and by the config loader's address keys. Stateless; any
 * thread.
 */
#include "netsync/wire/addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int addr_parse(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon, *h = s;
	size_t hl;
	char *end;
	unsigned long p;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen)
		return -EINVAL;
	for (size_t i = 0; i < hl; i++)
		if (isspace((unsigned char)h[i]))
			return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p == 0 || p > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (uint16_t)p;
	return 0;
}

int addr_resolve(const char *hostport, int ai_flags, struct sockaddr_storage *ss,
		 socklen_t *len, int *gai_err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | ai_flags };
	struct addrinfo *res = NULL;
	char host[256], port[8];
	uint16_t p;
	int rc;

	if (addr_parse(hostport, host, sizeof(host), &p) < 0)
		return -EINVAL;
	snprintf(port, sizeof(port), "%u", p);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof(*ss)) {
		if (gai_err)
			*gai_err = rc ? rc : EAI_NONAME;
		if (res)
			freeaddrinfo(res);
		return -ENOENT;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		       in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

int addr_check_peer(const char *peer, bool insecure, char *why, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int rc;

	rc = addr_resolve(peer, 0, &ss, &sslen, NULL);
	if (rc == -EINVAL) {
		snprintf(why, len, "bad peer address '%s' (want HOST:PORT)", peer);
		return -EINVAL;
	}
	if (rc < 0) {
		/* Maybe resolvable later; the sender retries. */
		return 0;
	}
	if (!insecure && !addr_is_loopback((struct sockaddr *)&ss)) {
		snprintf(why, len, "peer %s is not a loopback address and the link has "
			 "no keys: secure it (--psk-file, or tls.peer_id), or pass "
			 "--insecure to replicate in the clear on a network you trust", peer);
		return -EPERM;
	}
	return 0;
}
