/*
 * Unit tests for netsync/wire/addr: HOST:PORT and [v6]:PORT syntax (table
 * of good and bad strings), resolution of numeric and named addresses,
 * and which addresses count as loopback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "netsync/wire/addr.h"

static void test_parse(void **state)
{
	static const struct {
		const char *in;
		int rc;
		const char *host;
		uint16_t port;
	} cases[] = {
		{ "127.0.0.1:7420", 0, "127.0.0.1", 7420 },
		{ "localhost:1", 0, "localhost", 1 },
		{ "peer.example:65535", 0, "peer.example", 65535 },
		{ "[::1]:7420", 0, "::1", 7420 },
		{ "[fe80::1%lo]:80", 0, "fe80::1%lo", 80 },
		{ "", -EINVAL, NULL, 0 },
		{ "host", -EINVAL, NULL, 0 },
		{ "host:", -EINVAL, NULL, 0 },
		{ ":7420", -EINVAL, NULL, 0 },
		{ "host:0", -EINVAL, NULL, 0 },
		{ "host:65536", -EINVAL, NULL, 0 },
		{ "host:12x", -EINVAL, NULL, 0 },
		{ "host:-1", -EINVAL, NULL, 0 },
		{ "::1:7420", -EINVAL, NULL, 0 },	/* v6 needs brackets */
		{ "[::1]7420", -EINVAL, NULL, 0 },
		{ "[::1:7420", -EINVAL, NULL, 0 },
		{ "[]:7420", -EINVAL, NULL, 0 },
		{ "my host:7420", -EINVAL, NULL, 0 },
	};
	char host[256];
	uint16_t port;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		port = 0;
		host[0] = '\0';
		if (addr_parse(cases[i].in, host, sizeof(host), &port) != cases[i].rc)
			fail_msg("addr_parse(\"%s\") != %d", cases[i].in, cases[i].rc);
		if (cases[i].rc == 0) {
			assert_string_equal(host, cases[i].host);
			assert_int_equal(port, cases[i].port);
		}
	}
	assert_int_equal(addr_parse(NULL, host, sizeof(host), &port), -EINVAL);
	/* a host that does not fit the buffer */
	assert_int_equal(addr_parse("abcdefgh:1", host, 8, &port), -EINVAL);
	assert_int_equal(addr_parse("abcdefg:1", host, 8, &port), 0);
}

static void test_resolve(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int gai = 0;

	assert_int_equal(addr_resolve("127.0.0.1:7420", AI_ADDRCONFIG, &ss, &len, &gai), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 7420);
	assert_true(addr_is_loopback((struct sockaddr *)&ss));

	assert_int_equal(addr_resolve("[::1]:80", AI_PASSIVE, &ss, &len, NULL), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 80);
	assert_true(addr_is_loopback((struct sockaddr *)&ss));

	assert_int_equal(addr_resolve("localhost:9", 0, &ss, &len, NULL), 0);
	assert_true(addr_is_loopback((struct sockaddr *)&ss));

	assert_int_equal(addr_resolve("10.1.2.3:9", 0, &ss, &len, NULL), 0);
	assert_false(addr_is_loopback((struct sockaddr *)&ss));

	assert_int_equal(addr_resolve("127.0.0.1", 0, &ss, &len, &gai), -EINVAL);
	/* .invalid never resolves (RFC 6761) */
	gai = 0;
	assert_int_equal(addr_resolve("no-such-host.invalid:9", 0, &ss, &len, &gai), -ENOENT);
	assert_true(gai != 0);
	assert_non_null(gai_strerror(gai));
}

static void test_loopback(void **state)
{
	static const struct {
		const char *addr;
		int family;
		bool loopback;
	} cases[] = {
		{ "127.0.0.1", AF_INET, true },
		{ "127.255.1.2", AF_INET, true },
		{ "128.0.0.1", AF_INET, false },
		{ "10.0.0.1", AF_INET, false },
		{ "0.0.0.0", AF_INET, false },
		{ "::1", AF_INET6, true },
		{ "::ffff:127.0.0.1", AF_INET6, true },
		{ "::ffff:10.0.0.1", AF_INET6, false },
		{ "::", AF_INET6, false },
		{ "2001:db8::1", AF_INET6, false },
		{ "fe80::1", AF_INET6, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss = { 0 };

		ss.ss_family = (sa_family_t)cases[i].family;
		if (cases[i].family == AF_INET)
			assert_int_equal(inet_pton(AF_INET, cases[i].addr,
						   &((struct sockaddr_in *)&ss)->sin_addr), 1);
		else
			assert_int_equal(inet_pton(AF_INET6, cases[i].addr,
						   &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
		if (addr_is_loopback((struct sockaddr *)&ss) != cases[i].loopback)
			fail_msg("addr_is_loopback(%s) != %d", cases[i].addr, cases[i].loopback);
	}
	{
		struct sockaddr sa = { .sa_family = AF_UNIX };

		assert_false(addr_is_loopback(&sa));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
