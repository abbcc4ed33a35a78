// SPDX-License-Identifier: Apache-2.0
/*
 * ice-fabric: the emulated leaf-spine / fat-tree test bed (see fabric.h).
 *
 *   ice-fabric up TOPO.yaml [--routing static|frr] [--no-bpf] [--redis PORT]
 *                  [--export-interval DUR]
 *   ice-fabric down [NAME]
 *   ice-fabric status [NAME]
 *   ice-fabric stats [NAME] [--json] [--new-peak]
 *   ice-fabric exec [--fabric NAME] NODE -- CMD [ARGS...]
 *   ice-fabric link [--fabric NAME] [--no-record] NODE:NODE|NODE:IFNAME up|down
 *   ice-fabric hash [--fabric NAME] SWITCH --seed S
 *   ice-fabric list
 *   ice-fabric export [NAME] [--interval DUR] [--redis ADDR] [--stream-cap N]
 *
 * NAME may be left out when exactly one fabric is up.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "ice_config.h"
#include "ice_log.h"
#include "ice_time.h"

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

/* Everything the commands take; one command's fields bind here. */
struct fab_cli {
	struct fab_opts up;
	struct fab_export_opts exp;
	char file[512];
	char name[64]; /* NAME or --fabric NAME; "" = the only one up */
	bool json, new_peak;
	char node[64];
	char link[160];
	int state;	/* link: 0 up, 1 down */
	bool no_record; /* link: leave the link key in Redis alone */
	uint32_t seed;
	char **cmd;
};

static const char *name_of(const struct fab_cli *c)
{
	return pick(c->name[0] != '\0' ? c->name : NULL);
}

static int set_routing(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	struct fab_cli *c = obj;

	(void)f;
	if (strcmp(text, "static") == 0) {
		c->up.routing = TOPO_ROUTING_STATIC;
	} else if (strcmp(text, "frr") == 0) {
		c->up.routing = TOPO_ROUTING_FRR;
	} else {
		snprintf(msg, len, "expected static or frr, got '%s'", text);
		return -EINVAL;
	}
	return 0;
}

static int cmd_up(void *obj)
{
	struct fab_cli *c = obj;
	struct ice_cfg_err err;
	struct topo *t;
	int ret;

	t = topo_load(c->file, &err);
	if (t == NULL) {
		char buf[640];

		fprintf(stderr, "ice-fabric: %s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return 2;
	}
	ret = fab_up(t, &c->up);
	topo_free(t);
	return ret < 0 ? 1 : 0;
}

static int cmd_down(void *obj)
{
	int ret = fab_down(name_of(obj));

	/* idempotent: nothing left to remove is success, silently */
	return ret < 0 && ret != -ENOENT ? 1 : 0;
}

static int cmd_status(void *obj)
{
	return fab_status(name_of(obj), stdout) < 0 ? 1 : 0;
}

static int cmd_stats(void *obj)
{
	struct fab_cli *c = obj;

	return fab_stats(name_of(c), c->json, c->new_peak, stdout) < 0 ? 1 : 0;
}

static int cmd_export(void *obj)
{
	struct fab_cli *c = obj;
	int ret = fab_export_run(name_of(c), &c->exp);

	return ret == -EINVAL ? 2 : ret < 0 ? 1 : 0;
}

static int cmd_list(void *obj)
{
	(void)obj;
	fab_list(stdout);
	return 0;
}

static int cmd_exec(void *obj)
{
	struct fab_cli *c = obj;

	return fab_exec(name_of(c), c->node, c->cmd) < 0 ? 127 : 0;
}

static int cmd_link(void *obj)
{
	struct fab_cli *c = obj;

	return fab_link(name_of(c), c->link, c->state == 0, !c->no_record) < 0 ? 1 : 0;
}

static int cmd_hash(void *obj)
{
	struct fab_cli *c = obj;

	return fab_hash_seed(name_of(c), c->node, c->seed, false) < 0 ? 1 : 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct fab_cli, k, t, m, __VA_ARGS__)
#define SW		ICE_CFG_SWITCH
#define REQ		ICE_CFG_REQUIRED
static const char *const states[] = {"up", "down", NULL};
static const struct ice_cfg_field up_fields[] = {
	ICE_CFG_FUNC_ROW("routing", set_routing, .arg = "static|frr",
			 .help = "routing of the switches (default: the topology's)"),
	F("no_bpf", ICE_CFG_BOOL, up.no_bpf, .flags = SW, .help = "no switch egress model (TBF)"),
	F("redis", ICE_CFG_U32, up.redis_port, .min = 1, .max = 65535, .arg = "PORT",
	  .help = "start redis-server on the management bridge"),
	F("export_interval", ICE_CFG_DURATION, up.export_ns, .min = 0, .max = 60e9,
	  .unit = ICE_NSEC_PER_MSEC, .arg = "DUR",
	  .help = "with --redis: the switch telemetry exporter's interval\n"
		  "(default 100ms; 0 = no exporter; bare numbers in ms)"),
	F("redis_acl", ICE_CFG_BOOL, up.redis_acl, .flags = SW,
	  .help = "with --redis: Redis users per role and host (icectl acl's),\n"
		  "the default user off; auth files in /run/ice/NAME/acl"),
};
static const struct ice_cfg_field up_args[] = {
	F("topo", ICE_CFG_STRING, file, .flags = REQ, .arg = "TOPO.yaml", .help = "ice-topo gen's"),
};
static const struct ice_cfg_field name_arg[] = {
	F("name", ICE_CFG_STRING, name, .help = "the fabric"),
};
static const struct ice_cfg_field stats_fields[] = {
	F("json", ICE_CFG_BOOL, json, .flags = SW, .help = "one JSON object"),
	F("new_peak", ICE_CFG_BOOL, new_peak, .flags = SW,
	  .help = "start a new peak-queue window after reading"),
};
static const struct ice_cfg_field export_fields[] = {
	F("interval", ICE_CFG_DURATION, exp.interval_ns, .min = 10e6, .max = 60e9,
	  .unit = ICE_NSEC_PER_MSEC, .arg = "DUR",
	  .help = "between readings (default 100ms; bare numbers in ms)"),
	F("redis", ICE_CFG_STRING, exp.redis, .arg = "ADDR",
	  .help = "HOST:PORT or unix:/PATH (default: the fabric's, up --redis)"),
	F("stream_cap", ICE_CFG_U32, exp.stream_cap, .min = 10, .max = 10000000,
	  .help = "entries kept per port stream (default 1000)"),
	F("redis_timeout", ICE_CFG_DURATION, exp.redis_timeout_ns, .min = 1e6, .max = 10e9,
	  .unit = ICE_NSEC_PER_MSEC, .arg = "DUR",
	  .help = "Redis connect and reply timeout (default 200ms)"),
	F("oper_poll", ICE_CFG_DURATION, exp.oper_poll_ns, .min = 0, .max = 10e9,
	  .unit = ICE_NSEC_PER_MSEC, .arg = "DUR",
	  .help = "check the ports' oper-status this often between readings and\n"
		  "export a change at once, as gNMI ON_CHANGE (default 10ms; 0: no)"),
};
static const struct ice_cfg_field fabric_field[] = {
	F("fabric", ICE_CFG_STRING, name, .arg = "NAME", .help = "the fabric"),
};
static const struct ice_cfg_field exec_args[] = {
	F("node", ICE_CFG_STRING, node, .flags = REQ, .help = "a host or switch"),
	F("cmd", ICE_CFG_ARGV, cmd, .flags = REQ, .arg = "-- CMD", .help = "the command"),
};
static const struct ice_cfg_field link_fields[] = {
	F("fabric", ICE_CFG_STRING, name, .arg = "NAME", .help = "the fabric"),
	F("no_record", ICE_CFG_BOOL, no_record, .flags = SW,
	  .help = "do not write the link's state to Redis (ice:<F>:links): as on a\n"
		  "fabric whose controller learns it from telemetry only"),
};
static const struct ice_cfg_field link_args[] = {
	F("link", ICE_CFG_STRING, link, .flags = REQ, .arg = "NODE:NODE|NODE:IFNAME"),
	F("state", ICE_CFG_ENUM, state, .choices = states, .flags = REQ, .arg = "up|down"),
};
static const struct ice_cfg_field hash_fields[] = {
	F("fabric", ICE_CFG_STRING, name, .arg = "NAME", .help = "the fabric"),
	F("seed", ICE_CFG_U32, seed, .flags = REQ, .arg = "S",
	  .help = "the new seed, 0..0xffffffff (kernel ECMP: from 1)"),
};
static const struct ice_cfg_field hash_args[] = {
	F("node", ICE_CFG_STRING, node, .flags = REQ, .arg = "SWITCH", .help = "a switch"),
};
#define N(a) (sizeof(a) / sizeof((a)[0]))
static const struct ice_cfg_cmd cmds[] = {
	{"up", "bring a fabric up", up_fields, N(up_fields), up_args, N(up_args), cmd_up},
	{"down", "tear it down (nothing to remove is fine)", NULL, 0, name_arg, 1, cmd_down},
	{"status", "its nodes and links", NULL, 0, name_arg, 1, cmd_status},
	{"stats", "per switch port: bytes, CE marks, drops, queue", stats_fields, N(stats_fields),
	 name_arg, 1, cmd_stats},
	{"exec", "run CMD in NODE's namespace", fabric_field, 1, exec_args, N(exec_args), cmd_exec},
	{"link", "take a link down or up", link_fields, N(link_fields), link_args, N(link_args),
	 cmd_link},
	{"hash", "change a switch's ECMP hash seed live (a reboot or upgrade)", hash_fields,
	 N(hash_fields), hash_args, N(hash_args), cmd_hash},
	{"list", "the fabrics that are up", NULL, 0, NULL, 0, cmd_list},
	{"export", "switch port telemetry into Redis (up --redis runs it)", export_fields,
	 N(export_fields), name_arg, 1, cmd_export},
};

int main(int argc, char **argv)
{
	struct fab_cli c = {
		.up = {.routing = -1, .export_ns = 100 * ICE_NSEC_PER_MSEC},
		.exp = {.interval_ns = 100 * ICE_NSEC_PER_MSEC,
			.stream_cap = 1000,
			.redis_timeout_ns = 200 * ICE_NSEC_PER_MSEC,
			.oper_poll_ns = 10 * ICE_NSEC_PER_MSEC},
	};
	struct ice_cfg_cli cli = {
		.tool = "ice-fabric",
		.synopsis = "usage: ice-fabric COMMAND [options] ARGS",
		.obj = &c,
		.cmds = cmds,
		.ncmds = N(cmds),
		.epilog = "NAME may be left out when exactly one fabric is up.\n",
	};

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	return ice_cfg_main(&cli, argc, argv);
}
