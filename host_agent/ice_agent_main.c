// SPDX-License-Identifier: Apache-2.0
/*
 * ice-agent: the per-host telemetry daemon (see agent.h, README.md).
 *
 *   ice-agent [--config FILE] [--once] [--log SPEC] [--KEY VALUE]...
 *
 * Keys are those of the YAML file (ice-agent --help); flags override the
 * file. Exit: 0 done, 1 run-time failure, 2 bad configuration.
 */
#include <signal.h>
#include <stdio.h>

#include "agent.h"
#include "ice_log.h"

static struct agent *the_agent;

static void on_signal(int sig)
{
	if (the_agent != NULL)
		agent_stop(the_agent);
}

static int cfg_finish(void *cfg, const char *path, struct ice_cfg_err *err)
{
	return agent_cfg_finish(cfg, path, err);
}

int main(int argc, char **argv)
{
	struct agent_opts o = {.out = stdout};
	struct sigaction sa = {.sa_handler = on_signal};
	struct agent_cfg cfg;
	struct ice_cfg_cli cli = {
		.tool = "ice-agent",
		.synopsis =
			"usage: ice-agent [--config FILE] [--once] [--log SPEC] [--KEY VALUE]...",
		.fields = agent_cfg_fields,
		.nfields = agent_cfg_nfields,
		.obj = &cfg,
		.finish = cfg_finish,
		.switch_flag = "--once",
		.switch_set = &o.once,
	};
	int ret;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	agent_cfg_defaults(&cfg);
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	the_agent = agent_new(&cfg, &o);
	if (the_agent == NULL)
		return 1;
	if (agent_caps_drop(&cfg) < 0) {
		agent_free(the_agent);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ret = agent_run(the_agent);
	agent_free(the_agent);
	return ret < 0 ? 1 : 0;
}
