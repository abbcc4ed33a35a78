/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo: the fabric model shared by ice-fabric (the test bed), the controller
 * and the probe. A topology is loaded from YAML (or made by a generator),
 * validated with precise errors, and then answers: which equal-cost paths
 * join two NICs, which links they use, and — through the switches' hash
 * models — which UDP source ports take which path.
 *
 * Ownership: topo_load*() and topo_gen_*() return a topology the caller
 * frees with topo_free(); all nodes, ports, links and strings belong to it.
 * Ids (node, port, link) are dense indices, stable for a given file.
 */
#ifndef TOPO_H
#define TOPO_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ice_config.h"
#include "topo_hash.h"

#define TOPO_NAME_MAX 32
#define TOPO_MAX_TIER 3 /* 0 hosts, 1 leaf/ToR, 2 spine/aggregation, 3 core */

enum topo_node_kind {
	TOPO_HOST,
	TOPO_SWITCH,
};

enum topo_ecmp_mode {
	TOPO_ECMP_KERNEL, /* Linux multipath routes, hash policy 3 on 5-tuple, fixed seed */
	TOPO_ECMP_MODEL,  /* a tc BPF program picks next hops with the switch's hash model */
};

enum topo_routing {
	TOPO_ROUTING_STATIC, /* ice-fabric installs the ECMP routes itself */
	TOPO_ROUTING_FRR,    /* FRR eBGP (RFC 7938) computes them */
};

/* RED/ECN marking profile of a switch egress port (DCQCN's congestion point). */
struct topo_ecn {
	uint32_t kmin_bytes;
	uint32_t kmax_bytes;
	double pmax; /* marking probability at kmax, 0..1 */
};

struct topo_port {
	uint32_t id;
	uint32_t node;	     /* owning node id */
	uint32_t link;	     /* link id */
	uint32_t peer;	     /* port id at the other end */
	char ifname[16];     /* interface name inside the node's namespace */
	struct in_addr addr; /* IPv4 address on this port */
	uint8_t plen;	     /* prefix length */
};

struct topo_link {
	uint32_t id;
	uint32_t a, b;	       /* port ids; a is the lower tier (host or lower switch) */
	uint64_t rate_bps;     /* both directions */
	uint32_t buffer_bytes; /* egress buffer of each switch port on the link */
	struct topo_ecn ecn;   /* switch egress marking on this link */
	uint32_t loss_ppm;     /* injected random loss at switch egress */
	int line;	       /* YAML line (0 when generated) */
};

struct topo_node {
	uint32_t id;
	char name[TOPO_NAME_MAX];
	enum topo_node_kind kind;
	uint32_t tier;	 /* 0 host, 1 leaf, 2 spine/agg, 3 core */
	uint32_t pod;	 /* fat-tree pod, rail index, or 0 */
	uint32_t *ports; /* port ids */
	uint32_t nports;
	struct topo_hash_cfg hash; /* switches: ECMP hash model */
	uint32_t kernel_hash_seed; /* switches: their own fib_multipath_hash_seed; 0: the topology's
				    */
	uint32_t asn;		   /* switches: BGP AS number (TOPO_ASN*) */
	struct in_addr loopback;   /* switches: router id / loopback */
	int line;		   /* YAML line (0 when generated) */
};

struct topo {
	char name[TOPO_NAME_MAX]; /* fabric name; namespaces are ice<name>-<node> */
	char file[256];		  /* source file, for messages ("" when generated) */
	uint32_t mtu;		  /* link MTU: 1500, or 9000 for jumbo */
	enum topo_ecmp_mode ecmp;
	enum topo_routing routing;
	struct topo_hash_cfg hash; /* default switch hash */
	bool hash_known;	   /* the file states a hash (top level or a switch) */
	uint32_t kernel_hash_seed; /* net.ipv4.fib_multipath_hash_seed in kernel mode */
	struct topo_node *nodes;
	uint32_t nnodes;
	struct topo_port *ports;
	uint32_t nports;
	struct topo_link *links;
	uint32_t nlinks;
};

/* ---- loading, generating, writing ------------------------------------------ */

/* NULL + errno on failure; err names file, line, key and what was expected.
 * The result is validated (topo_validate). */
struct topo *topo_load(const char *path, struct ice_cfg_err *err);
struct topo *topo_load_string(const char *name, const char *yaml, size_t len,
			      struct ice_cfg_err *err);
void topo_free(struct topo *t); /* NULL-safe */
/* Checks: unique names and addresses, links join existing nodes, tiers go
 * up by one per link, every host reaches every other host, rates and ECN
 * profiles in range, hash names known. -EINVAL with err filled. */
int topo_validate(const struct topo *t, struct ice_cfg_err *err);
/* Write t as YAML that topo_load() reads back to the same topology. */
int topo_write_yaml(const struct topo *t, FILE *f);

struct topo_gen_opts {
	char name[TOPO_NAME_MAX];
	uint32_t spines, leaves, hosts_per_leaf; /* leaf-spine */
	uint32_t k;				 /* fat-tree: k-ary (k even) */
	uint32_t rails, hosts_per_rail_group;	 /* rail-optimised: NICs per host = rails */
	uint64_t host_rate_bps, fabric_rate_bps;
	uint32_t mtu;
	enum topo_ecmp_mode ecmp;
	enum topo_routing routing;
	struct topo_hash_cfg hash;
	struct topo_ecn ecn;
	uint32_t buffer_bytes;
};
void topo_gen_opts_default(struct topo_gen_opts *o); /* 2 spines, 2 leaves, 4 hosts/leaf, 200mbit */
struct topo *topo_gen_leaf_spine(const struct topo_gen_opts *o);
/* k even, 2..TOPO_FAT_TREE_K_MAX: past it the switch-link address plan
 * (/31s from 100.64.0.0/10, k^3 / 2 links) runs out; EINVAL. */
#define TOPO_FAT_TREE_K_MAX 160
struct topo *topo_gen_fat_tree(const struct topo_gen_opts *o);
struct topo *topo_gen_rail(const struct topo_gen_opts *o);

/* ---- lookups ------------------------------------------------------------------ */

const struct topo_node *topo_node_by_name(const struct topo *t, const char *name);
/* The fib_multipath_hash_seed switch n runs with in kernel mode. */
static inline uint32_t topo_kernel_hash_seed(const struct topo *t, const struct topo_node *n)
{
	return n->kernel_hash_seed != 0 ? n->kernel_hash_seed : t->kernel_hash_seed;
}
/* The port (NIC) of a host by its address; NULL when none. */
const struct topo_port *topo_port_by_addr(const struct topo *t, struct in_addr a);
/* Host NICs in id order: the i-th host port. */
uint32_t topo_nic_count(const struct topo *t);
const struct topo_port *topo_nic(const struct topo *t, uint32_t i);
/* Stable name of a link, "leaf1:spine2" style, into buf. */
const char *topo_link_name(const struct topo *t, uint32_t link, char *buf, size_t len);

/* ---- paths -------------------------------------------------------------------- */

#define TOPO_PATH_MAX_HOPS 8

/* A path from one NIC to another: the links it crosses, in order, and the
 * egress port used on each. */
struct topo_path {
	uint32_t nhops;
	uint32_t link[TOPO_PATH_MAX_HOPS];
	uint32_t egress[TOPO_PATH_MAX_HOPS]; /* port ids */
};

/* The longest queueing delay a packet can meet between two host NICs, in
 * ns: over every shortest path (NIC pairs sampled beyond 64 NICs), the sum
 * of each switch egress port's buffer drained at its link rate. Hosts' own
 * egress queues are not counted (a paced sender keeps them short). A
 * transport's retransmission timer must stay above twice this (data one
 * way, ACKs behind data the other). */
uint64_t topo_worst_queueing_ns(const struct topo *t);

/* All equal-cost (shortest) paths between two host ports, in a stable order
 * (lexicographic by egress port ids). Returns how many exist (may exceed max;
 * only the first max are written) or -EINVAL. */
int topo_paths(const struct topo *t, uint32_t src_port, uint32_t dst_port, struct topo_path *out,
	       int max);

/* The ECMP group at a switch toward a destination host port: the egress port
 * ids of the equal-cost next hops, in the order the hash indexes them
 * (ascending port id). Returns the count (0 when the switch is the last hop:
 * its only egress is the destination's port, written as out[0] with return 1). */
int topo_nexthops(const struct topo *t, uint32_t node, uint32_t dst_port, uint32_t *out, int max);
/* topo_nexthops() once a routing protocol has converged around the links
 * with down[link id] set (down NULL: none): the same next hops in out, and
 * bit j of *mask set when next hop j is out of use (its link is down, or it
 * no longer leads to the destination on a path of the original length; the
 * first 32 and the first max are judged). Returns the count or -errno. */
int topo_nexthops_down(const struct topo *t, uint32_t node, uint32_t dst_port, const bool *down,
		       uint32_t *out, int max, uint32_t *mask);

/* The path a packet with this 5-tuple takes under the switches' hash models,
 * hop by hop (the host's first hop is its only link). 0 or -EINVAL. */
int topo_predict(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		 const struct topo_5tuple *tuple, struct topo_path *out);

/*
 * For every UDP source port 49152-65535 (16384 ports), the index into
 * topo_paths()' list of the path a RoCEv2 packet (UDP, dst port 4791) from
 * src_port to dst_port takes under the hash models. path_of[i] is for source
 * port 49152 + i; 0xff when it takes no listed path. Fast: all ports of a
 * pair in well under a millisecond on a 3-tier fat-tree.
 */
#define TOPO_SPORT_BASE	 49152
#define TOPO_SPORT_COUNT 16384
int topo_port_map(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		  uint8_t path_of[TOPO_SPORT_COUNT]);
/* The same with 16-bit path indices, for pairs with 255 or more paths
 * (fat-trees from k = 32 on have (k/2)^2 >= 256): TOPO_PATH16_NONE when the
 * port takes no listed path (or one with index >= 0xffff). */
#define TOPO_PATH16_NONE 0xffffu
int topo_port_map16(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		    uint16_t path_of[TOPO_SPORT_COUNT]);

/* ---- FRR ------------------------------------------------------------------------ */

/* AS numbers assigned to switches without `asn:` (topo_finalize): 2-byte
 * private ones (RFC 6996) from TOPO_ASN2_BASE while a fabric's fit up to
 * TOPO_ASN2_MAX, else 4-byte private ones from TOPO_ASN4_BASE (asplain). */
#define TOPO_ASN2_BASE 65000u
#define TOPO_ASN2_MAX  65534u
#define TOPO_ASN4_BASE 4200000000u
#define TOPO_ASN4_MAX  4294967294u
#define TOPO_ASN_TRANS 23456u /* RFC 6793: never a switch's */

/* Write the FRR configuration (frr.conf style: zebra + bgpd sections) of one
 * switch for an eBGP underlay in RFC 7938 style (ASN per switch, or shared
 * per tier for spines, maximum-paths, timers 1 3, no ebgp-requires-policy).
 * 0 or -errno. */
int topo_frr_config(const struct topo *t, uint32_t node, FILE *f);

/* ---- Redis users of a fabric's hosts ------------------------------------------ */
#define TOPO_ACL_ADDRS 8 /* NIC addresses per host */

struct ice_redis_acl_user;

/* One Redis ACL user per host of t (the host's name and its NICs' IPv4
 * addresses, for ice_redis_acl_render): users[n], their strings in t and in
 * the struct. Fill with topo_acl_hosts (0 or -ENOMEM), free with
 * topo_acl_hosts_free. */
struct topo_acl_hosts {
	struct ice_redis_acl_user *users;
	size_t n;
	struct topo_acl_addrs *addrs; /* one per user */
};
int topo_acl_hosts(const struct topo *t, struct topo_acl_hosts *out);
void topo_acl_hosts_free(struct topo_acl_hosts *a);

/* ---- names ------------------------------------------------------------------- */
const char *topo_hash_alg_name(enum topo_hash_alg a);
int topo_hash_alg_parse(const char *s); /* -1 when unknown */

#endif /* TOPO_H */
