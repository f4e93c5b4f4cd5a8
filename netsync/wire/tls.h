/*
 * tls — the TLS 1.3 link between two nodes, mutually authenticated in one
 * of two ways (docs/protocol.md, "Link security"):
 *   - a pre-shared key (TLS 1.3 external PSK): a file of one or more
 *     32-byte keys in hex, one per line, the same file on both nodes;
 *   - pinned keys: each node has an Ed25519 key and a self-signed
 *     certificate; each lists the SHA-256 fingerprints of the peers it
 *     accepts (Syncthing's device-ID model). No certificate authority.
 * Anything else (no key, a wrong key, an unknown fingerprint, plaintext)
 * fails the handshake, before the first frame is parsed.
 * A tls_ctx is built once at start-up (main thread) and is then read-only:
 * any thread may make connections from it.
 */
#ifndef TWINFS_TLS_H
#define TWINFS_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>
#include <openssl/ssl.h>

struct tls_opts {
	const char *psk_file;	/* PSK mode when set */
	const char *cert;	/* pinned mode: our certificate (PEM) */
	const char *key;	/* pinned mode: our private key (PEM) */
	const char *peer_ids;	/* pinned mode: accepted fingerprints, separated
				 * by commas or white space (several during a
				 * key rotation) */
	/* storage for what tls_opts_init derives */
	char cert_buf[4096], key_buf[4096], ids_buf[1024];
};

struct tls_ctx;

/*
 * Fills O from a node's settings (tls.* keys; NULL for unset ones): PSK
 * mode when PSK_FILE is set; pinned mode when PEER_IDS or PEER_CERT (the
 * peer's certificate, pinned by its fingerprint) is set, with CERT and KEY
 * defaulting to STATE/tls/. Neither: no TLS (O disabled). Both: -EINVAL.
 * Returns 0 or -errno with a one-line reason in WHY.
 */
int tls_opts_init(struct tls_opts *o, const char *state, const char *psk_file,
		  const char *cert, const char *key, const char *peer_ids,
		  const char *peer_cert, char *why, size_t len);

/* True if O names a PSK file or a certificate: the link is to be TLS. */
bool tls_opts_enabled(const struct tls_opts *o);

/*
 * Loads the keys O names and builds the context of a server (accepts) or
 * a client (connects). Returns 0, or -errno with a one-line reason in WHY
 * (a missing or malformed key file, a key file readable by others, no
 * peer fingerprint in pinned mode...).
 */
int tls_ctx_new(const struct tls_opts *o, bool server, struct tls_ctx **out,
		char *why, size_t len);
void tls_ctx_free(struct tls_ctx *t);

/* Reads the PSK file again if it changed since it was read (rotation;
 * call once a second): 1 and what was read in WHY, 0 if unchanged (or not
 * a PSK context), -errno with the reason in WHY (the old keys stay). */
int tls_ctx_reload(struct tls_ctx *t, char *why, size_t len);
/* Whether a live connection authenticated as AUTH (tls_peer_describe) may
 * go on after a reload: on a server its key is still in the file, on a
 * client it is still the first. Always true with pinned keys. */
bool tls_auth_current(const struct tls_ctx *t, const char *auth);

/* A new connection object of T, NULL when out of memory. */
SSL *tls_ssl_new(struct tls_ctx *t);

/* "psk" or "pinned", for status and logs. */
const char *tls_ctx_mode(const struct tls_ctx *t);

/*
 * Bulk reads for a receiver that reads the SSL object itself (serve's
 * stream). tls_bulk_start turns on read-ahead, so that OpenSSL fills its
 * buffer (TLS_READ_BUF) from the socket in one read instead of two per
 * record; then tls_read_into must drain it: it appends decrypted bytes to
 * IN, CHUNK bytes reserved at a time, until OpenSSL wants the socket
 * again or MAX bytes were read. Returns 0 when drained (wait for the
 * socket), 1 when it stopped at MAX (call again: records may wait in
 * OpenSSL where no poller sees them), -EPIPE when the peer closed (with
 * or without close_notify), -EPROTO on a TLS error (the reason is in
 * OpenSSL's error queue) or -ENOMEM. *GOT: bytes appended.
 */
#define TLS_READ_BUF (256u << 10)
void tls_bulk_start(SSL *ssl);
int tls_read_into(SSL *ssl, struct evbuffer *in, size_t chunk, size_t max, size_t *got);

/* Who the handshake authenticated: "psk id 1a2b..." or "id ABCD-...". */
void tls_peer_describe(SSL *ssl, char *buf, size_t len);

/* The newest OpenSSL error of this thread as text ("" if none); clears
 * the thread's error queue. */
const char *tls_error_string(char *buf, size_t len);

/* Writes a new random key to PATH (created 0600, never over an existing
 * file). 0 or -errno with a reason in WHY. */
int tls_keygen_psk(const char *path, char *why, size_t len);

/* Makes DIR/tls/key.pem (0600) and DIR/tls/cert.pem: a new Ed25519 key and
 * a self-signed certificate. Refuses to replace existing ones (-EEXIST). */
int tls_keygen_cert(const char *dir, char *why, size_t len);

/* The default certificate and key paths of a state dir. */
void tls_cert_paths(const char *dir, char *cert, char *key, size_t len);

/* The fingerprint of the certificate in CERT_PATH, "ABCD-EFGH-..." (the
 * SHA-256 of its DER form in base32, groups of four). OUT needs 66 bytes. */
int tls_fingerprint_file(const char *cert_path, char *out, size_t len);

#endif
