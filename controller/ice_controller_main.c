// SPDX-License-Identifier: Apache-2.0
/*
 * ice-controller: the global planner daemon (see ctl_daemon.h, README.md).
 *
 *   ice-controller [--config FILE] [--log SPEC] [--dry-run] [--once] [--KEY VALUE]...
 *
 * Keys are those of the YAML file (ice-controller --help); flags override
 * the file. Exit: 0 done, 1 run-time failure, 2 bad configuration.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ctl_daemon.h"
#include "ice_log.h"

static struct ctld *the_ctld;

static void on_signal(int sig)
{
	if (the_ctld != NULL)
		ctld_stop(the_ctld);
}

static int cfg_error(const struct ice_cfg_err *err, const char *flag)
{
	char buf[768];

	if (flag != NULL)
		fprintf(stderr, "ice-controller: flag --%s: %s\n", flag, err->msg);
	else
		fprintf(stderr, "ice-controller: %s\n", ice_cfg_err_str(err, buf, sizeof(buf)));
	return 2;
}

static bool is_bool_flag(const char *flag)
{
	return strcmp(flag, "dry-run") == 0 || strcmp(flag, "dry_run") == 0 ||
	       strcmp(flag, "once") == 0;
}

int main(int argc, char **argv)
{
	const char *config = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	struct ice_cfg_err err;
	struct ctld_cfg cfg;
	int ret;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	ctld_cfg_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			ctld_cfg_usage(stdout);
			return 0;
		}
	}
	if (config != NULL && ctld_cfg_load_file(&cfg, config, &err) < 0)
		return cfg_error(&err, NULL);
	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i] + 2;

		if (strcmp(argv[i], "--config") == 0) {
			i++;
		} else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
			if (ice_log_setup(argv[++i]) < 0) {
				fprintf(stderr,
					"ice-controller: flag --log: expected "
					"LEVEL[,debug=SUB+SUB], "
					"got '%s'\n",
					argv[i]);
				return 2;
			}
		} else if (strncmp(argv[i], "--", 2) == 0 && is_bool_flag(flag)) {
			if (ctld_cfg_set_flag(&cfg, flag, "true", &err) < 0)
				return cfg_error(&err, flag);
		} else if (strncmp(argv[i], "--", 2) == 0 && i + 1 < argc) {
			ret = ctld_cfg_set_flag(&cfg, flag, argv[i + 1], &err);
			if (ret == -ENOENT) {
				fprintf(stderr, "ice-controller: unknown flag '%s' (see --help)\n",
					argv[i]);
				return 2;
			}
			if (ret < 0)
				return cfg_error(&err, flag);
			i++;
		} else {
			fprintf(stderr, "ice-controller: unexpected '%s' (see --help)\n", argv[i]);
			return 2;
		}
	}
	if (ctld_cfg_finish(&cfg, config, &err) < 0)
		return cfg_error(&err, NULL);
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
