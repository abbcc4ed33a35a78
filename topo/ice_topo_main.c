// SPDX-License-Identifier: Apache-2.0
/*
 * ice-topo: generate, validate and query fabric topologies.
 *
 *   ice-topo gen leaf-spine|fat-tree|rail [options] [-o FILE]
 *   ice-topo validate FILE
 *   ice-topo paths FILE SRC DST
 *   ice-topo ports FILE SRC DST [--json]
 *   ice-topo frr FILE NODE
 *
 * Exit status: 0 done, 1 a bad file or a failed query, 2 bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ice_config.h"
#include "ice_roce.h"
#include "ice_time.h"
#include "topo.h"

static int __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ice-topo ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see --help)\n");
	va_end(ap);
	return 2;
}

/* Everything the commands take; one command's fields bind here. */
struct topo_cli {
	struct topo_gen_opts gen;
	int layout; /* gen: leaf-spine, fat-tree, rail */
	char out[512];
	char file[512];
	char src[64], dst[64], node[64];
	bool json;
	char **sports;
};

static const char *const layouts[] = {"leaf-spine", "fat-tree", "rail", NULL};

static int cmd_gen(void *obj)
{
	struct topo_cli *c = obj;
	struct topo_gen_opts o = c->gen;
	const char *kind = layouts[c->layout], *out = c->out[0] != '\0' ? c->out : NULL;
	struct topo *t;
	FILE *f = stdout;
	int ret;

	if (o.fabric_rate_bps == 0)
		o.fabric_rate_bps = o.host_rate_bps; /* follows --rate */
	if (c->layout == 0) {
		t = topo_gen_leaf_spine(&o);
	} else if (c->layout == 1) {
		if (o.k % 2 != 0)
			return usage_error("gen: flag --k: expected an even number, got %u", o.k);
		t = topo_gen_fat_tree(&o);
	} else {
		t = topo_gen_rail(&o);
	}
	if (t == NULL) {
		fprintf(stderr, "ice-topo: gen %s: %s\n", kind, strerror(errno));
		return 1;
	}
	if (out != NULL) {
		f = fopen(out, "w");
		if (f == NULL) {
			fprintf(stderr, "ice-topo: %s: %s\n", out, strerror(errno));
			topo_free(t);
			return 1;
		}
	}
	ret = topo_write_yaml(t, f);
	if (f != stdout && fclose(f) != 0)
		ret = -EIO;
	topo_free(t);
	if (ret < 0) {
		fprintf(stderr, "ice-topo: writing %s: %s\n", out ? out : "stdout", strerror(-ret));
		return 1;
	}
	return 0;
}

static struct topo *load(const char *path)
{
	struct ice_cfg_err err;
	char buf[768];
	struct topo *t = topo_load(path, &err);

	if (t == NULL)
		fprintf(stderr, "%s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
	return t;
}

/* HOST or HOST:NIC to a host port id; -1 with a message. */
static int64_t endpoint(const struct topo *t, const char *spec)
{
	char name[64], *colon;
	const struct topo_node *n;

	snprintf(name, sizeof(name), "%s", spec);
	colon = strchr(name, ':');
	if (colon != NULL)
		*colon++ = '\0';
	n = topo_node_by_name(t, name);
	if (n == NULL || n->kind != TOPO_HOST) {
		fprintf(stderr, "ice-topo: '%s': expected a host of %s (HOST or HOST:NIC)\n", name,
			t->file);
		return -1;
	}
	if (colon == NULL && n->nports == 1)
		return n->ports[0];
	for (uint32_t i = 0; colon != NULL && i < n->nports; i++)
		if (strcmp(t->ports[n->ports[i]].ifname, colon) == 0)
			return n->ports[i];
	fprintf(stderr, "ice-topo: '%s': expected %s:NIC with NIC one of:", spec, name);
	for (uint32_t i = 0; i < n->nports; i++)
		fprintf(stderr, " %s", t->ports[n->ports[i]].ifname);
	fprintf(stderr, "\n");
	return -1;
}

static void print_path(const struct topo *t, const struct topo_path *p, uint32_t dst)
{
	for (uint32_t h = 0; h < p->nhops; h++) {
		const struct topo_port *e = &t->ports[p->egress[h]];

		printf("%s%s:%s", h ? " -> " : "", t->nodes[e->node].name, e->ifname);
	}
	printf(" -> %s:%s   [links", t->nodes[t->ports[dst].node].name, t->ports[dst].ifname);
	for (uint32_t h = 0; h < p->nhops; h++) {
		char ln[80];

		printf(" %s", topo_link_name(t, p->link[h], ln, sizeof(ln)));
	}
	printf("]\n");
}

#define MAX_PATHS 4096

static int paths_or_ports(const struct topo_cli *c, bool ports)
{
	const char *args[3] = {c->file, c->src, c->dst};
	bool json = c->json;
	struct topo_path *paths = NULL;
	struct topo *t;
	int64_t src, dst;
	int n, ret = 1;

	t = load(args[0]);
	if (t == NULL)
		return 1;
	src = endpoint(t, args[1]);
	dst = endpoint(t, args[2]);
	if (src < 0 || dst < 0 || src == dst) {
		if (src == dst && src >= 0)
			fprintf(stderr, "ice-topo: source and destination are the same NIC\n");
		goto out;
	}
	paths = calloc(MAX_PATHS, sizeof(*paths));
	if (paths == NULL)
		goto out;
	n = topo_paths(t, (uint32_t)src, (uint32_t)dst, paths, MAX_PATHS);
	if (n <= 0) {
		fprintf(stderr, "ice-topo: no path from %s to %s\n", args[1], args[2]);
		goto out;
	}
	if (!ports) {
		printf("%d equal-cost path%s from %s to %s\n", n, n == 1 ? "" : "s", args[1],
		       args[2]);
		for (int i = 0; i < n && i < MAX_PATHS; i++) {
			printf("%3d  ", i);
			print_path(t, &paths[i], (uint32_t)dst);
		}
		ret = 0;
		goto out;
	}
	{
		static uint8_t map[TOPO_SPORT_COUNT];
		uint32_t cnt[256] = {0};
		uint64_t t0 = ice_now_ns(), dt;
		int shown = n < 255 ? n : 255;
		json_t *root = NULL, *arr = NULL;

		if (topo_port_map(t, (uint32_t)src, (uint32_t)dst, map) < 0) {
			fprintf(stderr, "ice-topo: port map failed\n");
			goto out;
		}
		dt = ice_now_ns() - t0;
		for (int i = 0; i < TOPO_SPORT_COUNT; i++)
			cnt[map[i]]++;
		if (json) {
			root = json_pack("{s:s, s:s, s:i, s:i, s:i}", "src", args[1], "dst",
					 args[2], "paths", n, "sport_base", TOPO_SPORT_BASE,
					 "sport_count", TOPO_SPORT_COUNT);
			arr = json_array();
			json_object_set_new(root, "per_path", arr);
		} else {
			printf("%d path%s from %s to %s; source ports %d-%d (map in %.1f us)\n", n,
			       n == 1 ? "" : "s", args[1], args[2], TOPO_SPORT_BASE,
			       TOPO_SPORT_BASE + TOPO_SPORT_COUNT - 1, dt / 1e3);
		}
		for (int p = 0; p < shown; p++) {
			json_t *first = json_array(), *links = json_array();
			char ln[80];

			for (int i = 0, k = 0; i < TOPO_SPORT_COUNT && k < 8; i++)
				if (map[i] == p) {
					json_array_append_new(first,
							      json_integer(TOPO_SPORT_BASE + i));
					k++;
				}
			for (uint32_t h = 0; h < paths[p].nhops; h++)
				json_array_append_new(
					links, json_string(topo_link_name(t, paths[p].link[h], ln,
									  sizeof(ln))));
			if (json) {
				json_array_append_new(arr, json_pack("{s:i, s:i, s:o, s:o}", "path",
								     p, "ports", cnt[p], "first",
								     first, "links", links));
				continue;
			}
			printf("%3d  %5u ports  first:", p, cnt[p]);
			for (size_t i = 0; i < json_array_size(first); i++)
				printf(" %lld",
				       (long long)json_integer_value(json_array_get(first, i)));
			printf("\n     ");
			print_path(t, &paths[p], (uint32_t)dst);
			json_decref(first);
			json_decref(links);
		}
		if (json) {
			json_dumpf(root, stdout, JSON_INDENT(2));
			printf("\n");
			json_decref(root);
		}
	}
	ret = 0;
out:
	free(paths);
	topo_free(t);
	return ret;
}

static int cmd_paths(void *obj)
{
	return paths_or_ports(obj, false);
}

static int cmd_ports(void *obj)
{
	return paths_or_ports(obj, true);
}

static int cmd_frr(void *obj)
{
	const struct topo_cli *c = obj;
	const struct topo_node *n;
	struct topo *t;
	int ret;

	t = load(c->file);
	if (t == NULL)
		return 1;
	n = topo_node_by_name(t, c->node);
	if (n == NULL || n->kind != TOPO_SWITCH) {
		fprintf(stderr, "ice-topo: '%s': expected a switch of %s\n", c->node, c->file);
		topo_free(t);
		return 1;
	}
	ret = topo_frr_config(t, n->id, stdout);
	topo_free(t);
	return ret < 0 ? 1 : 0;
}

/* The path each source port takes (UDP to 4791): "SPORT NODE NODE ..." */
static int cmd_predict(void *obj)
{
	const struct topo_cli *c = obj;
	struct topo *t;
	int64_t src, dst;
	int ret = 1;

	t = load(c->file);
	if (t == NULL)
		return 1;
	src = endpoint(t, c->src);
	dst = endpoint(t, c->dst);
	if (src < 0 || dst < 0 || src == dst)
		goto out;
	for (char **a = c->sports; *a != NULL; a++) {
		char *end;
		long sp = strtol(*a, &end, 10);
		struct topo_5tuple k = {
			.saddr = t->ports[src].addr.s_addr,
			.daddr = t->ports[dst].addr.s_addr,
			.sport = htons((uint16_t)sp),
			.dport = htons(ICE_ROCE_UDP_PORT),
			.proto = 17,
		};
		struct topo_path p;

		if (*end != '\0' || sp < 1 || sp > 65535) {
			fprintf(stderr, "ice-topo: predict: port '%s': expected 1-65535\n", *a);
			goto out;
		}
		if (topo_predict(t, (uint32_t)src, (uint32_t)dst, &k, &p) < 0) {
			fprintf(stderr, "ice-topo: predict failed for port %ld\n", sp);
			goto out;
		}
		printf("%ld", sp);
		for (uint32_t h = 0; h < p.nhops; h++)
			printf(" %s", t->nodes[t->ports[t->ports[p.egress[h]].peer].node].name);
		printf("\n");
	}
	ret = 0;
out:
	topo_free(t);
	return ret;
}

/* The loaded model as one JSON object, for scripts that must not parse the
 * YAML themselves (tools/ice-demo): nodes with their tier and, for hosts,
 * their NICs' addresses; links with both ends' nodes and the rate. */
static int print_json(const struct topo *t)
{
	json_t *nodes = json_array(), *links = json_array(), *root;

	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		json_t *nics = json_array();

		for (uint32_t j = 0; j < n->nports && n->kind == TOPO_HOST; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];

			json_array_append_new(nics, json_pack("{s:s, s:s}", "name", p->ifname,
							      "addr", inet_ntoa(p->addr)));
		}
		json_array_append_new(nodes,
				      json_pack("{s:s, s:s, s:i, s:o}", "name", n->name, "kind",
						n->kind == TOPO_HOST ? "host" : "switch", "tier",
						(int)n->tier, "nics", nics));
	}
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];

		json_array_append_new(links, json_pack("{s:s, s:s, s:I}", "a",
						       t->nodes[t->ports[l->a].node].name, "b",
						       t->nodes[t->ports[l->b].node].name,
						       "rate_bps", (json_int_t)l->rate_bps));
	}
	root = json_pack("{s:s, s:i, s:s, s:o, s:o}", "name", t->name, "mtu", (int)t->mtu, "ecmp",
			 t->ecmp == TOPO_ECMP_MODEL ? "model" : "kernel", "nodes", nodes, "links",
			 links);
	if (root == NULL || json_dumpf(root, stdout, JSON_COMPACT) < 0)
		return 1;
	putchar('\n');
	json_decref(root);
	return 0;
}

static int cmd_validate(void *obj)
{
	const struct topo_cli *c = obj;
	struct topo *t = load(c->file);
	uint32_t sw = 0;

	if (t == NULL)
		return 1;
	if (c->json) {
		int ret = print_json(t);

		topo_free(t);
		return ret;
	}
	for (uint32_t i = 0; i < t->nnodes; i++)
		sw += t->nodes[i].kind == TOPO_SWITCH;
	printf("%s: ok: fabric %s, %u switches, %u hosts, %u NICs, %u links\n", c->file, t->name,
	       sw, t->nnodes - sw, topo_nic_count(t), t->nlinks);
	topo_free(t);
	return 0;
}

/* A retransmission timer floor: data one way through full buffers, its ACK
 * back behind data of the other direction; 20 % above, rounded up to 10 ms */
static int cmd_rto(void *obj)
{
	const struct topo_cli *c = obj;
	struct topo *t = load(c->file);
	uint64_t q, rto;

	if (t == NULL)
		return 1;
	q = topo_worst_queueing_ns(t);
	rto = (q * 2 * 12 / 10 + 9999999) / 10000000 * 10;
	fprintf(stderr, "ice-topo: %s: worst queueing %.1f ms one way, %.1f ms round trip\n",
		c->file, q / 1e6, 2 * q / 1e6);
	printf("%llums\n", (unsigned long long)(rto ? rto : 10));
	topo_free(t);
	return 0;
}

static int set_hash(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		    size_t len)
{
	int alg = topo_hash_alg_parse(text);

	(void)f;
	if (alg < 0) {
		snprintf(msg, len,
			 "expected crc32, crc32c, crc16, crc16-ansi, xor or toeplitz, got '%s'",
			 text);
		return -EINVAL;
	}
	((struct topo_cli *)obj)->gen.hash.alg = (uint32_t)alg;
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct topo_cli, k, t, m, __VA_ARGS__)
#define N(a)		(sizeof(a) / sizeof((a)[0]))
#define POS(k, t, m, h) F(k, t, m, .min = 1, .max = UINT32_MAX, .help = h)
static const char *const ecmp_names[] = {"kernel", "model", NULL};
static const char *const routing_names[] = {"static", "frr", NULL};
static const struct ice_cfg_field gen_fields[] = {
	F("name", ICE_CFG_STRING, gen.name, .arg = "NAME",
	  .help = "fabric name (namespaces are ice<NAME>-<node>)"),
	POS("spines", ICE_CFG_U32, gen.spines, "leaf-spine: spines (2)"),
	POS("leaves", ICE_CFG_U32, gen.leaves, "leaf-spine: leaves (2)"),
	F("hosts_per_leaf", ICE_CFG_U32, gen.hosts_per_leaf, .min = 1, .max = UINT32_MAX,
	  .help = "leaf-spine: hosts per leaf (4)"),
	F("k", ICE_CFG_U32, gen.k, .min = 2, .max = TOPO_FAT_TREE_K_MAX,
	  .help = "fat-tree arity, even (4)"),
	F("rails", ICE_CFG_U32, gen.rails, .min = 1, .max = 16,
	  .help = "rail: rails, NICs per host (4)"),
	POS("groups", ICE_CFG_U32, gen.leaves, "rail: host groups (2)"),
	F("hosts_per_group", ICE_CFG_U32, gen.hosts_per_rail_group, .min = 1, .max = UINT32_MAX,
	  .help = "rail: hosts per group (4)"),
	F("rate", ICE_CFG_RATE, gen.host_rate_bps, .min = 1, .max = 1e13,
	  .help = "host link rate (200mbit)"),
	F("fabric_rate", ICE_CFG_RATE, gen.fabric_rate_bps, .min = 1, .max = 1e13,
	  .help = "switch-to-switch rate (same as --rate)"),
	F("mtu", ICE_CFG_U32, gen.mtu, .min = 1, .max = UINT32_MAX,
	  .help = "1500, or 9000 for jumbo frames"),
	F("ecmp", ICE_CFG_ENUM, gen.ecmp, .choices = ecmp_names, .help = "next hops (kernel)"),
	F("routing", ICE_CFG_ENUM, gen.routing, .choices = routing_names,
	  .help = "static routes or FRR eBGP (static)"),
	ICE_CFG_FUNC_ROW("hash", set_hash, .arg = "ALG",
			 .help = "crc32, crc32c, crc16, crc16-ansi, xor, toeplitz"),
	F("seed", ICE_CFG_U32, gen.hash.seed, .help = "hash seed (0xffffffff)"),
	F("out", ICE_CFG_STRING, out, .alias = 'o', .arg = "FILE",
	  .help = "write there instead of stdout"),
};
static const struct ice_cfg_field gen_args[] = {
	F("layout", ICE_CFG_ENUM, layout, .choices = layouts, .flags = ICE_CFG_REQUIRED,
	  .arg = "leaf-spine|fat-tree|rail"),
};
static const struct ice_cfg_field json_field[] = {
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH, .help = "one JSON object"),
};
#define ARG(k, m, a, h) F(k, ICE_CFG_STRING, m, .flags = ICE_CFG_REQUIRED, .arg = a, .help = h)
static const struct ice_cfg_field file_args[] = {
	ARG("file", file, "FILE", "a topology (YAML)"),
	ARG("src", src, "SRC", "HOST or HOST:NIC"),
	ARG("dst", dst, "DST", "HOST or HOST:NIC"),
	F("sports", ICE_CFG_ARGV, sports, .flags = ICE_CFG_REQUIRED, .arg = "SPORT",
	  .help = "UDP source ports (RoCEv2: to 4791)"),
};
static const struct ice_cfg_field frr_args[] = {
	ARG("file", file, "FILE", "a topology (YAML)"),
	ARG("node", node, "NODE", "a switch"),
};
static const struct ice_cfg_cmd cmds[] = {
	{"gen", "generate a topology", gen_fields, N(gen_fields), gen_args, 1, cmd_gen},
	{"validate", "check a topology (--json: print its model)", json_field, 1, file_args, 1,
	 cmd_validate},
	{"paths", "the equal-cost paths from SRC to DST", NULL, 0, file_args, 3, cmd_paths},
	{"ports", "source ports that cover each path", json_field, 1, file_args, 3, cmd_ports},
	{"frr", "a switch's FRR configuration", NULL, 0, frr_args, 2, cmd_frr},
	{"predict", "the path each source port takes", NULL, 0, file_args, 4, cmd_predict},
	{"rto",
	 "a retransmission timer floor above the worst queueing\nround trip (for "
	 "--rto-min)",
	 NULL, 0, file_args, 1, cmd_rto},
};

int main(int argc, char **argv)
{
	struct topo_cli c = {0};
	struct ice_cfg_cli cli = {
		.tool = "ice-topo",
		.synopsis = "usage: ice-topo COMMAND [options] ARGS",
		.obj = &c,
		.cmds = cmds,
		.ncmds = N(cmds),
		.epilog = "exit status: 0 done, 1 a bad file or a failed query, 2 bad usage\n",
	};

	topo_gen_opts_default(&c.gen);
	c.gen.fabric_rate_bps = 0; /* follows --rate unless given */
	return ice_cfg_main(&cli, argc, argv);
}
