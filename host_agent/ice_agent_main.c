// SPDX-License-Identifier: Apache-2.0
/*
 * ice-agent: the per-host telemetry daemon (see agent.h, README.md).
 *
 *   ice-agent [--config FILE] [--once] [--log SPEC] [--KEY VALUE]...
 *
 * Keys are those of the YAML file (ice-agent --help); flags override the
 * file. Exit: 0 done, 1 run-time failure, 2 bad configuration.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "ice_log.h"

static struct agent *the_agent;

static void on_signal(int sig)
{
	if (the_agent != NULL)
		agent_stop(the_agent);
}

static int cfg_error(const struct ice_cfg_err *err, const char *flag)
{
	char buf[768];

	if (flag != NULL)
		fprintf(stderr, "ice-agent: flag --%s: %s\n", flag, err->msg);
	else
		fprintf(stderr, "ice-agent: %s\n", ice_cfg_err_str(err, buf, sizeof(buf)));
	return 2;
}

static bool is_bool_flag(const char *flag)
{
	return strcmp(flag, "no-bpf") == 0 || strcmp(flag, "no_bpf") == 0;
}

int main(int argc, char **argv)
{
	struct agent_opts o = {.out = stdout};
	const char *config = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	struct ice_cfg_err err;
	struct agent_cfg cfg;
	int ret;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	agent_cfg_defaults(&cfg);
	/* first the file, then the flags over it */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			agent_cfg_usage(stdout);
			return 0;
		}
	}
	if (config != NULL && agent_cfg_load_file(&cfg, config, &err) < 0)
		return cfg_error(&err, NULL);
	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i] + 2;

		if (strcmp(argv[i], "--config") == 0) {
			i++;
		} else if (strcmp(argv[i], "--once") == 0) {
			o.once = true;
		} else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
			if (ice_log_setup(argv[++i]) < 0) {
				fprintf(stderr,
					"ice-agent: flag --log: expected LEVEL[,debug=SUB+SUB], "
					"got '%s'\n",
					argv[i]);
				return 2;
			}
		} else if (strncmp(argv[i], "--", 2) == 0 && is_bool_flag(flag)) {
			if (agent_cfg_set_flag(&cfg, flag, "true", &err) < 0)
				return cfg_error(&err, flag);
		} else if (strncmp(argv[i], "--", 2) == 0 && i + 1 < argc) {
			ret = agent_cfg_set_flag(&cfg, flag, argv[i + 1], &err);
			if (ret == -ENOENT) {
				fprintf(stderr, "ice-agent: unknown flag '%s' (see --help)\n",
					argv[i]);
				return 2;
			}
			if (ret < 0)
				return cfg_error(&err, flag);
			i++;
		} else {
			fprintf(stderr, "ice-agent: unexpected '%s' (see --help)\n", argv[i]);
			return 2;
		}
	}
	if (agent_cfg_finish(&cfg, config, &err) < 0)
		return cfg_error(&err, NULL);

	the_agent = agent_new(&cfg, &o);
	if (the_agent == NULL)
		return 1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ret = agent_run(the_agent);
	agent_free(the_agent);
	return ret < 0 ? 1 : 0;
}
