/* SPDX-License-Identifier: Apache-2.0 */
/* topo_internal: building a topology (shared by the YAML loader and the
 * generators) and the routing helpers behind paths and port maps. */
#ifndef TOPO_INTERNAL_H
#define TOPO_INTERNAL_H

#include "topo.h"

/* Built-in defaults for links and hashing (README.md "defaults"). */
#define TOPO_DEF_RATE_BPS  200000000ull
#define TOPO_DEF_BUFFER	   (256u * 1024u)
#define TOPO_DEF_KMIN	   (32u * 1024u)
#define TOPO_DEF_KMAX	   (128u * 1024u)
#define TOPO_DEF_PMAX	   0.2
#define TOPO_DEF_MTU	   1500u
#define TOPO_DEF_HASH_SEED 0xffffffffu

struct topo *topo_alloc(const char *name);
/* Adds a node; returns its id or a negative errno. */
int topo_add_node(struct topo *t, const char *name, enum topo_node_kind kind, uint32_t tier,
		  uint32_t pod, int line);
/* Adds a link between nodes na and nb with two new ports. ifa/ifb may be
 * NULL (default names at finalize). The lower-tier end becomes 'a'. Link
 * parameters are taken from tmpl. Returns the link id or a negative errno. */
int topo_add_link(struct topo *t, uint32_t na, const char *ifa, uint32_t nb, const char *ifb,
		  const struct topo_link *tmpl, int line);
/* Per-node port lists, default interface names, addresses, loopbacks and
 * ASNs for whatever was left unset. 0 or -ENOMEM / -ERANGE (address plan
 * exhausted; err filled when non-NULL). */
int topo_finalize(struct topo *t, struct ice_cfg_err *err);

/* Default link parameters. */
void topo_link_defaults(struct topo_link *l);

/* The switch at the other end of a host port's link. */
static inline uint32_t topo_port_peer_node(const struct topo *t, uint32_t port)
{
	return t->ports[t->ports[port].peer].node;
}

/* Hop distances (in links, over switches only) from every switch to the
 * switch dst_sw; UINT32_MAX when unreachable, hosts UINT32_MAX. dist must
 * hold t->nnodes entries; queue too. */
void topo_route_dist(const struct topo *t, uint32_t dst_sw, uint32_t *dist, uint32_t *queue);
/* Next hops at switch node toward the host port dst_port given dist from
 * topo_route_dist(dst leaf): egress port ids, ascending. */
int topo_route_nexthops(const struct topo *t, const uint32_t *dist, uint32_t node,
			uint32_t dst_port, uint32_t *out, int max);

/* Hash config text for fields. */
int topo_hash_field_parse(const char *s); /* bit, or -1 */
const char *topo_hash_field_name(uint32_t bit);

#endif /* TOPO_INTERNAL_H */
