/*
 * confman — writes twinfs.yaml(5), the manual page of the config file,
 * from the key table (conf_key_get): every key with its type, default,
 * bounds and meaning, so the page cannot document a key differently from
 * what the loader does. Run at build time by the twinfs_confman tool
 * (conf/CMakeLists.txt); main thread only, writes only to the FILE given.
 */
#include "conf/confman.h"

#include <string.h>

#include "conf/conf.h"

/* Writes s with roff's special characters escaped (a leading '.' or '\''
 * would start a request; '\' starts an escape; '-' is a hyphen). */
static void confman_text(FILE *out, const char *s)
{
	bool bol = true;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		bol = false;
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
		if (*s == '\n')
			bol = true;
	}
}

static void confman_key(FILE *out, const struct conf_key_info *k)
{
	fputs(".TP\n.B ", out);
	confman_text(out, k->name);
	/* One line a reader (and the test) finds the facts on: type;
	 * default; range. */
	fputs("\nType: ", out);
	confman_text(out, k->type);
	if (k->pow2)
		fputs(" (a power of two)", out);
	if (k->is_path)
		fputs(k->must_exist ? " (must exist)" : " (created if missing)", out);
	fputs(". Default: ", out);
	if (k->def)
		confman_text(out, k->def);
	else
		fputs("none", out);
	fputs(".", out);
	if (k->min[0]) {
		fputs(" Range: ", out);
		confman_text(out, k->min);
		fputs(" to ", out);
		confman_text(out, k->max);
		fputs(".", out);
	}
	fputs("\n.br\n", out);
	confman_text(out, k->doc);
	fputs(".\n", out);
}

void confman_print(FILE *out, const char *version)
{
	size_t n = conf_key_count();
	char section[64] = "";

	fprintf(out, ".\\\" Generated from the key table in conf/conf.c by twinfs_confman;\n"
		".\\\" edit the table, not this file.\n"
		".TH TWINFS.YAML 5 \"\" \"twinfs %s\" \"File Formats\"\n", version);
	fputs(".SH NAME\ntwinfs.yaml \\- configuration file of a twinfs node\n"
	      ".SH SYNOPSIS\n.I /etc/twinfs/NAME.yaml\n"
	      ".SH DESCRIPTION\n"
	      "One YAML file per node and share, read by\n"
	      ".B twinfs mount \\-\\-config\n"
	      "and\n"
	      ".BR \"twinfs serve \\-\\-config\" ,\n"
	      "by the\n"
	      ".B twinfs\\-mount@NAME\n"
	      "and\n"
	      ".B twinfs\\-serve@NAME\n"
	      "systemd units (which read /etc/twinfs/NAME.yaml) and by\n"
	      ".BR mount.twinfs (8).\n"
	      "A dotted key is written as a nested map:\n"
	      ".B journal.size_limit\n"
	      "is\n"
	      ".B size_limit\n"
	      "under\n"
	      ".BR journal: .\n"
	      "Unknown keys, wrong types and values out of range are errors, each\n"
	      "reported as FILE:LINE:COLUMN; a flag on the command line overrides\n"
	      "the file.\n"
	      ".PP\n"
	      "A primary needs\n.BR store ,\n.B state\nand\n.BR mountpoint ;\n"
	      "a secondary needs\n.BR store ,\n.B state\nand\n.BR listen .\n"
	      "Sizes take the units K, M, G, T (powers of 1024, also written KiB,\n"
	      "MiB, GiB, TiB); booleans are true or false (also yes/no, on/off, 1/0).\n"
	      ".SH KEYS\n", out);
	for (size_t i = 0; i < n; i++) {
		struct conf_key_info k;
		const char *dot;

		conf_key_get(i, &k);
		dot = strchr(k.name, '.');
		if (dot && (strncmp(section, k.name, (size_t)(dot - k.name)) != 0 ||
			    section[dot - k.name] != '\0')) {
			snprintf(section, sizeof(section), "%.*s", (int)(dot - k.name), k.name);
			fputs(".SS ", out);
			confman_text(out, section);
			fputs(":\n", out);
		} else if (!dot && (section[0] || i == 0)) {
			section[0] = '\0';
			fputs(".SS top level:\n", out);
		}
		confman_key(out, &k);
	}
	fputs(".SH EXAMPLE\n"
	      ".nf\n"
	      "store: /srv/twinfs/store\n"
	      "state: /var/lib/twinfs/share\n"
	      "mountpoint: /srv/share\n"
	      "peer: beta.example.org:7420\n"
	      "mode: sync\n"
	      "tls:\n"
	      "  psk_file: /etc/twinfs/psk\n"
	      "journal:\n"
	      "  size_limit: 4GiB\n"
	      ".fi\n"
	      ".PP\n"
	      "Every key with its default and meaning:\n"
	      ".IR /usr/share/doc/twinfs/examples/twinfs.example.yaml .\n"
	      ".SH CHECKING A FILE\n"
	      ".TP\n.B twinfs config check FILE \\-\\-for mount|serve\n"
	      "every problem with its FILE:LINE:COLUMN; exit 78 if there is one.\n"
	      ".TP\n.B twinfs config print FILE\n"
	      "the effective values, defaults filled in.\n"
	      ".TP\n.B twinfs config keys\n"
	      "the table this page is made from.\n"
	      ".SH FILES\n"
	      ".TP\n.I /etc/twinfs/NAME.yaml\n"
	      "read by the units for instance NAME.\n"
	      ".TP\n.I /etc/twinfs/example.yaml\n"
	      "the example, as installed (a configuration file of the package).\n"
	      ".SH SEE ALSO\n"
	      ".BR twinfs (1),\n"
	      ".BR mount.twinfs (8),\n"
	      ".BR systemd.unit (5)\n", out);
}
