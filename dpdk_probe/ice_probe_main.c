// SPDX-License-Identifier: Apache-2.0
/*
 * ice-probe: path discovery and path health (a thin main over libice-probe).
 *
 *   ice-probe paths SRC DST [--json] [options]
 *   ice-probe watch [--json] [options]      continuous health of the pinglist
 *   ice-probe responder [options]           answer probes on this NIC
 *
 * Options: -c FILE (YAML config), --json, and --KEY VALUE for every config
 * key (dashes or underscores), e.g. --backend dpdk --report-interval 500ms.
 * Exit 0 on success, 1 on a run-time failure, 2 on bad usage or config.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "probe_internal.h"
#include "topo.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ice-probe paths SRC DST [--json] [options]\n"
		   "       ice-probe watch [--json] [options]\n"
		   "       ice-probe responder [options]\n"
		   "options: -c FILE, --json, --KEY VALUE for these keys:\n");
	probe_cfg_help(f);
}

static void print_drops(const struct probe_sess *s, json_t *o)
{
	json_t *d = json_object();

	for (int i = 1; i < PROBE_DROP_N; i++)
		json_object_set_new(d, probe_drop_names[i],
				    json_integer((json_int_t)s->track.drops[i]));
	json_object_set_new(o, "ignored", d);
}

int main(int argc, char **argv)
{
	struct probe_cfg cfg;
	struct ice_cfg_err err;
	struct probe_sess sess;
	struct probe_redis *redis = NULL;
	struct topo *topo = NULL;
	const struct probe_io_ops *ops;
	const char *cmd, *pos[2] = {NULL, NULL};
	char ebuf[768];
	bool json = false;
	int npos = 0, ret, rc = 1;
	struct in_addr src, dst;

	ice_log_set_level(ICE_LOG_WARN);
	ice_log_init_env();
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (strcmp(cmd, "paths") && strcmp(cmd, "watch") && strcmp(cmd, "responder")) {
		fprintf(stderr, "ice-probe: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	probe_cfg_defaults(&cfg);
	/* the config file first, so flags override it */
	for (int i = 2; i < argc - 1; i++)
		if (strcmp(argv[i], "-c") == 0 &&
		    probe_cfg_load_file(&cfg, argv[i + 1], &err) < 0) {
			fprintf(stderr, "ice-probe: %s\n",
				ice_cfg_err_str(&err, ebuf, sizeof(ebuf)));
			return 2;
		}
	for (int i = 2; i < argc; i++) {
		char key[64];

		if (strcmp(argv[i], "-c") == 0) {
			i++;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strncmp(argv[i], "--", 2) == 0) {
			snprintf(key, sizeof(key), "%s", argv[i] + 2);
			for (char *p = key; *p; p++)
				*p = *p == '-' ? '_' : *p;
			if (i + 1 >= argc) {
				fprintf(stderr, "ice-probe: flag %s: expected a value\n", argv[i]);
				return 2;
			}
			ret = ice_cfg_set(probe_cfg_fields, probe_cfg_nfields, &cfg, key, argv[++i],
					  &err);
			if (ret < 0) {
				fprintf(stderr, "ice-probe: flag --%s: %s\n", argv[i - 1] + 2,
					ret == -ENOENT ? "unknown option (see --help)" : err.msg);
				return 2;
			}
		} else if (npos < 2) {
			pos[npos++] = argv[i];
		} else {
			fprintf(stderr, "ice-probe: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (strcmp(cmd, "paths") == 0) {
		if (npos != 2 || inet_pton(AF_INET, pos[0], &src) != 1 ||
		    inet_pton(AF_INET, pos[1], &dst) != 1) {
			fprintf(stderr, "ice-probe: paths: expected SRC DST IPv4 addresses\n");
			return 2;
		}
		inet_ntop(AF_INET, &src, cfg.src, sizeof(cfg.src));
	} else if (npos != 0) {
		fprintf(stderr, "ice-probe: %s: unexpected argument '%s'\n", cmd, pos[0]);
		return 2;
	}
	if (probe_cfg_check(&cfg, &err) < 0) {
		fprintf(stderr, "ice-probe: %s\n", ice_cfg_err_str(&err, ebuf, sizeof(ebuf)));
		return 2;
	}
	if (cfg.src[0] == '\0') {
		fprintf(stderr, "ice-probe: %s: expected --src ADDR (the local NIC)\n", cmd);
		return 2;
	}
	inet_pton(AF_INET, cfg.src, &src);
	ops = probe_io_ops_get(cfg.backend);
	if (ops == NULL) {
		fprintf(stderr, "ice-probe: backend dpdk: not built (DPDK was not found)\n");
		return 2;
	}
	if (cfg.topo[0] != '\0') {
		topo = topo_load(cfg.topo, &err);
		if (topo == NULL && strncmp(cfg.topo, "/run/ice/", 9) != 0) {
			fprintf(stderr, "ice-probe: topo: %s\n",
				ice_cfg_err_str(&err, ebuf, sizeof(ebuf)));
			return 2;
		}
	}
	if (cfg.redis[0] != '\0')
		redis = probe_redis_new(&cfg);
	ret = probe_sess_init(&sess, &cfg, ops, src, topo);
	if (ret < 0) {
		fprintf(stderr, "ice-probe: backend %s on %s: %s\n", ops->name, cfg.src,
			strerror(-ret));
		rc = ret == -EALREADY || ret == -ENODEV ? 1 : 3;
		goto out;
	}

	if (strcmp(cmd, "paths") == 0) {
		struct probe_pathmap *m = malloc(sizeof(*m));

		ret = m != NULL ? probe_discover(&sess, dst, m) : -ENOMEM;
		if (ret == 0) {
			if (redis != NULL)
				probe_redis_map(redis, m);
			if (json) {
				json_t *o = probe_pathmap_json(m, true);

				json_object_set_new(o, "backend", json_string(ops->name));
				json_object_set_new(o, "timestamps",
						    json_string(ops->timestamps(sess.io)));
				print_drops(&sess, o);
				json_dumpf(o, stdout, JSON_INDENT(1));
				putchar('\n');
				json_decref(o);
			} else {
				probe_pathmap_print(m, stdout);
			}
			rc = 0;
		} else {
			fprintf(stderr, "ice-probe: paths %s %s: %s\n", pos[0], pos[1],
				strerror(-ret));
		}
		free(m);
	} else if (strcmp(cmd, "watch") == 0) {
		struct probe_pinglist *pl = calloc(1, sizeof(*pl));
		struct probe_watch_opts o = {.json = json, .out = stdout, .redis = redis};

		if (pl == NULL)
			goto out_sess;
		if (cfg.pinglist[0] != '\0')
			ret = probe_pinglist_load(cfg.pinglist, topo, pl, &err);
		else if (redis != NULL &&
			 (ret = probe_redis_pinglist(redis, topo, pl, &err)) != -EINVAL && ret < 0)
			ret = topo != NULL ? probe_pinglist_default(topo, src, pl) : -ENOENT;
		else if (redis == NULL)
			ret = topo != NULL ? probe_pinglist_default(topo, src, pl) : -ENOENT;
		if (ret == -EINVAL) {
			fprintf(stderr, "ice-probe: pinglist: %s\n",
				ice_cfg_err_str(&err, ebuf, sizeof(ebuf)));
			rc = 2;
		} else if (ret < 0) {
			fprintf(stderr,
				"ice-probe: watch: no pinglist (give --pinglist FILE, "
				"the Redis key ice:%s:probe:pinglist, or --topo FILE)\n",
				cfg.fabric);
			rc = 2;
		} else {
			ret = probe_watch(&sess, pl, &o);
			rc = ret < 0 ? 1 : 0;
		}
		free(pl);
	} else {
		ret = probe_respond(&sess);
		fprintf(stderr, "ice-probe: responder: answered %llu probes\n",
			(unsigned long long)sess.answered);
		rc = ret < 0 ? 1 : 0;
	}
	if (ice_log_enabled(ICE_LOG_INFO, PROBE_LOG) || strcmp(cmd, "paths") != 0) {
		fprintf(stderr, "ice-probe: ignored:");
		for (int i = 1; i < PROBE_DROP_N; i++)
			fprintf(stderr, " %s=%llu", probe_drop_names[i],
				(unsigned long long)sess.track.drops[i]);
		fprintf(stderr, "\n");
	}
out_sess:
	probe_sess_fini(&sess);
out:
	probe_redis_free(redis);
	topo_free(topo);
	return rc;
}
