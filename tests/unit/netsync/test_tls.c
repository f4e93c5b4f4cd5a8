/* Unit tests for netsync/wire/tls: real TLS 1.3 handshakes between a
 * client and a server context over a socketpair, for every way a peer can
 * be right or wrong (PSK, pinned ids, rotation, no key, plaintext), and
 * the key files (modes, refusal to overwrite). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/err.h>

#include "netsync/wire/tls.h"

struct fx {
	char dir[64];
	char why[512];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/twinfs-tls.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void path_in(const struct fx *f, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", f->dir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* Runs both ends of a handshake to completion on a socketpair; true if
 * both finished it. */
static bool handshake(struct tls_ctx *cli, struct tls_ctx *srv, char *who, size_t wlen)
{
	int sv[2];
	SSL *c, *s;
	bool cdone = false, sdone = false, failed = false;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	c = tls_ssl_new(cli);
	s = tls_ssl_new(srv);
	assert_non_null(c);
	assert_non_null(s);
	SSL_set_fd(c, sv[0]);
	SSL_set_fd(s, sv[1]);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	for (int i = 0; i < 200 && !failed && !(cdone && sdone); i++) {
		if (!cdone) {
			int r = SSL_do_handshake(c);

			if (r == 1)
				cdone = true;
			else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ &&
				 SSL_get_error(c, r) != SSL_ERROR_WANT_WRITE)
				failed = true;
		}
		if (!sdone && !failed) {
			int r = SSL_do_handshake(s);

			if (r == 1)
				sdone = true;
			else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ &&
				 SSL_get_error(s, r) != SSL_ERROR_WANT_WRITE)
				failed = true;
		}
	}
	/* TLS 1.3: the client finishes before the server has checked its
	 * certificate; a byte each way proves the server accepted it. */
	if (!failed && cdone && sdone) {
		char b = 'x';

		failed = SSL_write(c, &b, 1) != 1;
		for (int i = 0; i < 50 && !failed; i++) {
			int r = SSL_read(s, &b, 1);

			if (r == 1)
				break;
			if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
				failed = true;
		}
	}
	if (who)
		tls_peer_describe(s, who, wlen);
	if (getenv("TLS_TEST_DEBUG"))
		ERR_print_errors_fp(stderr);
	ERR_clear_error();
	SSL_free(c);
	SSL_free(s);
	close(sv[0]);
	close(sv[1]);
	return !failed && cdone && sdone;
}

static struct tls_ctx *psk_ctx(struct fx *f, const char *file, bool server)
{
	struct tls_opts o = { .psk_file = file };
	struct tls_ctx *t = NULL;

	assert_int_equal(tls_ctx_new(&o, server, &t, f->why, sizeof(f->why)), 0);
	return t;
}

static void test_psk(void **state)
{
	struct fx *f = *state;
	char a[128], b[128], who[128];
	struct tls_ctx *c, *s, *wrong;

	path_in(f, "a.key", a, sizeof(a));
	path_in(f, "b.key", b, sizeof(b));
	assert_int_equal(tls_keygen_psk(a, f->why, sizeof(f->why)), 0);
	assert_int_equal(tls_keygen_psk(b, f->why, sizeof(f->why)), 0);
	c = psk_ctx(f, a, false);
	s = psk_ctx(f, a, true);
	wrong = psk_ctx(f, b, false);
	assert_true(handshake(c, s, who, sizeof(who)));
	assert_non_null(strstr(who, "psk id twinfs-"));
	assert_false(handshake(wrong, s, NULL, 0));
	tls_ctx_free(c);
	tls_ctx_free(s);
	tls_ctx_free(wrong);
}

/* A rotation: the server accepts the old and the new key while the
 * client moves from one to the other. */
static void test_psk_rotation(void **state)
{
	struct fx *f = *state;
	char old[128], new[128], both[128], text[512], line[2][128];
	struct tls_ctx *co, *cn, *s;
	FILE *in;

	path_in(f, "old.key", old, sizeof(old));
	path_in(f, "new.key", new, sizeof(new));
	path_in(f, "both.key", both, sizeof(both));
	assert_int_equal(tls_keygen_psk(old, f->why, sizeof(f->why)), 0);
	assert_int_equal(tls_keygen_psk(new, f->why, sizeof(f->why)), 0);
	for (int i = 0; i < 2; i++) {
		in = fopen(i ? old : new, "r");
		assert_non_null(in);
		assert_non_null(fgets(line[i], sizeof(line[i]), in));	/* comment */
		assert_non_null(fgets(line[i], sizeof(line[i]), in));
		fclose(in);
	}
	snprintf(text, sizeof(text), "# new first\n%s\n%s", line[0], line[1]);
	write_file(both, text, 0600);
	co = psk_ctx(f, old, false);
	cn = psk_ctx(f, new, false);
	s = psk_ctx(f, both, true);
	assert_true(handshake(co, s, NULL, 0));
	assert_true(handshake(cn, s, NULL, 0));
	tls_ctx_free(co);
	tls_ctx_free(cn);
	tls_ctx_free(s);
}

static void test_psk_file_refused(void **state)
{
	struct fx *f = *state;
	char p[128];
	struct tls_opts o = { .psk_file = p };
	struct tls_ctx *t = NULL;

	path_in(f, "open.key", p, sizeof(p));
	write_file(p, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0644);
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -EPERM);
	assert_non_null(strstr(f->why, "chmod 600"));
	write_file(p, "not a key\n", 0600);
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -EINVAL);
	assert_non_null(strstr(f->why, ":1: not a key"));
	write_file(p, "# only a comment\n", 0600);
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -EINVAL);
	path_in(f, "missing.key", p, sizeof(p));
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -ENOENT);
	assert_null(t);
	/* never over an existing file */
	path_in(f, "x.key", p, sizeof(p));
	assert_int_equal(tls_keygen_psk(p, f->why, sizeof(f->why)), 0);
	assert_int_equal(tls_keygen_psk(p, f->why, sizeof(f->why)), -EEXIST);
}

/* Node N's pinned context accepting PEERS. */
static struct tls_ctx *pin_ctx(struct fx *f, const char *node, const char *peers,
			       bool server)
{
	char dir[128], cert[256], key[256];
	struct tls_opts o = { .cert = cert, .key = key, .peer_ids = peers };
	struct tls_ctx *t = NULL;

	path_in(f, node, dir, sizeof(dir));
	tls_cert_paths(dir, cert, key, sizeof(cert));
	assert_int_equal(tls_ctx_new(&o, server, &t, f->why, sizeof(f->why)), 0);
	return t;
}

static void make_node(struct fx *f, const char *node, char *id, size_t len)
{
	char dir[128], cert[256];
	struct stat st;

	path_in(f, node, dir, sizeof(dir));
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(tls_keygen_cert(dir, f->why, sizeof(f->why)), 0);
	tls_cert_paths(dir, cert, NULL, sizeof(cert));
	assert_int_equal(stat(cert, &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
	assert_int_equal(tls_fingerprint_file(cert, id, len), 0);
	assert_int_equal(strlen(id), 64);
	assert_int_equal(tls_keygen_cert(dir, f->why, sizeof(f->why)), -EEXIST);
}

static void test_pinned(void **state)
{
	struct fx *f = *state;
	char ida[80], idb[80], idc[80], who[128], lower[80], list[200];
	struct tls_ctx *a, *b, *c, *b_any;

	make_node(f, "a", ida, sizeof(ida));
	make_node(f, "b", idb, sizeof(idb));
	make_node(f, "c", idc, sizeof(idc));
	a = pin_ctx(f, "a", idb, false);
	b = pin_ctx(f, "b", ida, true);
	assert_true(handshake(a, b, who, sizeof(who)));
	assert_string_equal(who + 3, ida);
	/* c is nobody's peer: refused by b as a client, and a refuses b's
	 * id when a pins c */
	c = pin_ctx(f, "c", idb, false);
	assert_false(handshake(c, b, NULL, 0));
	tls_ctx_free(a);
	a = pin_ctx(f, "a", idc, false);
	assert_false(handshake(a, b, NULL, 0));
	/* ids are read without dashes, in any case, several at once */
	for (size_t i = 0; i <= strlen(ida); i++)
		lower[i] = (char)((ida[i] >= 'A' && ida[i] <= 'Z') ? ida[i] + 32 : ida[i]);
	snprintf(list, sizeof(list), "%s, %s", idc, lower);
	b_any = pin_ctx(f, "b", list, true);
	tls_ctx_free(a);
	a = pin_ctx(f, "a", idb, false);
	assert_true(handshake(a, b_any, NULL, 0));
	tls_ctx_free(a);
	tls_ctx_free(b);
	tls_ctx_free(c);
	tls_ctx_free(b_any);
}

static void test_pinned_needs_peer(void **state)
{
	struct fx *f = *state;
	char id[80], dir[128], cert[256], key[256];
	struct tls_opts o = { .cert = cert, .key = key, .peer_ids = "" };
	struct tls_ctx *t = NULL;

	make_node(f, "n", id, sizeof(id));
	path_in(f, "n", dir, sizeof(dir));
	tls_cert_paths(dir, cert, key, sizeof(cert));
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -EINVAL);
	assert_non_null(strstr(f->why, "tls.peer_id"));
	o.peer_ids = "ABCD-EFGH";
	assert_int_equal(tls_ctx_new(&o, true, &t, f->why, sizeof(f->why)), -EINVAL);
	assert_null(t);
}

/* A PSK client cannot talk to a pinned server and the other way round,
 * and plaintext gets nowhere. */
static void test_mixed_and_plaintext(void **state)
{
	struct fx *f = *state;
	char p[128], ida[80], idb[80];
	struct tls_ctx *pc, *ps, *a, *b;
	int sv[2];
	SSL *s;
	char buf[64];

	path_in(f, "k", p, sizeof(p));
	assert_int_equal(tls_keygen_psk(p, f->why, sizeof(f->why)), 0);
	make_node(f, "a", ida, sizeof(ida));
	make_node(f, "b", idb, sizeof(idb));
	pc = psk_ctx(f, p, false);
	ps = psk_ctx(f, p, true);
	a = pin_ctx(f, "a", idb, false);
	b = pin_ctx(f, "b", ida, true);
	assert_false(handshake(pc, b, NULL, 0));
	assert_false(handshake(a, ps, NULL, 0));

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s = tls_ssl_new(ps);
	SSL_set_fd(s, sv[1]);
	SSL_set_accept_state(s);
	assert_int_equal(write(sv[0], "HELLO twinfs plaintext\r\n", 24), 24);
	assert_true(SSL_do_handshake(s) <= 0);
	assert_int_equal(SSL_get_error(s, -1) == SSL_ERROR_WANT_READ, 0);
	assert_true(read(sv[0], buf, sizeof(buf)) != 0);	/* an alert, or nothing */
	ERR_clear_error();
	SSL_free(s);
	close(sv[0]);
	close(sv[1]);
	tls_ctx_free(pc);
	tls_ctx_free(ps);
	tls_ctx_free(a);
	tls_ctx_free(b);
}

/* The settings of a node become options: one mode at a time, pinned keys
 * from the state dir by default, a peer certificate pinned by its id. */
static void test_opts_init(void **state)
{
	struct fx *f = *state;
	struct tls_opts o;
	char id[80], dir[128], cert[256];
	struct tls_ctx *a, *b;

	assert_int_equal(tls_opts_init(&o, f->dir, NULL, NULL, NULL, NULL, NULL,
				       f->why, sizeof(f->why)), 0);
	assert_false(tls_opts_enabled(&o));
	assert_int_equal(tls_opts_init(&o, f->dir, "/x/psk", NULL, NULL, "ABCD", NULL,
				       f->why, sizeof(f->why)), -EINVAL);
	assert_non_null(strstr(f->why, "choose one"));
	make_node(f, "a", id, sizeof(id));
	make_node(f, "b", id, sizeof(id));
	path_in(f, "b", dir, sizeof(dir));
	tls_cert_paths(dir, cert, NULL, sizeof(cert));
	/* a pins b by b's certificate file */
	path_in(f, "a", dir, sizeof(dir));
	assert_int_equal(tls_opts_init(&o, dir, NULL, NULL, NULL, NULL, cert,
				       f->why, sizeof(f->why)), 0);
	assert_true(tls_opts_enabled(&o));
	assert_int_equal(strlen(o.peer_ids), 64);	/* grouped, as printed */
	assert_int_equal(tls_ctx_new(&o, false, &a, f->why, sizeof(f->why)), 0);
	path_in(f, "a", dir, sizeof(dir));
	tls_cert_paths(dir, cert, NULL, sizeof(cert));
	assert_int_equal(tls_fingerprint_file(cert, id, sizeof(id)), 0);
	path_in(f, "b", dir, sizeof(dir));
	assert_int_equal(tls_opts_init(&o, dir, NULL, NULL, NULL, id, NULL,
				       f->why, sizeof(f->why)), 0);
	assert_int_equal(tls_ctx_new(&o, true, &b, f->why, sizeof(f->why)), 0);
	assert_true(handshake(a, b, NULL, 0));
	tls_ctx_free(a);
	tls_ctx_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_psk, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_psk_rotation, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_psk_file_refused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pinned, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pinned_needs_peer, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mixed_and_plaintext, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_opts_init, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
