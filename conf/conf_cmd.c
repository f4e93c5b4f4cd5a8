/*
 * conf_cmd — `twinfs config check|print|keys`: validates a YAML config and
 * prints every problem with its file:line:column, prints the effective
 * config with defaults filled in, or lists the keys. Main thread only.
 */
#include "conf/conf_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "common/cli.h"
#include "conf/conf.h"

static void conf_cmd_usage(FILE *out)
{
	fprintf(out,
		"Usage: twinfs config check FILE [--for mount|serve]\n"
		"       twinfs config print FILE [--for mount|serve]\n"
		"       twinfs config keys\n\n"
		"check  validate FILE: prints every error as FILE:LINE:COLUMN: message\n"
		"       and exits 78 if there is any (66 if FILE does not exist), 0\n"
		"       (and 'FILE: ok') otherwise;\n"
		"       a directory that does not exist yet is only a warning unless\n"
		"       --for is given\n"
		"print  print the effective configuration, defaults filled in\n"
		"keys   list every key with its type, default and meaning\n\n"
		"  --for mount|serve  also require the keys that command needs\n"
		"                     (default: store, state and mountpoint or listen)\n"
		"  -h, --help         show this help\n\n"
		"Keys:\n");
	conf_print_keys(out);
}

int conf_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "for", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum conf_purpose purpose = CONF_FOR_ANY;
	struct conf_diag diag = { 0 };
	struct conf c;
	const char *verb, *file;
	int opt, rc, lrc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'F':
			if (strcmp(optarg, "mount") == 0)
				purpose = CONF_FOR_MOUNT;
			else if (strcmp(optarg, "serve") == 0)
				purpose = CONF_FOR_SERVE;
			else
				return cli_usage_error("config", "--for: '%s' is not mount or serve",
						       optarg);
			break;
		case 'h':
			conf_cmd_usage(stdout);
			return EX_OK;
		default:
			return cli_usage_error("config", "unknown option");
		}
	}
	if (optind >= argc)
		return cli_usage_error("config", "missing verb: check, print or keys");
	verb = argv[optind++];
	if (strcmp(verb, "keys") == 0) {
		if (optind != argc)
			return cli_usage_error("config", "keys takes no arguments");
		conf_print_keys(stdout);
		return EX_OK;
	}
	if (strcmp(verb, "check") != 0 && strcmp(verb, "print") != 0)
		return cli_usage_error("config", "unknown verb '%s' (check, print or keys)",
				       verb);
	if (optind != argc - 1)
		return cli_usage_error("config", "%s takes exactly one FILE", verb);
	file = argv[optind];

	conf_init(&c);
	diag.lenient_paths = purpose == CONF_FOR_ANY;
	lrc = conf_load_file(&c, file, &diag);
	/* Required keys only make sense once the file itself parsed. */
	if (diag.n_errors == 0)
		conf_validate(&c, purpose, &diag);
	conf_diag_print(stderr, &diag);
	if (lrc == -ENOENT || lrc == -EACCES || lrc == -EPERM) {
		/* the file itself cannot be read: 66 missing, 77 no permission,
		 * as in every command that takes --config */
		rc = cli_exit_code(lrc);
	} else if (diag.n_errors) {
		fprintf(stderr, "%s: %d error%s\n", file, diag.n_errors,
			diag.n_errors == 1 ? "" : "s");
		rc = EX_CONFIG;
	} else if (strcmp(verb, "print") == 0) {
		conf_print(stdout, &c);
		rc = EX_OK;
	} else {
		printf("%s: ok\n", file);
		rc = EX_OK;
	}
	conf_diag_free(&diag);
	conf_free(&c);
	return rc;
}
