// SPDX-License-Identifier: Apache-2.0
/*
 * ice-controller: the global planner daemon (see ctl_daemon.h, README.md).
 *
 *   ice-controller [--config FILE] [--log SPEC] [--dry-run] [--once] [--KEY VALUE]...
 *
 * Keys are those of the YAML file (ice-controller --help); flags override
 * the file. Exit: 0 done, 1 run-time failure, 2 bad configuration.
 */
#include <signal.h>
#include <stdio.h>

#include "ctl_daemon.h"
#include "ice_log.h"

static struct ctld *the_ctld;

static void on_signal(int sig)
{
	if (the_ctld != NULL)
		ctld_stop(the_ctld);
}

static int cfg_finish(void *cfg, const char *path, struct ice_cfg_err *err)
{
	return ctld_cfg_finish(cfg, path, err);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct ctld_cfg cfg;
	struct ice_cfg_cli cli = {
		.tool = "ice-controller",
		.synopsis =
			"usage: ice-controller [--config FILE] [--log SPEC] [--dry-run] [--once] "
			"[--KEY VALUE]...",
		.fields = ctld_cfg_fields,
		.nfields = ctld_cfg_nfields,
		.obj = &cfg,
		.finish = cfg_finish,
	};
	int ret;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	ctld_cfg_defaults(&cfg);
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	ice_log_set_tag(cfg.id);
	the_ctld = ctld_new(&cfg);
	if (the_ctld == NULL)
		return 1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ret = ctld_run(the_ctld);
	ctld_free(the_ctld);
	return ret < 0 ? 1 : 0;
}
