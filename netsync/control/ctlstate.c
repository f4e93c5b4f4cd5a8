/*
 * ctlstate — resolves the state directory of `status` and `sync` from
 * their flags or a config file. Main thread only; reads the file, never
 * writes anything.
 */
#include "netsync/control/ctlstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "common/cli.h"
#include "conf/conf.h"

int ctlstate_resolve(const char *cmd, const char *state_flag, const char *config,
		     char **state, char **store)
{
	struct conf_diag d = { 0 };
	struct conf c;
	int ex = EX_OK, err;

	*state = NULL;
	if (store)
		*store = NULL;
	if (!state_flag && !config)
		return cli_usage_error(cmd, "--state DIR or --config FILE is required");
	if (state_flag && !config) {
		*state = strdup(state_flag);
		return *state ? EX_OK : EX_SOFTWARE;
	}
	conf_init(&c);
	if (conf_load_for_state(&c, config, &d) < 0 && !state_flag) {
		conf_diag_print(stderr, &d);
		err = conf_diag_path_errno(&d);
		ex = err ? cli_exit_code(-err) : EX_CONFIG;
		goto out;
	}
	/* a flag overrides the file */
	*state = strdup(state_flag ? state_flag : c.state);
	if (store && c.store)
		*store = strdup(c.store);
	if (!*state)
		ex = EX_SOFTWARE;
out:
	conf_diag_free(&d);
	conf_free(&c);
	return ex;
}
