/*
 * confman — the manual page twinfs.yaml(5), written from the config key
 * table (conf.h, conf_key_get) in roff. Used at build time by
 * twinfs_confman (conf/confman_main.c); any thread, no state.
 */
#ifndef TWINFS_CONFMAN_H
#define TWINFS_CONFMAN_H

#include <stdio.h>

/* Writes the whole page to OUT; VERSION goes in its header. */
void confman_print(FILE *out, const char *version);

#endif
