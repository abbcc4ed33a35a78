// SPDX-License-Identifier: Apache-2.0
/*
 * ice-fabric: the emulated leaf-spine / fat-tree test bed (see fabric.h).
 *
 *   ice-fabric up TOPO.yaml [--routing static|frr] [--no-bpf] [--redis PORT]
 *   ice-fabric down [NAME]
 *   ice-fabric status [NAME]
 *   ice-fabric stats [NAME] [--json] [--new-peak]
 *   ice-fabric exec [--fabric NAME] NODE -- CMD [ARGS...]
 *   ice-fabric link [--fabric NAME] NODE:NODE|NODE:IFNAME up|down
 *   ice-fabric list
 *
 * NAME may be left out when exactly one fabric is up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "ice_log.h"

static void usage(FILE *f)
{
	fprintf(f, "usage:\n"
		   "  ice-fabric up TOPO.yaml [--routing static|frr] [--no-bpf] [--redis PORT]\n"
		   "  ice-fabric down [NAME]\n"
		   "  ice-fabric status [NAME]\n"
		   "  ice-fabric stats [NAME] [--json] [--new-peak]\n"
		   "  ice-fabric exec [--fabric NAME] NODE -- CMD [ARGS...]\n"
		   "  ice-fabric link [--fabric NAME] NODE:NODE|NODE:IFNAME up|down\n"
		   "  ice-fabric list\n"
		   "NAME may be left out when exactly one fabric is up.\n");
}

/* The fabric to act on: the one named, or the only one that is up. */
static const char *pick(const char *name)
{
	static char only[64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	if (name != NULL)
		return name;
	f = open_memstream(&buf, &len);
	n = fab_list(f);
	fclose(f);
	if (n != 1) {
		fprintf(stderr, "ice-fabric: %s; name one\n",
			n == 0 ? "no fabric is up" : "several fabrics are up");
		free(buf);
		exit(2);
	}
	snprintf(only, sizeof(only), "%.*s", (int)strcspn(buf, "\n"), buf);
	free(buf);
	return only;
}

static int cmd_up(int argc, char **argv)
{
	struct fab_opts o = {.routing = -1};
	const char *file = NULL;
	struct ice_cfg_err err;
	struct topo *t;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--routing") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "static") == 0)
				o.routing = TOPO_ROUTING_STATIC;
			else if (strcmp(argv[i], "frr") == 0)
				o.routing = TOPO_ROUTING_FRR;
			else {
				fprintf(stderr,
					"ice-fabric: --routing '%s': expected static or frr\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--no-bpf") == 0) {
			o.no_bpf = true;
		} else if (strcmp(argv[i], "--redis") == 0 && i + 1 < argc) {
			char *end;
			long p = strtol(argv[++i], &end, 10);

			if (*end != '\0' || p < 1 || p > 65535) {
				fprintf(stderr,
					"ice-fabric: --redis '%s': expected a port 1-65535\n",
					argv[i]);
				return 2;
			}
			o.redis_port = (unsigned int)p;
		} else if (argv[i][0] == '-' || file != NULL) {
			fprintf(stderr, "ice-fabric up: unexpected '%s'\n", argv[i]);
			return 2;
		} else {
			file = argv[i];
		}
	}
	if (file == NULL) {
		usage(stderr);
		return 2;
	}
	t = topo_load(file, &err);
	if (t == NULL) {
		char buf[640];

		fprintf(stderr, "ice-fabric: %s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return 2;
	}
	ret = fab_up(t, &o);
	topo_free(t);
	return ret < 0 ? 1 : 0;
}

/* Split "[--fabric NAME] rest..." */
static const char *fabric_opt(int *argc, char ***argv)
{
	if (*argc >= 2 && strcmp((*argv)[0], "--fabric") == 0) {
		const char *n = (*argv)[1];

		*argc -= 2;
		*argv += 2;
		return n;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *cmd;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "up") == 0)
		return cmd_up(argc, argv);
	if (strcmp(cmd, "down") == 0) {
		const char *n = pick(argc > 0 ? argv[0] : NULL);
		int ret = fab_down(n);

		/* idempotent: nothing left to remove is success, silently */
		return ret < 0 && ret != -ENOENT ? 1 : 0;
	}
	if (strcmp(cmd, "status") == 0)
		return fab_status(pick(argc > 0 ? argv[0] : NULL), stdout) < 0 ? 1 : 0;
	if (strcmp(cmd, "stats") == 0) {
		bool json = false, new_peak = false;
		const char *n = NULL;

		for (int i = 0; i < argc; i++) {
			if (strcmp(argv[i], "--json") == 0)
				json = true;
			else if (strcmp(argv[i], "--new-peak") == 0)
				new_peak = true;
			else
				n = argv[i];
		}
		return fab_stats(pick(n), json, new_peak, stdout) < 0 ? 1 : 0;
	}
	if (strcmp(cmd, "list") == 0) {
		fab_list(stdout);
		return 0;
	}
	if (strcmp(cmd, "exec") == 0) {
		const char *n = fabric_opt(&argc, &argv);

		if (argc < 3 || strcmp(argv[1], "--") != 0) {
			fprintf(stderr,
				"usage: ice-fabric exec [--fabric NAME] NODE -- CMD [ARGS...]\n");
			return 2;
		}
		return fab_exec(pick(n), argv[0], argv + 2) < 0 ? 127 : 0;
	}
	if (strcmp(cmd, "link") == 0) {
		const char *n = fabric_opt(&argc, &argv);

		if (argc != 2 || (strcmp(argv[1], "up") != 0 && strcmp(argv[1], "down") != 0)) {
			fprintf(stderr,
				"usage: ice-fabric link [--fabric NAME] NODE:NODE|NODE:IFNAME "
				"up|down\n");
			return 2;
		}
		return fab_link(pick(n), argv[0], strcmp(argv[1], "up") == 0) < 0 ? 1 : 0;
	}
	fprintf(stderr, "ice-fabric: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
