/*
 * tls — TLS 1.3 contexts for the link between nodes: external PSK or
 * pinned self-signed Ed25519 certificates, and the key files behind them.
 * Built at start-up on the main thread; afterwards read-only, so the
 * OpenSSL callbacks below may run on any thread that handshakes.
 *
 * Why TLS 1.3 only: both ends are twinfs, so nothing older needs to be
 * spoken, and 1.3 is the version whose external PSK mode authenticates
 * both ends with forward secrecy (psk_dhe_ke) and no certificate at all.
 * Session tickets are off: a resumed session would be a second,
 * unrotated key beside the configured ones. The suites are the SHA-256
 * ones (AES-128-GCM, ChaCha20-Poly1305): an external PSK is bound to one
 * hash.
 */
#include "netsync/wire/tls.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#define TLS_KEY_BYTES	32
#define TLS_MAX_KEYS	8
#define TLS_MAX_PEERS	8
#define TLS_FP_CHARS	52	/* base32 of a SHA-256 digest */

struct tls_psk {
	unsigned char key[TLS_KEY_BYTES];
	char id[40];		/* "twinfs-" + 16 hex digits of a hash of the key */
};

struct tls_ctx {
	SSL_CTX *ctx;
	bool server;
	bool pinned;
	struct tls_psk keys[TLS_MAX_KEYS];
	int n_keys;
	char *psk_path;		/* re-read when it changes (tls_ctx_reload) */
	struct stat psk_st;	/* the file as last read */
	char peers[TLS_MAX_PEERS][TLS_FP_CHARS + 1];
	int n_peers;
};

static const unsigned char tls13_aes128gcmsha256_id[] = { 0x13, 0x01 };
static int tls_ex_idx = -1;
static int tls_ssl_idx = -1;	/* SSL: the struct tls_psk the handshake used */

const char *tls_error_string(char *buf, size_t len)
{
	unsigned long e, last = 0;

	while ((e = ERR_get_error()) != 0)
		last = e;
	if (!last) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	ERR_error_string_n(last, buf, len);
	return buf;
}

bool tls_opts_enabled(const struct tls_opts *o)
{
	return o && ((o->psk_file && *o->psk_file) || (o->cert && *o->cert));
}

static struct tls_ctx *tls_of(SSL *ssl)
{
	return SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), tls_ex_idx);
}

/* ---- key files ---------------------------------------------------- */

/* A key file must be the daemon's alone: a secret others can read is no
 * secret, and one others can write lets them choose it. */
static int tls_check_private(const char *path, char *why, size_t len)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int e = errno;

		snprintf(why, len, "cannot read key file %s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "key file %s is not a regular file", path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(why, len, "key file %s is open to other users (mode %04o); "
			 "run chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

static int tls_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void tls_psk_name(struct tls_psk *k)
{
	static const char label[] = "twinfs psk identity";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	memset(md, 0, sizeof(md));
	if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(c, label, sizeof(label)) &&
	    EVP_DigestUpdate(c, k->key, sizeof(k->key)))
		EVP_DigestFinal_ex(c, md, &n);
	EVP_MD_CTX_free(c);
	snprintf(k->id, sizeof(k->id), "twinfs-%02x%02x%02x%02x%02x%02x%02x%02x",
		 md[0], md[1], md[2], md[3], md[4], md[5], md[6], md[7]);
}

/* Parses one line of hex into K; 0, or -EINVAL. */
static int tls_psk_parse(const char *s, struct tls_psk *k)
{
	size_t n = 0;

	for (; *s && n < 2 * TLS_KEY_BYTES; s++) {
		int v = tls_hex((unsigned char)*s);

		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			k->key[n / 2] = (unsigned char)(v << 4);
		else
			k->key[n / 2] |= (unsigned char)v;
		n++;
	}
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	if (n != 2 * TLS_KEY_BYTES || *s)
		return -EINVAL;
	tls_psk_name(k);
	return 0;
}

/* Reads the keys of a PSK file into KEYS (*N of them): the first is the
 * one this node offers when it connects; a server accepts any of them (a
 * rotation lists the new key first on one node, both on the other). *ST
 * gets the file's identity as read. */
static int tls_read_psk(const char *path, struct tls_psk *keys, int *n, struct stat *st,
			char *why, size_t len)
{
	char line[256];
	int lineno = 0, rc;
	FILE *f;

	*n = 0;
	rc = tls_check_private(path, why, len);
	if (rc < 0)
		return rc;
	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		snprintf(why, len, "cannot open key file %s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fileno(f), st) < 0)
		memset(st, 0, sizeof(*st));
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		if (*n == TLS_MAX_KEYS) {
			snprintf(why, len, "%s:%d: more than %d keys", path, lineno, TLS_MAX_KEYS);
			fclose(f);
			return -EINVAL;
		}
		if (tls_psk_parse(p, &keys[*n]) < 0) {
			snprintf(why, len, "%s:%d: not a key (expected %d hex digits; "
				 "make one with 'twinfs keygen --psk FILE')", path, lineno,
				 2 * TLS_KEY_BYTES);
			fclose(f);
			return -EINVAL;
		}
		(*n)++;
	}
	OPENSSL_cleanse(line, sizeof(line));
	fclose(f);
	if (*n == 0) {
		snprintf(why, len, "key file %s holds no key", path);
		return -EINVAL;
	}
	return 0;
}

static int tls_load_psk(struct tls_ctx *t, const char *path, char *why, size_t len)
{
	int rc = tls_read_psk(path, t->keys, &t->n_keys, &t->psk_st, why, len);

	if (rc < 0)
		return rc;
	t->psk_path = strdup(path);
	return t->psk_path ? 0 : -ENOMEM;
}

/*
 * Key rotation without a restart. A PSK file is read again once it has
 * changed (another inode, size or mtime: an editor's rename or an
 * overwrite), checked once a second by each daemon's tick; the new keys
 * serve the connections made after it. A file that does not read is
 * reported and the old keys stay. tls_auth_current then tells whether a
 * live connection's key is still the one to use: on a server any key of
 * the file, on a client its first.
 */
int tls_ctx_reload(struct tls_ctx *t, char *why, size_t len)
{
	struct tls_psk keys[TLS_MAX_KEYS];
	struct stat st;
	int n = 0, rc;

	if (!t || !t->psk_path)
		return 0;
	if (stat(t->psk_path, &st) < 0) {
		rc = -errno;
		if (t->psk_st.st_ino == 0 && t->psk_st.st_dev == 0)
			return 0;	/* reported already */
		memset(&t->psk_st, 0, sizeof(t->psk_st));
		snprintf(why, len, "cannot read key file %s: %s; keeping the keys it "
			 "had", t->psk_path, strerror(-rc));
		return rc;
	}
	if (st.st_dev == t->psk_st.st_dev && st.st_ino == t->psk_st.st_ino &&
	    st.st_size == t->psk_st.st_size &&
	    st.st_mtim.tv_sec == t->psk_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == t->psk_st.st_mtim.tv_nsec)
		return 0;
	rc = tls_read_psk(t->psk_path, keys, &n, &st, why, len);
	t->psk_st = st;	/* a bad file is reported once, not every second */
	if (rc < 0) {
		size_t l = strlen(why);

		snprintf(why + l, len - l, "; keeping the keys it had");
		OPENSSL_cleanse(keys, sizeof(keys));
		return rc;
	}
	memcpy(t->keys, keys, sizeof(keys));
	t->n_keys = n;
	OPENSSL_cleanse(keys, sizeof(keys));
	snprintf(why, len, "%d key(s) from %s", n, t->psk_path);
	return 1;
}

bool tls_auth_current(const struct tls_ctx *t, const char *auth)
{
	if (!t || !t->psk_path || !auth || !*auth)
		return true;
	for (int i = 0; i < (t->server ? t->n_keys : 1); i++)
		if (strstr(auth, t->keys[i].id))
			return true;
	return false;
}

/* "ab-cd ef" -> "ABCDEF" (the separators a human may type); -EINVAL when
 * the result is not a fingerprint. */
static int tls_fp_normalise(const char *in, size_t n, char *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int c = toupper((unsigned char)in[i]);

		if (c == '-')
			continue;
		if (!((c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7')) || k == TLS_FP_CHARS)
			return -EINVAL;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	return k == TLS_FP_CHARS ? 0 : -EINVAL;
}

static int tls_load_peers(struct tls_ctx *t, const char *ids, char *why, size_t len)
{
	const char *p = ids ? ids : "";

	while (*p) {
		size_t n = strcspn(p, ", \t\n");

		if (n) {
			if (t->n_peers == TLS_MAX_PEERS) {
				snprintf(why, len, "more than %d peer ids", TLS_MAX_PEERS);
				return -EINVAL;
			}
			if (tls_fp_normalise(p, n, t->peers[t->n_peers]) < 0) {
				snprintf(why, len, "'%.*s' is not a peer id (it looks like "
					 "what 'twinfs id --state DIR' prints on the peer)",
					 (int)(n > 80 ? 80 : n), p);
				return -EINVAL;
			}
			t->n_peers++;
		}
		p += n;
		if (*p)
			p++;
	}
	if (t->n_peers == 0) {
		snprintf(why, len, "pinned keys need the peer's id (tls.peer_id, from "
			 "'twinfs id --state DIR' on the peer)");
		return -EINVAL;
	}
	return 0;
}

/* ---- fingerprints ------------------------------------------------- */

static void tls_base32(const unsigned char *in, size_t n, char *out)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	unsigned int acc = 0;
	int bits = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | in[i];
		bits += 8;
		while (bits >= 5) {
			out[k++] = al[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	if (bits > 0)
		out[k++] = al[(acc << (5 - bits)) & 31];
	out[k] = '\0';
}

/* The bare fingerprint of X (TLS_FP_CHARS characters). */
static int tls_fp_of(X509 *x, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!X509_digest(x, EVP_sha256(), md, &n) || n != 32)
		return -EIO;
	tls_base32(md, n, out);
	return 0;
}

static void tls_fp_group(const char *fp, char *out, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; fp[i] && k + 2 < len; i++) {
		if (i && i % 4 == 0)
			out[k++] = '-';
		out[k++] = fp[i];
	}
	out[k] = '\0';
}

int tls_fingerprint_file(const char *cert_path, char *out, size_t len)
{
	char fp[TLS_FP_CHARS + 1];
	X509 *x = NULL;
	FILE *f;
	int rc;

	f = fopen(cert_path, "re");
	if (!f)
		return -errno;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (!x)
		return -EINVAL;
	rc = tls_fp_of(x, fp);
	X509_free(x);
	if (rc < 0)
		return rc;
	tls_fp_group(fp, out, len);
	return 0;
}

int tls_opts_init(struct tls_opts *o, const char *state, const char *psk_file,
		  const char *cert, const char *key, const char *peer_ids,
		  const char *peer_cert, char *why, size_t len)
{
	bool pinned = (peer_ids && *peer_ids) || (peer_cert && *peer_cert) ||
		      (cert && *cert);
	char fp[80];
	int rc;

	memset(o, 0, sizeof(*o));
	if (psk_file && *psk_file && pinned) {
		snprintf(why, len, "tls.psk_file and pinned keys (tls.peer_id, tls.peer_cert, "
			 "tls.cert) are two ways to secure the link: choose one");
		return -EINVAL;
	}
	if (psk_file && *psk_file) {
		o->psk_file = psk_file;
		return 0;
	}
	if (!pinned)
		return 0;
	if (cert && *cert) {
		snprintf(o->cert_buf, sizeof(o->cert_buf), "%s", cert);
		snprintf(o->key_buf, sizeof(o->key_buf), "%s", key ? key : "");
	} else {
		tls_cert_paths(state, o->cert_buf, o->key_buf, sizeof(o->cert_buf));
	}
	snprintf(o->ids_buf, sizeof(o->ids_buf), "%s", peer_ids ? peer_ids : "");
	if (peer_cert && *peer_cert) {
		rc = tls_fingerprint_file(peer_cert, fp, sizeof(fp));
		if (rc < 0) {
			snprintf(why, len, "cannot read the peer's certificate %s: %s", peer_cert,
				 rc == -EINVAL ? "not a PEM certificate" : strerror(-rc));
			return rc;
		}
		size_t n = strlen(o->ids_buf);

		snprintf(o->ids_buf + n, sizeof(o->ids_buf) - n, "%s%s", n ? "," : "", fp);
	}
	o->cert = o->cert_buf;
	o->key = o->key_buf;
	o->peer_ids = o->ids_buf;
	return 0;
}

/* ---- handshake callbacks ------------------------------------------ */

static SSL_SESSION *tls_psk_session(SSL *ssl, const struct tls_psk *k,
				    const SSL_CIPHER **cipher)
{
	SSL_SESSION *s;

	*cipher = SSL_CIPHER_find(ssl, tls13_aes128gcmsha256_id);
	if (!*cipher)
		return NULL;
	s = SSL_SESSION_new();
	if (!s)
		return NULL;
	if (!SSL_SESSION_set1_master_key(s, k->key, sizeof(k->key)) ||
	    !SSL_SESSION_set_cipher(s, *cipher) ||
	    !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

/* Client: offer the first key of the file. OpenSSL owns the session. */
static int tls_psk_use_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id,
			  size_t *idlen, SSL_SESSION **sess)
{
	struct tls_ctx *t = tls_of(ssl);
	const SSL_CIPHER *cipher;
	SSL_SESSION *s;

	if (!t || t->n_keys == 0)
		return 0;
	s = tls_psk_session(ssl, &t->keys[0], &cipher);
	if (!s)
		return 0;
	if (md && SSL_CIPHER_get_handshake_digest(cipher) != md) {
		/* the server chose a suite with another hash: no PSK fits it */
		SSL_SESSION_free(s);
		*id = NULL;
		*idlen = 0;
		*sess = NULL;
		return 1;
	}
	*id = (const unsigned char *)t->keys[0].id;
	*idlen = strlen(t->keys[0].id);
	*sess = s;
	SSL_set_ex_data(ssl, tls_ssl_idx, &t->keys[0]);
	return 1;
}

/* Server: accept any key of the file, found by its identity. An unknown
 * identity yields no session, and with no certificate to fall back on
 * the handshake fails. */
static int tls_psk_find_cb(SSL *ssl, const unsigned char *id, size_t idlen,
			   SSL_SESSION **sess)
{
	struct tls_ctx *t = tls_of(ssl);
	const SSL_CIPHER *cipher;

	*sess = NULL;
	if (!t)
		return 0;
	for (int i = 0; i < t->n_keys; i++) {
		if (strlen(t->keys[i].id) == idlen && memcmp(t->keys[i].id, id, idlen) == 0) {
			*sess = tls_psk_session(ssl, &t->keys[i], &cipher);
			SSL_set_ex_data(ssl, tls_ssl_idx, &t->keys[i]);
			return *sess ? 1 : 0;
		}
	}
	return 1;
}

/* Pinned mode: the peer's leaf certificate must have a listed fingerprint;
 * chain and validity errors do not matter (the certificates are self-signed
 * and the pin is the whole of the trust). */
static int tls_verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	char fp[TLS_FP_CHARS + 1];
	struct tls_ctx *t;
	X509 *x;

	(void)ok;
	if (!ssl || !(t = tls_of(ssl)))
		return 0;
	if (X509_STORE_CTX_get_error_depth(xs) > 0)
		return 1;
	x = X509_STORE_CTX_get_current_cert(xs);
	if (!x || tls_fp_of(x, fp) < 0)
		return 0;
	for (int i = 0; i < t->n_peers; i++)
		if (strcmp(fp, t->peers[i]) == 0) {
			X509_STORE_CTX_set_error(xs, X509_V_OK);
			return 1;
		}
	X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
	return 0;
}

/* ---- contexts ----------------------------------------------------- */

static int tls_load_cert(struct tls_ctx *t, const struct tls_opts *o, char *why, size_t len)
{
	char err[160];
	int rc;

	if (!o->key || !*o->key) {
		snprintf(why, len, "a certificate needs its private key (tls.key)");
		return -EINVAL;
	}
	rc = tls_check_private(o->key, why, len);
	if (rc < 0)
		return rc;
	if (SSL_CTX_use_certificate_chain_file(t->ctx, o->cert) != 1) {
		snprintf(why, len, "cannot load certificate %s: %s", o->cert,
			 tls_error_string(err, sizeof(err)));
		return -EINVAL;
	}
	if (SSL_CTX_use_PrivateKey_file(t->ctx, o->key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(t->ctx) != 1) {
		snprintf(why, len, "cannot load private key %s (or it does not match %s): %s",
			 o->key, o->cert, tls_error_string(err, sizeof(err)));
		return -EINVAL;
	}
	rc = tls_load_peers(t, o->peer_ids, why, len);
	if (rc < 0)
		return rc;
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
			   tls_verify_cb);
	t->pinned = true;
	return 0;
}

int tls_ctx_new(const struct tls_opts *o, bool server, struct tls_ctx **out,
		char *why, size_t len)
{
	struct tls_ctx *t;
	int rc;

	*out = NULL;
	if (!tls_opts_enabled(o)) {
		snprintf(why, len, "no TLS keys configured");
		return -EINVAL;
	}
	if (tls_ex_idx < 0)
		tls_ex_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	if (tls_ssl_idx < 0)
		tls_ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->server = server;
	t->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!t->ctx || tls_ex_idx < 0 || tls_ssl_idx < 0) {
		free(t);
		snprintf(why, len, "cannot create a TLS context");
		return -ENOMEM;
	}
	SSL_CTX_set_ex_data(t->ctx, tls_ex_idx, t);
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(t->ctx, TLS1_3_VERSION);
	/* Only suites whose hash is SHA-256: a PSK is bound to one hash, and a
	 * suite with another (AES-256's SHA-384) would set the key aside. */
	SSL_CTX_set_ciphersuites(t->ctx, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256");
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_TICKET);
	/* read-ahead, where a reader turns it on (tls_bulk_start), fills this
	 * much per read from the socket */
	SSL_CTX_set_default_read_buffer_len(t->ctx, TLS_READ_BUF);
	SSL_CTX_set_num_tickets(t->ctx, 0);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
	if (o->psk_file && *o->psk_file) {
		rc = tls_load_psk(t, o->psk_file, why, len);
		if (rc < 0)
			goto out_free;
		if (server)
			SSL_CTX_set_psk_find_session_callback(t->ctx, tls_psk_find_cb);
		else
			SSL_CTX_set_psk_use_session_callback(t->ctx, tls_psk_use_cb);
	} else {
		rc = tls_load_cert(t, o, why, len);
		if (rc < 0)
			goto out_free;
	}
	*out = t;
	return 0;
out_free:
	tls_ctx_free(t);
	return rc;
}

void tls_ctx_free(struct tls_ctx *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	OPENSSL_cleanse(t->keys, sizeof(t->keys));
	free(t->psk_path);
	free(t);
}

SSL *tls_ssl_new(struct tls_ctx *t)
{
	return SSL_new(t->ctx);
}

void tls_bulk_start(SSL *ssl)
{
	SSL_set_read_ahead(ssl, 1);
}

int tls_read_into(SSL *ssl, struct evbuffer *in, size_t chunk, size_t max, size_t *got)
{
	struct evbuffer_iovec v[2];
	int nv, n = 1, err;

	*got = 0;
	while (*got < max) {
		size_t used[2] = { 0, 0 };

		nv = evbuffer_reserve_space(in, (ev_ssize_t)chunk, v, 2);
		if (nv < 1)
			return -ENOMEM;
		for (int i = 0; i < nv && n > 0; i++) {
			while (used[i] < v[i].iov_len) {
				size_t want = v[i].iov_len - used[i];

				ERR_clear_error();
				errno = 0;
				n = SSL_read(ssl, (char *)v[i].iov_base + used[i],
					     want > INT_MAX ? INT_MAX : (int)want);
				if (n <= 0)
					break;
				used[i] += (size_t)n;
			}
		}
		for (int i = 0; i < nv; i++)
			v[i].iov_len = used[i];
		if (evbuffer_commit_space(in, v, used[1] ? 2 : 1) < 0)
			return -ENOMEM;
		*got += used[0] + used[1];
		if (n > 0)
			continue;	/* the chunk is full: another */
		err = SSL_get_error(ssl, n);
		if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
			return 0;
		/* close_notify, or a TCP close without it (read as a plain end
		 * of stream: the protocol's GOODBYE/ERROR says how it ended) */
		if (err == SSL_ERROR_ZERO_RETURN)
			return -EPIPE;
		if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
			return errno ? -errno : -EPIPE;
		if (err == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) ==
		    SSL_R_UNEXPECTED_EOF_WHILE_READING) {
			ERR_clear_error();
			return -EPIPE;
		}
		return -EPROTO;
	}
	return 1;
}

const char *tls_ctx_mode(const struct tls_ctx *t)
{
	return t->pinned ? "pinned" : "psk";
}

void tls_peer_describe(SSL *ssl, char *buf, size_t len)
{
	struct tls_ctx *t = tls_of(ssl);
	char fp[TLS_FP_CHARS + 1], grouped[80];
	X509 *x;

	snprintf(buf, len, "unauthenticated");
	if (!t)
		return;
	if (!t->pinned) {
		const struct tls_psk *k = SSL_get_ex_data(ssl, tls_ssl_idx);

		if (k && SSL_session_reused(ssl))
			snprintf(buf, len, "psk id %s", k->id);
		return;
	}
	x = SSL_get1_peer_certificate(ssl);
	if (x && tls_fp_of(x, fp) == 0) {
		tls_fp_group(fp, grouped, sizeof(grouped));
		snprintf(buf, len, "id %s", grouped);
	}
	X509_free(x);
}

/* ---- key generation ----------------------------------------------- */

static int tls_create_private(const char *path, char *why, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0) {
		int e = errno;

		if (e == EEXIST)
			snprintf(why, len, "%s exists already; remove it first to "
				 "replace the key (both nodes need the new one)", path);
		else
			snprintf(why, len, "cannot create %s: %s", path, strerror(e));
		return -e;
	}
	return fd;
}

/* Writes all of BUF and makes it durable; closes FD. */
static int tls_write_close(int fd, const char *path, const char *buf, size_t n,
			   char *why, size_t len)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;

			snprintf(why, len, "cannot write %s: %s", path, strerror(e));
			close(fd);
			unlink(path);
			return -e;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;

		snprintf(why, len, "cannot write %s: %s", path, strerror(e));
		unlink(path);
		return -e;
	}
	return 0;
}

int tls_keygen_psk(const char *path, char *why, size_t len)
{
	unsigned char key[TLS_KEY_BYTES];
	char buf[256];
	int fd, n;

	if (RAND_bytes(key, sizeof(key)) != 1) {
		snprintf(why, len, "no random bytes from OpenSSL");
		return -EIO;
	}
	n = snprintf(buf, sizeof(buf), "# twinfs pre-shared key: the same file on both "
		     "nodes, mode 0600\n");
	for (size_t i = 0; i < sizeof(key); i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%02x", key[i]);
	n += snprintf(buf + n, sizeof(buf) - (size_t)n, "\n");
	OPENSSL_cleanse(key, sizeof(key));
	fd = tls_create_private(path, why, len);
	if (fd < 0)
		return fd;
	fd = tls_write_close(fd, path, buf, (size_t)n, why, len);
	OPENSSL_cleanse(buf, sizeof(buf));
	return fd;
}

void tls_cert_paths(const char *dir, char *cert, char *key, size_t len)
{
	if (cert)
		snprintf(cert, len, "%s/tls/cert.pem", dir);
	if (key)
		snprintf(key, len, "%s/tls/key.pem", dir);
}

/* A self-signed certificate for PK, valid from an hour ago for a century:
 * the fingerprint is the trust, so expiry would only break a working pair. */
static X509 *tls_self_sign(EVP_PKEY *pk)
{
	X509 *x = X509_new();
	X509_NAME *name;
	uint64_t serial = 0;

	if (!x)
		return NULL;
	RAND_bytes((unsigned char *)&serial, sizeof(serial));
	serial >>= 1;
	if (!X509_set_version(x, 2) ||
	    !ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), 36500, 0, NULL) ||
	    !X509_set_pubkey(x, pk))
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)"twinfs node", -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_sign(x, pk, NULL))
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

/* PEM of K (private) or X into a malloc'd string. */
static char *tls_pem(EVP_PKEY *k, X509 *x, size_t *n)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long len;

	if (!b)
		return NULL;
	if ((k && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL)) ||
	    (x && PEM_write_bio_X509(b, x))) {
		len = BIO_get_mem_data(b, &data);
		out = len > 0 ? malloc((size_t)len) : NULL;
		if (out) {
			memcpy(out, data, (size_t)len);
			*n = (size_t)len;
		}
	}
	BIO_free(b);
	return out;
}

int tls_keygen_cert(const char *dir, char *why, size_t len)
{
	char tdir[4096], cert[4096], key[4096], err[160];
	EVP_PKEY *pk = NULL;
	X509 *x = NULL;
	char *kp = NULL, *cp = NULL;
	size_t kn = 0, cn = 0;
	int rc, fd;

	snprintf(tdir, sizeof(tdir), "%s/tls", dir);
	tls_cert_paths(dir, cert, key, sizeof(cert));
	if (access(key, F_OK) == 0 || access(cert, F_OK) == 0) {
		snprintf(why, len, "%s already holds a key; remove %s to make a new "
			 "one (the peer must then pin the new id)", tdir, tdir);
		return -EEXIST;
	}
	pk = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	x = pk ? tls_self_sign(pk) : NULL;
	kp = x ? tls_pem(pk, NULL, &kn) : NULL;
	cp = kp ? tls_pem(NULL, x, &cn) : NULL;
	if (!cp) {
		snprintf(why, len, "cannot make a key: %s", tls_error_string(err, sizeof(err)));
		rc = -EIO;
		goto out;
	}
	if (mkdir(tdir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(why, len, "cannot create %s: %s", tdir, strerror(-rc));
		goto out;
	}
	fd = tls_create_private(key, why, len);
	rc = fd < 0 ? fd : tls_write_close(fd, key, kp, kn, why, len);
	if (rc < 0)
		goto out;
	fd = tls_create_private(cert, why, len);
	rc = fd < 0 ? fd : tls_write_close(fd, cert, cp, cn, why, len);
	if (rc < 0)
		unlink(key);
out:
	if (kp)
		OPENSSL_cleanse(kp, kn);
	free(kp);
	free(cp);
	X509_free(x);
	EVP_PKEY_free(pk);
	return rc;
}
