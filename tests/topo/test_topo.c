// SPDX-License-Identifier: Apache-2.0
/*
 * topo: loading a hand-written file, defaults and address plans, the
 * generators (sizes, ASNs), YAML round trips, lookups, equal-cost path
 * counts and order, next hops and the FRR configuration.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo.h"

static const char example[] =
	"name: demo\n"	 /* 1 */
	"mtu: 9000\n"	 /* 2 */
	"ecmp: model\n"	 /* 3 */
	"routing: frr\n" /* 4 */
	"hash: {algorithm: toeplitz, seed: 42, fields: [src_ip, dst_ip, src_port]}\n"
	"defaults:\n"						 /* 6 */
	"  link_rate: 100mbit\n"				 /* 7 */
	"  buffer: 128K\n"					 /* 8 */
	"  ecn: {kmin: 10K, kmax: 50K, pmax: 0.1}\n"		 /* 9 */
	"  loss: 0.001\n"					 /* 10 */
	"switches:\n"						 /* 11 */
	"  - {name: spine1, tier: 2}\n"				 /* 12 */
	"  - {name: spine2, tier: 2, asn: 64999}\n"		 /* 13 */
	"  - {name: leaf1, tier: 1, hash: {algorithm: crc16}}\n" /* 14 */
	"  - {name: leaf2, tier: 1}\n"				 /* 15 */
	"hosts:\n"						 /* 16 */
	"  - name: h1\n"					 /* 17 */
	"    nics: [{name: rdma0, addr: 192.168.1.3/31}]\n"	 /* 18 */
	"  - name: h2\n"					 /* 19 */
	"links:\n"						 /* 20 */
	"  - {a: h1, b: leaf1}\n"				 /* 21 */
	"  - {a: leaf2, b: h2}\n"				 /* 22 */
	"  - {a: leaf1, b: spine1, rate: 1gbit}\n"		 /* 23 */
	"  - {a: leaf1:up2, b: spine2, ecn: {pmax: 0.5}}\n"	 /* 24 */
	"  - {a: leaf2, b: spine1}\n"				 /* 25 */
	"  - {a: leaf2, b: spine2, loss: 0.01, buffer: 1M}\n";	 /* 26 */

static struct topo *load_example(void)
{
	struct ice_cfg_err err;
	char buf[1024];
	struct topo *t = topo_load_string("example.yaml", example, strlen(example), &err);

	if (t == NULL)
		print_message("%s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
	return t;
}

static const char *ip(struct in_addr a, char *buf)
{
	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

static void test_load_example(void **state)
{
	struct topo *t = load_example();
	const struct topo_node *n, *h2;
	const struct topo_port *p;
	char b[INET_ADDRSTRLEN];

	(void)state;
	assert_non_null(t);
	assert_string_equal(t->name, "demo");
	assert_int_equal(t->mtu, 9000);
	assert_int_equal(t->ecmp, TOPO_ECMP_MODEL);
	assert_int_equal(t->routing, TOPO_ROUTING_FRR);
	assert_int_equal(t->hash.alg, TOPO_HASH_TOEPLITZ);
	assert_int_equal(t->hash.seed, 42);
	assert_int_equal(t->hash.fields, TOPO_HF_SRC_IP | TOPO_HF_DST_IP | TOPO_HF_SRC_PORT);
	assert_int_equal(t->kernel_hash_seed, 42);
	assert_int_equal(t->nnodes, 6);
	assert_int_equal(t->nlinks, 6);
	assert_int_equal(t->nports, 12);

	n = topo_node_by_name(t, "leaf1");
	assert_non_null(n);
	assert_int_equal(n->tier, 1);
	assert_int_equal(n->line, 14);
	assert_int_equal(n->hash.alg, TOPO_HASH_CRC16);
	assert_int_equal(n->hash.seed, 42); /* inherited */
	assert_int_equal(n->asn, 65001);
	assert_int_equal(topo_node_by_name(t, "leaf2")->asn, 65002);
	assert_int_equal(topo_node_by_name(t, "spine1")->asn, 65000);
	assert_int_equal(topo_node_by_name(t, "spine2")->asn, 64999);
	assert_string_equal(ip(topo_node_by_name(t, "spine1")->loopback, b), "10.255.0.1");
	assert_string_equal(ip(n->loopback, b), "10.255.0.3");

	/* link 0: defaults; the host's explicit address, the switch gets the /31 peer */
	assert_int_equal(t->links[0].rate_bps, 100000000ull);
	assert_int_equal(t->links[0].buffer_bytes, 128 * 1024);
	assert_int_equal(t->links[0].ecn.kmin_bytes, 10 * 1024);
	assert_int_equal(t->links[0].ecn.kmax_bytes, 50 * 1024);
	assert_true(t->links[0].ecn.pmax == 0.1);
	assert_int_equal(t->links[0].loss_ppm, 1000);
	assert_int_equal(t->links[0].line, 21);
	p = &t->ports[t->links[0].a];
	assert_string_equal(p->ifname, "rdma0");
	assert_string_equal(ip(p->addr, b), "192.168.1.3");
	assert_int_equal(p->plen, 31);
	assert_string_equal(ip(t->ports[p->peer].addr, b), "192.168.1.2");
	assert_string_equal(t->ports[p->peer].ifname, "h1");
	/* link 1 written upside down: a becomes the host */
	h2 = topo_node_by_name(t, "h2");
	assert_int_equal(t->ports[t->links[1].a].node, h2->id);
	assert_string_equal(t->ports[t->links[1].a].ifname, "eth0");
	/* auto plan: second switch with hosts -> 10.2.0.0/16, switch even, host odd */
	assert_string_equal(ip(t->ports[t->links[1].a].addr, b), "10.2.0.1");
	assert_string_equal(ip(t->ports[t->links[1].b].addr, b), "10.2.0.0");
	/* per-link overrides */
	assert_int_equal(t->links[2].rate_bps, 1000000000ull);
	assert_true(t->links[3].ecn.pmax == 0.5);
	assert_int_equal(t->links[3].ecn.kmin_bytes, 10 * 1024);
	assert_string_equal(t->ports[t->links[3].a].ifname, "up2");
	assert_string_equal(t->ports[t->links[3].b].ifname, "leaf1");
	assert_int_equal(t->links[5].loss_ppm, 10000);
	assert_int_equal(t->links[5].buffer_bytes, 1024 * 1024);
	/* switch-switch /31s from 10.254.0.0/16 in link order */
	assert_string_equal(ip(t->ports[t->links[2].a].addr, b), "10.254.0.0");
	assert_string_equal(ip(t->ports[t->links[2].b].addr, b), "10.254.0.1");
	assert_string_equal(ip(t->ports[t->links[5].b].addr, b), "10.254.0.7");

	/* lookups */
	assert_int_equal(topo_nic_count(t), 2);
	assert_ptr_equal(topo_nic(t, 0), p);
	assert_null(topo_nic(t, 2));
	assert_ptr_equal(topo_port_by_addr(t, p->addr), p);
	assert_null(topo_port_by_addr(t, t->ports[p->peer].addr)); /* a switch port */
	{
		char ln[64];

		assert_string_equal(topo_link_name(t, 2, ln, sizeof(ln)), "leaf1:spine1");
		assert_string_equal(topo_link_name(t, 0, ln, sizeof(ln)), "h1:leaf1");
	}
	assert_int_equal(topo_validate(t, NULL), 0);
	topo_free(t);
}

/* Write, load, write: the same text and the same topology. */
static void round_trip(struct topo *t)
{
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	FILE *f = open_memstream(&a, &alen);
	struct ice_cfg_err err;
	struct topo *u;

	assert_int_equal(topo_write_yaml(t, f), 0);
	fclose(f);
	u = topo_load_string("rt.yaml", a, alen, &err);
	if (u == NULL) {
		char buf[1024];

		print_message("%s\n%s\n", a, ice_cfg_err_str(&err, buf, sizeof(buf)));
	}
	assert_non_null(u);
	f = open_memstream(&b, &blen);
	assert_int_equal(topo_write_yaml(u, f), 0);
	fclose(f);
	assert_string_equal(a, b);
	assert_int_equal(u->nnodes, t->nnodes);
	assert_int_equal(u->nports, t->nports);
	assert_int_equal(u->nlinks, t->nlinks);
	assert_int_equal(u->mtu, t->mtu);
	assert_int_equal(u->kernel_hash_seed, t->kernel_hash_seed);
	for (uint32_t i = 0; i < t->nnodes; i++) {
		assert_string_equal(u->nodes[i].name, t->nodes[i].name);
		assert_int_equal(u->nodes[i].tier, t->nodes[i].tier);
		assert_int_equal(u->nodes[i].pod, t->nodes[i].pod);
		assert_int_equal(u->nodes[i].asn, t->nodes[i].asn);
		assert_int_equal(u->nodes[i].loopback.s_addr, t->nodes[i].loopback.s_addr);
		assert_memory_equal(&u->nodes[i].hash, &t->nodes[i].hash, sizeof(t->nodes[i].hash));
		assert_int_equal(topo_kernel_hash_seed(u, &u->nodes[i]),
				 topo_kernel_hash_seed(t, &t->nodes[i]));
	}
	for (uint32_t i = 0; i < t->nports; i++) {
		assert_string_equal(u->ports[i].ifname, t->ports[i].ifname);
		assert_int_equal(u->ports[i].addr.s_addr, t->ports[i].addr.s_addr);
		assert_int_equal(u->ports[i].plen, t->ports[i].plen);
		assert_int_equal(u->ports[i].node, t->ports[i].node);
	}
	for (uint32_t i = 0; i < t->nlinks; i++) {
		assert_int_equal(u->links[i].rate_bps, t->links[i].rate_bps);
		assert_int_equal(u->links[i].buffer_bytes, t->links[i].buffer_bytes);
		assert_int_equal(u->links[i].loss_ppm, t->links[i].loss_ppm);
		assert_memory_equal(&u->links[i].ecn, &t->links[i].ecn, sizeof(t->links[i].ecn));
	}
	topo_free(u);
	free(a);
	free(b);
}

static void test_round_trip(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;

	(void)state;
	t = load_example();
	assert_non_null(t);
	round_trip(t);
	topo_free(t);
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	round_trip(t);
	/* a switch whose seed was changed (ice-fabric hash): both kinds kept */
	((struct topo_node *)topo_node_by_name(t, "leaf1"))->hash.seed = 0x5eed;
	((struct topo_node *)topo_node_by_name(t, "leaf1"))->kernel_hash_seed = 77;
	round_trip(t);
	topo_free(t);
	o.k = 4;
	o.fabric_rate_bps = 400000000ull;
	t = topo_gen_fat_tree(&o);
	round_trip(t);
	topo_free(t);
	t = topo_gen_rail(&o);
	round_trip(t);
	topo_free(t);
}

static uint32_t count_tier(const struct topo *t, enum topo_node_kind kind, uint32_t tier)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nnodes; i++)
		n += t->nodes[i].kind == kind && t->nodes[i].tier == tier;
	return n;
}

static void test_generators(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;

	(void)state;
	topo_gen_opts_default(&o);
	assert_int_equal(o.spines, 2);
	assert_int_equal(o.leaves, 2);
	assert_int_equal(o.hosts_per_leaf, 4);
	assert_int_equal(o.host_rate_bps, 200000000ull);
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	assert_int_equal(count_tier(t, TOPO_SWITCH, 2), 2);
	assert_int_equal(count_tier(t, TOPO_SWITCH, 1), 2);
	assert_int_equal(count_tier(t, TOPO_HOST, 0), 8);
	assert_int_equal(t->nlinks, 8 + 4);
	assert_int_equal(topo_node_by_name(t, "spine2")->asn, 65000);
	assert_int_equal(topo_node_by_name(t, "leaf2")->asn, 65002);
	topo_free(t);

	for (uint32_t k = 4; k <= 8; k += 4) {
		o.k = k;
		t = topo_gen_fat_tree(&o);
		assert_non_null(t);
		assert_int_equal(count_tier(t, TOPO_SWITCH, 3), k * k / 4);
		assert_int_equal(count_tier(t, TOPO_SWITCH, 2), k * k / 2);
		assert_int_equal(count_tier(t, TOPO_SWITCH, 1), k * k / 2);
		assert_int_equal(count_tier(t, TOPO_HOST, 0), k * k * k / 4);
		assert_int_equal(t->nlinks, 3 * k * k * k / 4);
		/* RFC 7938: core shared, aggregation per pod, ToR unique */
		assert_int_equal(topo_node_by_name(t, "c1")->asn, 65000);
		assert_int_equal(topo_node_by_name(t, "p2a1")->asn, 65002);
		assert_int_equal(topo_node_by_name(t, "p2a2")->asn, 65002);
		assert_int_equal(topo_node_by_name(t, "p1t1")->asn, 65001 + k);
		assert_int_equal(topo_node_by_name(t, "p1t2")->asn, 65002 + k);
		/* aggregation hashes differently from ToRs (no polarisation) */
		assert_int_equal(topo_node_by_name(t, "p1t1")->hash.alg, TOPO_HASH_CRC32);
		assert_int_equal(topo_node_by_name(t, "p1a1")->hash.alg, TOPO_HASH_CRC32C);
		topo_free(t);
	}

	topo_gen_opts_default(&o);
	o.rails = 4;
	o.leaves = 2; /* rail groups */
	o.hosts_per_rail_group = 3;
	t = topo_gen_rail(&o);
	assert_non_null(t);
	assert_int_equal(count_tier(t, TOPO_SWITCH, 1), 8);
	assert_int_equal(count_tier(t, TOPO_HOST, 0), 6);
	assert_int_equal(topo_nic_count(t), 24);
	{
		const struct topo_node *h4 = topo_node_by_name(t, "h4");

		assert_int_equal(h4->nports, 4);
		/* NIC r of a group-2 host goes to rail leaf r of group 2 */
		for (uint32_t r = 0; r < 4; r++) {
			char want[8];

			snprintf(want, sizeof(want), "g2r%u", r + 1);
			assert_string_equal(
				t->nodes[t->ports[t->ports[h4->ports[r]].peer].node].name, want);
		}
	}
	assert_int_equal(topo_node_by_name(t, "g1r3")->nports, 3 + 2);
	topo_free(t);

	/* a fabric name that makes namespace names too long */
	topo_gen_opts_default(&o);
	snprintf(o.name, sizeof(o.name), "%s", "a-very-long-fabric-name-x");
	assert_null(topo_gen_leaf_spine(&o));
	o.name[0] = '\0';
	o.k = 3;
	assert_null(topo_gen_fat_tree(&o));
}

static int paths_between(const struct topo *t, const char *a, const char *b, struct topo_path *out,
			 int max)
{
	const struct topo_node *na = topo_node_by_name(t, a), *nb = topo_node_by_name(t, b);

	return topo_paths(t, na->ports[0], nb->ports[0], out, max);
}

static void check_sorted(const struct topo_path *p, int n)
{
	for (int i = 1; i < n; i++) {
		int c = 0;

		for (uint32_t h = 0; h < p[i].nhops && c == 0; h++)
			c = p[i - 1].egress[h] < p[i].egress[h]	  ? -1
			    : p[i - 1].egress[h] > p[i].egress[h] ? 1
								  : 0;
		assert_int_equal(c, -1);
	}
}

static void test_paths(void **state)
{
	struct topo_path p[32];
	struct topo_gen_opts o;
	struct topo *t;
	uint32_t nh[8];

	(void)state;
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	assert_int_equal(paths_between(t, "h1", "h5", p, 32), 2);
	assert_int_equal(p[0].nhops, 4);
	check_sorted(p, 2);
	assert_string_equal(t->nodes[t->ports[p[0].egress[1]].peer].name[0] ? "" : "", "");
	assert_int_equal(t->ports[t->ports[p[0].egress[1]].peer].node,
			 topo_node_by_name(t, "spine1")->id);
	assert_int_equal(t->ports[t->ports[p[1].egress[1]].peer].node,
			 topo_node_by_name(t, "spine2")->id);
	assert_int_equal(paths_between(t, "h1", "h2", p, 32), 1);
	assert_int_equal(p[0].nhops, 2);
	/* only the first max are written, the count is still right */
	assert_int_equal(paths_between(t, "h1", "h5", p, 1), 2);
	/* next hops */
	{
		const struct topo_node *leaf1 = topo_node_by_name(t, "leaf1");
		const struct topo_node *leaf2 = topo_node_by_name(t, "leaf2");
		uint32_t h5 = topo_node_by_name(t, "h5")->ports[0];

		assert_int_equal(topo_nexthops(t, leaf1->id, h5, nh, 8), 2);
		assert_true(nh[0] < nh[1]);
		assert_int_equal(topo_nexthops(t, leaf2->id, h5, nh, 8), 1);
		assert_int_equal(nh[0], t->ports[h5].peer);
		assert_int_equal(topo_nexthops(t, topo_node_by_name(t, "h1")->id, h5, nh, 8), -22);
	}
	assert_int_equal(topo_paths(t, 0, 0, p, 32), -22);
	assert_int_equal(topo_paths(t, t->links[8].b, 0, p, 32), -22); /* a switch port */
	topo_free(t);

	o.k = 4;
	t = topo_gen_fat_tree(&o);
	assert_int_equal(paths_between(t, "h1", "h16", p, 32), 4); /* across pods */
	assert_int_equal(p[0].nhops, 6);
	check_sorted(p, 4);
	assert_int_equal(paths_between(t, "h1", "h3", p, 32), 2); /* same pod, other ToR */
	assert_int_equal(p[0].nhops, 4);
	assert_int_equal(paths_between(t, "h1", "h2", p, 32), 1); /* same ToR */
	topo_free(t);

	o.k = 8;
	t = topo_gen_fat_tree(&o);
	assert_int_equal(paths_between(t, "h1", "h128", p, 32), 16);
	check_sorted(p, 16);
	topo_free(t);

	topo_gen_opts_default(&o);
	t = topo_gen_rail(&o); /* 2 groups x 4 rails, 4 hosts per group */
	{
		const struct topo_node *h1 = topo_node_by_name(t, "h1");
		const struct topo_node *h2 = topo_node_by_name(t, "h2");
		const struct topo_node *h5 = topo_node_by_name(t, "h5");

		assert_int_equal(topo_paths(t, h1->ports[0], h2->ports[0], p, 32), 1);
		assert_int_equal(topo_paths(t, h1->ports[0], h2->ports[1], p, 32), 2);
		assert_int_equal(topo_paths(t, h1->ports[0], h5->ports[0], p, 32), 2);
		assert_int_equal(topo_paths(t, h1->ports[0], h1->ports[1], p, 32), 2);
	}
	topo_free(t);
}

/* Next hops still in use once routing converged around a down link. */
static uint32_t peer_of(const struct topo *t, uint32_t port)
{
	return t->ports[t->ports[port].peer].node;
}

/* The worst queueing delay: three switch buffers across the spines. */
static void test_worst_queueing(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;

	(void)state;
	topo_gen_opts_default(&o);
	o.host_rate_bps = 100000000ull;
	o.fabric_rate_bps = 200000000ull;
	o.buffer_bytes = 256u << 10;
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	/* leaf up and spine down at 200 Mbit/s, leaf to host at 100 */
	assert_int_equal(topo_worst_queueing_ns(t), 2 * (262144ull * 8 * 1000000000 / 200000000) +
							    262144ull * 8 * 1000000000 / 100000000);
	topo_free(t);
	/* one leaf only: one buffer */
	o.leaves = 1;
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	assert_int_equal(topo_worst_queueing_ns(t), 262144ull * 8 * 1000000000 / 100000000);
	topo_free(t);
}

static void test_nexthops_down(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	const struct topo_node *leaf1, *leaf2, *spine1, *spine2;
	uint32_t h1, h5, nh[8], mask = 99;
	bool *down;

	(void)state;
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	leaf1 = topo_node_by_name(t, "leaf1");
	leaf2 = topo_node_by_name(t, "leaf2");
	spine1 = topo_node_by_name(t, "spine1");
	spine2 = topo_node_by_name(t, "spine2");
	h1 = topo_node_by_name(t, "h1")->ports[0];
	h5 = topo_node_by_name(t, "h5")->ports[0];
	down = calloc(t->nlinks, sizeof(bool));
	assert_non_null(down);

	/* all up: nothing out of use */
	assert_int_equal(topo_nexthops_down(t, leaf1->id, h5, down, nh, 8, &mask), 2);
	assert_int_equal(mask, 0);
	for (uint32_t l = 0; l < t->nlinks; l++) {
		uint32_t a = t->ports[t->links[l].a].node, b = t->ports[t->links[l].b].node;

		down[l] =
			(a == leaf1->id && b == spine2->id) || (a == spine2->id && b == leaf1->id);
	}
	/* leaf1 -> h5: the member over the down link */
	assert_int_equal(topo_nexthops(t, leaf1->id, h5, nh, 8), 2);
	assert_int_equal(topo_nexthops_down(t, leaf1->id, h5, down, nh, 8, &mask), 2);
	assert_int_equal(mask, peer_of(t, nh[0]) == spine2->id ? 1u : 2u);
	/* leaf2 -> h1: its link to spine2 is up, but spine2 lost leaf1 */
	assert_int_equal(topo_nexthops(t, leaf2->id, h1, nh, 8), 2);
	assert_int_equal(topo_nexthops_down(t, leaf2->id, h1, down, nh, 8, &mask), 2);
	assert_int_equal(mask, peer_of(t, nh[0]) == spine2->id ? 1u : 2u);
	/* leaf2 -> h5 (its own host) and spine1 -> h1: untouched */
	assert_int_equal(topo_nexthops_down(t, leaf2->id, h5, down, nh, 8, &mask), 1);
	assert_int_equal(mask, 0);
	assert_int_equal(topo_nexthops_down(t, spine1->id, h1, down, nh, 8, &mask), 1);
	assert_int_equal(mask, 0);
	/* spine2 -> h1: its only way is down */
	assert_int_equal(topo_nexthops_down(t, spine2->id, h1, down, nh, 8, &mask), 1);
	assert_int_equal(mask, 1);
	assert_int_equal(
		topo_nexthops_down(t, topo_node_by_name(t, "h1")->id, h5, down, nh, 8, &mask),
		-22); /* -EINVAL: a host */
	free(down);
	topo_free(t);
}

static void test_predict_follows_hash(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	struct topo_path p, all[4];
	const struct topo_node *leaf1;
	uint32_t src, dst, nh[4];

	(void)state;
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	src = topo_node_by_name(t, "h1")->ports[0];
	dst = topo_node_by_name(t, "h5")->ports[0];
	leaf1 = topo_node_by_name(t, "leaf1");
	assert_int_equal(topo_paths(t, src, dst, all, 4), 2);
	assert_int_equal(topo_nexthops(t, leaf1->id, dst, nh, 4), 2);
	for (uint16_t s = 49152; s < 49152 + 64; s++) {
		struct topo_5tuple tu = {.saddr = t->ports[src].addr.s_addr,
					 .daddr = t->ports[dst].addr.s_addr,
					 .sport = htons(s),
					 .dport = htons(4791),
					 .proto = 17};
		uint32_t pick = topo_hash_pick(&leaf1->hash, &tu, 2);

		assert_int_equal(topo_predict(t, src, dst, &tu, &p), 0);
		assert_int_equal(p.nhops, 4);
		assert_int_equal(p.egress[0], src);
		assert_int_equal(p.egress[1], nh[pick]);
		assert_memory_equal(&p, &all[pick], sizeof(p));
	}
	topo_free(t);
}

/* AS numbers past the 2-byte private range: fat-trees k = 64 (65,536
 * hosts, 2,048 ToRs) and k = 74 (101,306 hosts) take 4-byte private ones
 * (RFC 6996) for the whole fabric, core shared, one per pod's aggregation,
 * one per ToR, and the FRR configuration says them in asplain. */
static void test_asn_4byte(void **state)
{
	static const uint32_t ks[] = {30, 32, 64, 74};
	struct topo_gen_opts o;

	(void)state;
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		uint32_t k = ks[i], ntor = k * k / 2, base, seen = 0;
		struct ice_cfg_err err;
		char name[32], want[64], *text = NULL;
		size_t len = 0;
		struct topo *t;
		FILE *f;

		topo_gen_opts_default(&o);
		o.k = k;
		t = topo_gen_fat_tree(&o);
		assert_non_null(t);
		assert_int_equal(topo_validate(t, &err), 0);
		/* 1 + k + k^2/2 AS numbers: k = 30 still fits 65000-65534 */
		base = 1 + k + ntor <= TOPO_ASN2_MAX - TOPO_ASN2_BASE + 1 ? TOPO_ASN2_BASE
									  : TOPO_ASN4_BASE;
		assert_int_equal(base, k == 30 ? TOPO_ASN2_BASE : TOPO_ASN4_BASE);
		for (uint32_t n = 0; n < t->nnodes; n++) {
			const struct topo_node *x = &t->nodes[n];

			if (x->kind != TOPO_SWITCH)
				continue;
			seen++;
			if (x->tier == 3)
				assert_int_equal(x->asn, base);
			else if (x->tier == 2)
				assert_int_equal(x->asn, base + x->pod);
			else
				assert_true(x->asn > base + k && x->asn <= base + k + ntor);
			assert_true(x->asn <=
				    (base == TOPO_ASN2_BASE ? TOPO_ASN2_MAX : TOPO_ASN4_MAX));
		}
		assert_int_equal(seen, k * k / 4 + k * k);
		snprintf(name, sizeof(name), "p%ut%u", k, k / 2); /* the last ToR */
		assert_int_equal(topo_node_by_name(t, name)->asn, base + k + ntor);
		assert_int_equal(topo_node_by_name(t, "p1t1")->asn, base + k + 1);
		f = open_memstream(&text, &len);
		assert_int_equal(topo_frr_config(t, topo_node_by_name(t, name)->id, f), 0);
		fclose(f);
		snprintf(want, sizeof(want), "router bgp %u\n", base + k + ntor);
		assert_non_null(strstr(text, want));
		snprintf(want, sizeof(want), " remote-as %u\n", base + k);
		assert_non_null(strstr(text, want));
		free(text);
		/* a ToR given its neighbour's AS is refused, naming it */
		t->nodes[topo_node_by_name(t, "p1t2")->id].asn = base + k + 1;
		assert_int_equal(topo_validate(t, &err), -EINVAL);
		assert_int_equal(strncmp(err.key, "switches[", 9), 0);
		assert_non_null(strstr(err.key, "].asn"));
		assert_non_null(strstr(err.msg, "of p1t2 (tier 1) is also p1t1's"));
		topo_free(t);
	}
}

static void test_frr_config(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	f = open_memstream(&text, &len);
	assert_int_equal(topo_frr_config(t, topo_node_by_name(t, "leaf1")->id, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "hostname leaf1\n"));
	assert_non_null(strstr(text, "no zebra nexthop kernel enable\n"));
	assert_non_null(strstr(text, "router bgp 65001\n"));
	assert_non_null(strstr(text, " bgp router-id 10.255.0.3\n"));
	assert_non_null(strstr(text, " no bgp ebgp-requires-policy\n"));
	assert_non_null(strstr(text, " timers bgp 1 3\n"));
	/* leaf1-spine1 is link 8 -> 10.254.0.0/31, spine side .1 */
	assert_non_null(strstr(text, " neighbor 10.254.0.1 remote-as 65000\n"));
	assert_non_null(strstr(text, " neighbor 10.254.0.3 remote-as 65000\n"));
	assert_non_null(strstr(text, "  network 10.255.0.3/32\n"));
	assert_non_null(strstr(text, "  network 10.1.0.0/31\n"));
	assert_non_null(strstr(text, "  network 10.1.0.6/31\n"));
	assert_non_null(strstr(text, "  maximum-paths 2\n"));
	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	assert_int_equal(topo_frr_config(t, topo_node_by_name(t, "spine1")->id, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "router bgp 65000\n"));
	assert_non_null(strstr(text, " neighbor 10.254.0.0 remote-as 65001\n"));
	assert_non_null(strstr(text, " neighbor 10.254.0.4 remote-as 65002\n"));
	assert_null(strstr(text, "network 10.1."));
	free(text);
	f = fopen("/dev/null", "w");
	assert_int_equal(topo_frr_config(t, topo_node_by_name(t, "h1")->id, f), -22);
	fclose(f);
	topo_free(t);
}

static void test_names(void **state)
{
	(void)state;
	for (int a = 0; a < TOPO_HASH_ALG_MAX; a++)
		assert_int_equal(topo_hash_alg_parse(topo_hash_alg_name((enum topo_hash_alg)a)), a);
	assert_int_equal(topo_hash_alg_parse("crc64"), -1);
	assert_string_equal(topo_hash_alg_name(TOPO_HASH_CRC16_ANSI), "crc16-ansi");
	topo_free(NULL);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every port address and loopback of t unique; returns how many. */
static uint32_t check_unique_addrs(const struct topo *t)
{
	uint32_t *a = malloc(sizeof(uint32_t) * (t->nports + t->nnodes)), n = 0;

	assert_non_null(a);
	for (uint32_t i = 0; i < t->nports; i++)
		a[n++] = ntohl(t->ports[i].addr.s_addr);
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].kind == TOPO_SWITCH)
			a[n++] = ntohl(t->nodes[i].loopback.s_addr);
	qsort(a, n, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 1; i < n; i++)
		assert_true(a[i] != a[i - 1]);
	for (uint32_t i = 0; i < n; i++)
		assert_true(a[i] != 0);
	free(a);
	return n;
}

/* Fat-trees past the small address plan (k > 22: more than 253 ToRs; k > 40:
 * more than 32768 switch links) take the wide one; small ones keep theirs. */
/* hash_known: what a controller may trust; a topology stripped of its
 * hash lines (as ice-demo gives the controller) states none */
static void test_hash_known(void **state)
{
	struct topo *t = load_example();
	struct topo_gen_opts o;
	struct ice_cfg_err err;
	char *stripped = strdup(example), *l;

	(void)state;
	assert_non_null(t);
	assert_true(t->hash_known);
	topo_free(t);
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	assert_true(t->hash_known);
	topo_free(t);
	/* drop the top-level hash line and leaf1's hash: no statement left */
	l = strstr(stripped, "hash: {algorithm: toeplitz");
	memmove(l, strchr(l, '\n') + 1, strlen(strchr(l, '\n') + 1) + 1);
	l = strstr(stripped, ", hash: {algorithm: crc16}");
	memmove(l, l + strlen(", hash: {algorithm: crc16}"),
		strlen(l + strlen(", hash: {algorithm: crc16}")) + 1);
	t = topo_load_string("stripped.yaml", stripped, strlen(stripped), &err);
	assert_non_null(t);
	assert_false(t->hash_known);
	topo_free(t);
	free(stripped);
}

static void test_wide_address_plan(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	char b[INET_ADDRSTRLEN];
	uint32_t host0;

	(void)state;
	topo_gen_opts_default(&o);
	o.k = 22; /* 242 ToRs, 5324 switch links: the small plan */
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	assert_string_equal(ip(t->ports[t->links[0].b].addr, b), "10.1.0.0");
	assert_string_equal(ip(t->ports[t->links[0].a].addr, b), "10.1.0.1");
	assert_string_equal(ip(t->ports[t->links[2662].a].addr, b), "10.254.0.0");
	check_unique_addrs(t);
	topo_free(t);

	o.k = 48; /* 1152 ToRs, 27648 hosts, 55296 switch links */
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	assert_int_equal(topo_nic_count(t), 27648);
	assert_int_equal(t->nlinks, 27648 + 2 * 48 * 24 * 24);
	assert_int_equal(check_unique_addrs(t), 2 * t->nlinks + 5 * 48 * 48 / 4);
	/* hosts: /31s from 10.0.0.0, a 64-address block (24 NICs) per ToR */
	assert_string_equal(ip(t->ports[t->links[0].b].addr, b), "10.0.0.0");
	assert_string_equal(ip(t->ports[t->links[0].a].addr, b), "10.0.0.1");
	assert_string_equal(ip(t->ports[t->links[24].a].addr, b), "10.0.0.65");
	assert_string_equal(ip(t->ports[t->links[27647].a].addr, b), "10.1.31.239");
	assert_int_equal(t->ports[t->links[0].a].plen, 31);
	/* switch links: /31s from 100.64.0.0/10 in link order */
	assert_string_equal(ip(t->ports[t->links[27648].a].addr, b), "100.64.0.0");
	assert_string_equal(ip(t->ports[t->links[27648].b].addr, b), "100.64.0.1");
	assert_string_equal(ip(t->ports[t->links[t->nlinks - 1].b].addr, b), "100.65.175.255");
	host0 = topo_nic(t, 0)->node;
	assert_string_equal(t->nodes[host0].name, "h1");
	assert_ptr_equal(topo_port_by_addr(t, t->ports[t->links[24].a].addr),
			 &t->ports[t->links[24].a]);
	topo_free(t);

	o.k = TOPO_FAT_TREE_K_MAX + 2; /* beyond the switch-link address plan */
	assert_null(topo_gen_fat_tree(&o));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_example),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_generators),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_worst_queueing),
		cmocka_unit_test(test_nexthops_down),
		cmocka_unit_test(test_predict_follows_hash),
		cmocka_unit_test(test_frr_config),
		cmocka_unit_test(test_asn_4byte),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_wide_address_plan),
		cmocka_unit_test(test_hash_known),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
