// SPDX-License-Identifier: Apache-2.0
/*
 * ice-probe: path discovery and path health (a thin main over libice-probe).
 *
 *   ice-probe paths SRC DST [--json] [options]
 *   ice-probe watch [--json] [options]      continuous health of the pinglist
 *   ice-probe responder [options]           answer probes on this NIC
 *
 * Options: -c FILE (YAML config), --json, and --KEY VALUE for every config
 * key (dashes or underscores), e.g. --backend dpdk --report-interval 500ms,
 * all through ice_config's tables (probe_cfg_fields).
 * Exit 0 on success, 1 on a run-time failure, 2 on bad usage or config.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "ice_config.h"
#include "ice_log.h"
#include "ice_time.h"
#include "probe_internal.h"
#include "topo.h"

static void print_drops(const struct probe_sess *s, json_t *o)
{
	json_t *d = json_object();

	for (int i = 1; i < PROBE_DROP_N; i++)
		json_object_set_new(d, probe_drop_names[i],
				    json_integer((json_int_t)s->track.drops[i]));
	json_object_set_new(o, "ignored", d);
}

/* The command line: the config table's keys for every command. */
struct probe_cli {
	struct probe_cfg cfg;
	bool json;
	char src[64], dst[64]; /* paths SRC DST */
};

#define F(k, t, m, ...) ICE_CFG_ROW(struct probe_cli, k, t, m, __VA_ARGS__)
static const struct ice_cfg_field json_field[] = {
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH, .help = "JSON output"),
};
static const struct ice_cfg_field paths_args[] = {
	F("src", ICE_CFG_STRING, src, .flags = ICE_CFG_REQUIRED, .arg = "SRC",
	  .help = "local NIC address (IPv4)"),
	F("dst", ICE_CFG_STRING, dst, .flags = ICE_CFG_REQUIRED, .arg = "DST",
	  .help = "the peer's address (IPv4)"),
};
static const struct ice_cfg_cmd cmds[] = {
	{"paths", "discover the paths from SRC to DST", json_field, 1, paths_args, 2, NULL},
	{"watch", "continuous health of the pinglist", json_field, 1, NULL, 0, NULL},
	{"responder", "answer probes on this NIC", NULL, 0, NULL, 0, NULL},
};

static int probe_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct probe_cli *c = obj;
	struct in_addr a;

	(void)path;
	if (c->src[0] != '\0') {
		if (inet_pton(AF_INET, c->dst, &a) != 1)
			return ice_cfg_fail(err, NULL, "DST", "expected an IPv4 address, got '%s'",
					    c->dst);
		if (inet_pton(AF_INET, c->src, &a) != 1)
			return ice_cfg_fail(err, NULL, "SRC", "expected an IPv4 address, got '%s'",
					    c->src);
		inet_ntop(AF_INET, &a, c->cfg.src, sizeof(c->cfg.src));
	}
	return probe_cfg_check(&c->cfg, err);
}

/* What watching cost: probes and bytes on the wire against the NIC's link,
 * and this process's CPU time. */
static void print_cost(const struct probe_sess *s)
{
	double t = (ice_now_ns() - s->t_init_ns) / 1e9;
	uint64_t n = s->sent[PROBE_KIND_TRACE] + s->sent[PROBE_KIND_ECHO];
	double bps = t > 0 ? n * PROBE_WIRE_BYTES * 8.0 / t : 0;
	double rate = (double)probe_link_rate(s->cfg, s->topo, s->local);
	struct rusage ru;
	double cpu = 0;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	fprintf(stderr,
		"ice-probe: watch: sent %llu probes in %.1f s (%llu traced, %llu echoes): %.1f "
		"probes/s, %.0f bit/s on the wire (%.3f%% of the link); CPU %.2f s (%.2f%% of a "
		"core)\n",
		(unsigned long long)n, t, (unsigned long long)s->sent[PROBE_KIND_TRACE],
		(unsigned long long)s->sent[PROBE_KIND_ECHO], t > 0 ? n / t : 0, bps,
		rate > 0 ? 100 * bps / rate : 0, cpu, t > 0 ? 100 * cpu / t : 0);
}

int main(int argc, char **argv)
{
	static struct probe_cli c;
	struct ice_cfg_err err;
	struct probe_sess sess;
	struct probe_redis *redis = NULL;
	struct topo *topo = NULL;
	const struct probe_io_ops *ops;
	const struct ice_cfg_cmd *cmdp = NULL;
	struct ice_cfg_table keys = {.title = "keys (also in a -c FILE)",
				     .fields = probe_cfg_fields,
				     .nfields = probe_cfg_nfields,
				     .obj = &c.cfg};
	struct ice_cfg_cli cli = {
		.tool = "ice-probe",
		.synopsis = "usage: ice-probe COMMAND [options] ARGS",
		.obj = &c,
		.finish = probe_finish,
		.more = &keys,
		.nmore = 1,
		.cmds = cmds,
		.ncmds = sizeof(cmds) / sizeof(cmds[0]),
		.config_alias = 'c',
		.epilog = "exit status: 0 ok, 1 run-time failure, 2 bad usage or config\n",
		.cmd = &cmdp,
	};
	const char *cmd, *pos[2] = {c.src, c.dst};
	char ebuf[768];
	bool json;
	int ret, rc = 1;
	struct in_addr src, dst;

	ice_log_set_level(ICE_LOG_WARN);
	ice_log_init_env();
	probe_cfg_defaults(&c.cfg);
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	cmd = cmdp->name;
	json = c.json;
	inet_pton(AF_INET, c.dst, &dst);
	if (c.cfg.src[0] == '\0') {
		fprintf(stderr, "ice-probe: %s: expected --src ADDR (the local NIC)\n", cmd);
		return 2;
	}
	inet_pton(AF_INET, c.cfg.src, &src);
	ops = probe_io_ops_get(c.cfg.backend);
	if (ops == NULL) {
		fprintf(stderr, "ice-probe: backend dpdk: not built (DPDK was not found)\n");
		return 2;
	}
	if (c.cfg.topo[0] != '\0') {
		topo = topo_load(c.cfg.topo, &err);
		if (topo == NULL && strncmp(c.cfg.topo, "/run/ice/", 9) != 0) {
			fprintf(stderr, "ice-probe: topo: %s\n",
				ice_cfg_err_str(&err, ebuf, sizeof(ebuf)));
			return 2;
		}
	}
	if (c.cfg.redis[0] != '\0')
		redis = probe_redis_new(&c.cfg);
	ret = probe_sess_init(&sess, &c.cfg, ops, src, topo);
	if (ret < 0) {
		fprintf(stderr, "ice-probe: backend %s on %s: %s\n", ops->name, c.cfg.src,
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
		if (c.cfg.pinglist[0] != '\0')
			ret = probe_pinglist_load(c.cfg.pinglist, topo, pl, &err);
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
				c.cfg.fabric);
			rc = 2;
		} else {
			ret = probe_watch(&sess, pl, &o);
			rc = ret < 0 ? 1 : 0;
			print_cost(&sess);
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
