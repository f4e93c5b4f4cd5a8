/*
 * keygen_cmd — `twinfs keygen --psk FILE | --state DIR` makes the keys of
 * the link (netsync/wire/tls.h), and `twinfs id --state DIR` prints the
 * node's id, the fingerprint the peer pins. Main thread only; each returns
 * a sysexits code, and a refused command creates nothing.
 */
#include "netsync/wire/keygen_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include "common/cli.h"
#include "netsync/wire/tls.h"

static void keygen_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs keygen --psk FILE\n"
		"       twinfs keygen --state DIR\n\n"
		"Makes the keys that authenticate and encrypt the link between the\n"
		"two nodes (TLS 1.3). Either way works; never both at once.\n\n"
		"  --psk FILE   write a new random pre-shared key to FILE (mode 0600);\n"
		"               copy the same file to the other node and point\n"
		"               --psk-file (tls.psk_file) at it on both\n"
		"  --state DIR  make this node's own key and certificate in DIR/tls/\n"
		"               (Ed25519, mode 0600); then run 'twinfs id --state DIR'\n"
		"               and put the id it prints into the other node's\n"
		"               tls.peer_id\n"
		"  -h, --help   show this help\n\n"
		"An existing key is never overwritten.\n"
		"Exit: 0 ok, 64 usage, 73 the key exists or cannot be created.\n");
}

static void id_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs id --state DIR\n\n"
		"Prints this node's id: the SHA-256 fingerprint of the certificate\n"
		"that 'twinfs keygen --state DIR' made, in groups of four letters\n"
		"and digits. The other node lists it in tls.peer_id.\n\n"
		"  --state DIR  the node's state directory\n"
		"  -h, --help   show this help\n\n"
		"Exit: 0 ok, 64 usage, 66 no key in DIR/tls/.\n");
}

int keygen_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "psk", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *psk = NULL, *state = NULL;
	char why[512], id[80], cert[4096];
	struct stat st;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': psk = optarg; break;
		case 's': state = optarg; break;
		case 'h': keygen_usage(stdout); return 0;
		default: return cli_usage_error("keygen", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("keygen", "unexpected argument '%s'", argv[optind]);
	if (!psk == !state)
		return cli_usage_error("keygen", "give either --psk FILE or --state DIR");
	if (psk) {
		rc = tls_keygen_psk(psk, why, sizeof(why));
		if (rc < 0) {
			fprintf(stderr, "twinfs keygen: %s\n", why);
			return EX_CANTCREAT;
		}
		printf("wrote a new pre-shared key to %s (mode 0600); copy it to the "
		       "other node and use it with --psk-file on both\n", psk);
		return 0;
	}
	if (stat(state, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "twinfs keygen: state directory %s: %s\n", state,
			errno ? strerror(errno) : "not a directory");
		return EX_NOINPUT;
	}
	rc = tls_keygen_cert(state, why, sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "twinfs keygen: %s\n", why);
		return EX_CANTCREAT;
	}
	tls_cert_paths(state, cert, NULL, sizeof(cert));
	if (tls_fingerprint_file(cert, id, sizeof(id)) < 0) {
		fprintf(stderr, "twinfs keygen: cannot read back %s\n", cert);
		return EX_SOFTWARE;
	}
	printf("made a key and certificate in %s/tls/; this node's id is\n%s\n"
	       "put it into the other node's tls.peer_id\n", state, id);
	return 0;
}

int id_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	char id[80], cert[4096];
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's': state = optarg; break;
		case 'h': id_usage(stdout); return 0;
		default: return cli_usage_error("id", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("id", "unexpected argument '%s'", argv[optind]);
	if (!state)
		return cli_usage_error("id", "--state DIR is required");
	tls_cert_paths(state, cert, NULL, sizeof(cert));
	rc = tls_fingerprint_file(cert, id, sizeof(id));
	if (rc < 0) {
		fprintf(stderr, "twinfs id: no certificate at %s (make one with 'twinfs "
			"keygen --state %s'): %s\n", cert, state,
			rc == -EINVAL ? "not a PEM certificate" : strerror(-rc));
		return EX_NOINPUT;
	}
	printf("%s\n", id);
	return 0;
}
