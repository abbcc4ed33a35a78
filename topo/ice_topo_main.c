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
#include <getopt.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ice_roce.h"
#include "ice_time.h"
#include "topo.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ice-topo gen leaf-spine|fat-tree|rail [options] [-o FILE]\n"
		   "       ice-topo validate FILE\n"
		   "       ice-topo paths FILE SRC DST      (SRC/DST: HOST or HOST:NIC)\n"
		   "       ice-topo ports FILE SRC DST [--json]\n"
		   "       ice-topo frr FILE NODE\n"
		   "       ice-topo predict FILE SRC DST SPORT...  (RoCEv2: UDP to 4791)\n"
		   "       ice-topo rto FILE    a retransmission timer floor above the worst\n"
		   "                            queueing round trip (for --rto-min)\n"
		   "gen options:\n"
		   "  --name NAME            fabric name (namespaces are ice<NAME>-<node>)\n"
		   "  --spines N --leaves N --hosts-per-leaf N     leaf-spine (2, 2, 4)\n"
		   "  --k N                  fat-tree arity, even (4)\n"
		   "  --rails N --groups N --hosts-per-group N      rail-optimised (4, 2, 4)\n"
		   "  --rate R               host link rate (200mbit)\n"
		   "  --fabric-rate R        switch-to-switch rate (same as --rate)\n"
		   "  --mtu N                1500, or 9000 for jumbo frames\n"
		   "  --ecmp kernel|model    --routing static|frr\n"
		   "  --hash ALG             crc32, crc32c, crc16, crc16-ansi, xor, toeplitz\n"
		   "  --seed N               hash seed (0xffffffff)\n"
		   "  -o FILE                write there instead of stdout\n");
}

static int __attribute__((format(printf, 1, 2))) bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ice-topo: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	fprintf(stderr, "usage: ice-topo --help\n");
	return 2;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int cmd_gen(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"spines", required_argument, NULL, 'S'},
		{"leaves", required_argument, NULL, 'L'},
		{"hosts-per-leaf", required_argument, NULL, 'H'},
		{"k", required_argument, NULL, 'k'},
		{"rails", required_argument, NULL, 'R'},
		{"groups", required_argument, NULL, 'G'},
		{"hosts-per-group", required_argument, NULL, 'P'},
		{"rate", required_argument, NULL, 'r'},
		{"fabric-rate", required_argument, NULL, 'f'},
		{"mtu", required_argument, NULL, 'm'},
		{"ecmp", required_argument, NULL, 'e'},
		{"routing", required_argument, NULL, 't'},
		{"hash", required_argument, NULL, 'a'},
		{"seed", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct topo_gen_opts o;
	const char *kind, *out = NULL;
	struct topo *t;
	FILE *f = stdout;
	bool fabric_rate_given = false;
	int c, ret;

	if (argc < 2)
		return bad_usage("gen: expected a layout: leaf-spine, fat-tree or rail");
	kind = argv[1];
	topo_gen_opts_default(&o);
	optind = 2;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		uint32_t *u32 = NULL;
		int alg;

		switch (c) {
		case 'n':
			if (strlen(optarg) >= sizeof(o.name))
				return bad_usage("--name '%s': expected at most 31 characters",
						 optarg);
			snprintf(o.name, sizeof(o.name), "%s", optarg);
			break;
		case 'S':
			u32 = &o.spines;
			break;
		case 'L':
		case 'G':
			u32 = &o.leaves;
			break;
		case 'H':
			u32 = &o.hosts_per_leaf;
			break;
		case 'k':
			u32 = &o.k;
			break;
		case 'R':
			u32 = &o.rails;
			break;
		case 'P':
			u32 = &o.hosts_per_rail_group;
			break;
		case 'm':
			u32 = &o.mtu;
			break;
		case 's':
			if (parse_u32(optarg, &o.hash.seed) < 0)
				return bad_usage("--seed '%s': expected a 32-bit number", optarg);
			break;
		case 'r':
		case 'f':
			if (ice_parse_rate(optarg,
					   c == 'r' ? &o.host_rate_bps : &o.fabric_rate_bps) < 0)
				return bad_usage("rate '%s': expected a rate such as 200mbit or "
						 "10gbit",
						 optarg);
			fabric_rate_given |= c == 'f';
			break;
		case 'e':
			if (strcmp(optarg, "kernel") != 0 && strcmp(optarg, "model") != 0)
				return bad_usage("--ecmp '%s': expected kernel or model", optarg);
			o.ecmp = optarg[0] == 'k' ? TOPO_ECMP_KERNEL : TOPO_ECMP_MODEL;
			break;
		case 't':
			if (strcmp(optarg, "static") != 0 && strcmp(optarg, "frr") != 0)
				return bad_usage("--routing '%s': expected static or frr", optarg);
			o.routing = optarg[0] == 's' ? TOPO_ROUTING_STATIC : TOPO_ROUTING_FRR;
			break;
		case 'a':
			alg = topo_hash_alg_parse(optarg);
			if (alg < 0)
				return bad_usage("--hash '%s': expected crc32, crc32c, crc16, "
						 "crc16-ansi, xor or toeplitz",
						 optarg);
			o.hash.alg = (uint32_t)alg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (u32 != NULL && (parse_u32(optarg, u32) < 0 || *u32 == 0))
			return bad_usage("'%s': expected a positive integer", optarg);
	}
	if (optind != argc)
		return bad_usage("gen: unexpected argument '%s'", argv[optind]);
	if (!fabric_rate_given)
		o.fabric_rate_bps = o.host_rate_bps; /* follows --rate */
	if (strcmp(kind, "leaf-spine") == 0) {
		t = topo_gen_leaf_spine(&o);
	} else if (strcmp(kind, "fat-tree") == 0) {
		if (o.k % 2 != 0 || o.k > 64)
			return bad_usage("--k: expected an even number from 2 to 64");
		t = topo_gen_fat_tree(&o);
	} else if (strcmp(kind, "rail") == 0) {
		if (o.rails > 16)
			return bad_usage("--rails: expected at most 16");
		t = topo_gen_rail(&o);
	} else {
		return bad_usage("gen: unknown layout '%s'; expected leaf-spine, fat-tree or rail",
				 kind);
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

static int cmd_paths(int argc, char **argv, bool ports)
{
	bool json = false;
	struct topo_path *paths = NULL;
	struct topo *t;
	int64_t src, dst;
	int n, ret = 1, nargs = 0;
	const char *args[3];

	for (int i = 1; i < argc; i++) {
		if (ports && strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-' && argv[i][1] == '-')
			return bad_usage("unknown option '%s'", argv[i]);
		else if (nargs < 3)
			args[nargs++] = argv[i];
		else
			return bad_usage("unexpected argument '%s'", argv[i]);
	}
	if (nargs != 3)
		return bad_usage("%s: expected FILE SRC DST", argv[0]);
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

static int cmd_frr(int argc, char **argv)
{
	const struct topo_node *n;
	struct topo *t;
	int ret;

	if (argc != 3)
		return bad_usage("frr: expected FILE NODE");
	t = load(argv[1]);
	if (t == NULL)
		return 1;
	n = topo_node_by_name(t, argv[2]);
	if (n == NULL || n->kind != TOPO_SWITCH) {
		fprintf(stderr, "ice-topo: '%s': expected a switch of %s\n", argv[2], argv[1]);
		topo_free(t);
		return 1;
	}
	ret = topo_frr_config(t, n->id, stdout);
	topo_free(t);
	return ret < 0 ? 1 : 0;
}

/* The path each source port takes (UDP to 4791): "SPORT NODE NODE ..." */
static int cmd_predict(int argc, char **argv)
{
	struct topo *t;
	int64_t src, dst;
	int ret = 1;

	if (argc < 5)
		return bad_usage("predict: expected FILE SRC DST SPORT...");
	t = load(argv[1]);
	if (t == NULL)
		return 1;
	src = endpoint(t, argv[2]);
	dst = endpoint(t, argv[3]);
	if (src < 0 || dst < 0 || src == dst)
		goto out;
	for (int i = 4; i < argc; i++) {
		char *end;
		long sp = strtol(argv[i], &end, 10);
		struct topo_5tuple k = {
			.saddr = t->ports[src].addr.s_addr,
			.daddr = t->ports[dst].addr.s_addr,
			.sport = htons((uint16_t)sp),
			.dport = htons(ICE_ROCE_UDP_PORT),
			.proto = 17,
		};
		struct topo_path p;

		if (*end != '\0' || sp < 1 || sp > 65535) {
			fprintf(stderr, "ice-topo: predict: port '%s': expected 1-65535\n",
				argv[i]);
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

int main(int argc, char **argv)
{
	if (argc < 2)
		return bad_usage("expected a command: %s", "gen, validate, paths, ports or frr");
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "gen") == 0)
		return cmd_gen(argc - 1, argv + 1);
	if (strcmp(argv[1], "validate") == 0) {
		struct topo *t;
		uint32_t sw = 0;

		if (argc != 3)
			return bad_usage("validate: expected FILE");
		t = load(argv[2]);
		if (t == NULL)
			return 1;
		for (uint32_t i = 0; i < t->nnodes; i++)
			sw += t->nodes[i].kind == TOPO_SWITCH;
		printf("%s: ok: fabric %s, %u switches, %u hosts, %u NICs, %u links\n", argv[2],
		       t->name, sw, t->nnodes - sw, topo_nic_count(t), t->nlinks);
		topo_free(t);
		return 0;
	}
	if (strcmp(argv[1], "paths") == 0)
		return cmd_paths(argc - 1, argv + 1, false);
	if (strcmp(argv[1], "ports") == 0)
		return cmd_paths(argc - 1, argv + 1, true);
	if (strcmp(argv[1], "frr") == 0)
		return cmd_frr(argc - 1, argv + 1);
	if (strcmp(argv[1], "predict") == 0)
		return cmd_predict(argc - 1, argv + 1);
	if (strcmp(argv[1], "rto") == 0) {
		struct topo *t;
		uint64_t q, rto;

		if (argc != 3)
			return bad_usage("rto: expected FILE");
		t = load(argv[2]);
		if (t == NULL)
			return 1;
		/* data one way through full buffers, its ACK back behind data
		 * of the other direction; 20 % above, rounded up to 10 ms */
		q = topo_worst_queueing_ns(t);
		rto = (q * 2 * 12 / 10 + 9999999) / 10000000 * 10;
		fprintf(stderr,
			"ice-topo: %s: worst queueing %.1f ms one way, %.1f ms round trip\n",
			argv[2], q / 1e6, 2 * q / 1e6);
		printf("%llums\n", (unsigned long long)(rto ? rto : 10));
		topo_free(t);
		return 0;
	}
	return bad_usage(
		"unknown command '%s'; expected gen, validate, paths, ports, frr, predict or rto",
		argv[1]);
}
