/* libFuzzer target for what a peer can send before it is authenticated:
 * arbitrary bytes as the first flight of a TLS connection to a server
 * context of each kind (PSK, pinned keys), through a memory BIO, exactly
 * as serve's OpenSSL bufferevent hands them to the handshake. Byte 0
 * chooses the context. Every input must end in a failed (or, for a replay
 * of a real ClientHello, unfinished) handshake, never a crash or a leak;
 * no input may get an authenticated session. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "netsync/wire/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tls_ctx *ctx_psk, *ctx_pin;
static char fuzz_tls_dir[] = "/tmp/twinfs-fuzz-tls.XXXXXX";

static int fuzz_tls_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* The keys made for the run go with it: every run of the suite made a
 * folder of them in /tmp and left it there. */
static void fuzz_tls_cleanup(void)
{
	nftw(fuzz_tls_dir, fuzz_tls_rm, 8, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_tls_init(void)
{
	char *dir = fuzz_tls_dir;
	char psk[128], why[512], id[80], cert[256], key[256];
	struct tls_opts o = { 0 };

	if (!mkdtemp(dir))
		abort();
	atexit(fuzz_tls_cleanup);
	snprintf(psk, sizeof(psk), "%s/psk", dir);
	if (tls_keygen_psk(psk, why, sizeof(why)) < 0 || tls_keygen_cert(dir, why, sizeof(why)) < 0)
		abort();
	o.psk_file = psk;
	if (tls_ctx_new(&o, true, &ctx_psk, why, sizeof(why)) < 0)
		abort();
	tls_cert_paths(dir, cert, key, sizeof(cert));
	if (tls_fingerprint_file(cert, id, sizeof(id)) < 0)
		abort();
	memset(&o, 0, sizeof(o));
	o.cert = cert;
	o.key = key;
	o.peer_ids = id;
	if (tls_ctx_new(&o, true, &ctx_pin, why, sizeof(why)) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	BIO *rb, *wb;
	SSL *s;

	if (!ctx_psk)
		fuzz_tls_init();
	if (size < 1)
		return 0;
	s = tls_ssl_new(data[0] & 1 ? ctx_pin : ctx_psk);
	rb = BIO_new_mem_buf(data + 1, (int)(size - 1));
	wb = BIO_new(BIO_s_mem());
	if (!s || !rb || !wb)
		abort();
	SSL_set_bio(s, rb, wb);
	SSL_set_accept_state(s);
	if (SSL_do_handshake(s) == 1)
		abort();	/* authenticated by bytes nobody keyed */
	SSL_free(s);
	ERR_clear_error();
	return 0;
}
