// SPDX-License-Identifier: Apache-2.0
/*
 * topo_frr.c: FRR 8.4 configuration (integrated frr.conf: zebra + bgpd) of
 * one switch for an eBGP underlay in RFC 7938 style. Numbered sessions over
 * each fabric link's /31, the ASN plan of topo_finalize (top tier shared,
 * fat-tree aggregation per pod, leaves/ToRs unique), equal-cost multipath
 * across all uplinks. Link addresses are set by ice-fabric; the loopback is
 * set here so the network statement for it always has a route.
 */
#include <arpa/inet.h>
#include <errno.h>

#include "topo_internal.h"

static const char *ip_str(struct in_addr a, char *buf)
{
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

static struct in_addr prefix_of(struct in_addr a, uint8_t plen)
{
	struct in_addr r;
	uint32_t mask = plen == 0 ? 0 : ~0u << (32 - plen);

	r.s_addr = htonl(ntohl(a.s_addr) & mask);
	return r;
}

int topo_frr_config(const struct topo *t, uint32_t node, FILE *f)
{
	const struct topo_node *n;
	char a1[INET_ADDRSTRLEN], a2[INET_ADDRSTRLEN];
	uint32_t npeers = 0;

	if (node >= t->nnodes || t->nodes[node].kind != TOPO_SWITCH)
		return -EINVAL;
	n = &t->nodes[node];
	for (uint32_t i = 0; i < n->nports; i++)
		npeers += t->nodes[topo_port_peer_node(t, n->ports[i])].kind == TOPO_SWITCH;
	fprintf(f, "! FRR configuration of %s in fabric %s (ice-topo frr; RFC 7938 eBGP)\n",
		n->name, t->name);
	fprintf(f, "frr version 8.4\nfrr defaults datacenter\nhostname %s\n", n->name);
	fprintf(f, "! without this ECMP does not come back after a link flap (MACHINE-FACTS)\n");
	fprintf(f, "no zebra nexthop kernel enable\n");
	fprintf(f, "ip forwarding\n!\n");
	fprintf(f, "interface lo\n ip address %s/32\nexit\n!\n", ip_str(n->loopback, a1));
	for (uint32_t i = 0; i < n->nports; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];
		const struct topo_node *peer = &t->nodes[t->ports[p->peer].node];

		fprintf(f, "interface %s\n description to %s:%s\nexit\n", p->ifname, peer->name,
			t->ports[p->peer].ifname);
	}
	fprintf(f, "!\nrouter bgp %u\n", n->asn);
	fprintf(f, " bgp router-id %s\n", ip_str(n->loopback, a1));
	fprintf(f, " no bgp ebgp-requires-policy\n");
	fprintf(f, " no bgp default ipv4-unicast\n");
	fprintf(f, " bgp bestpath as-path multipath-relax\n");
	fprintf(f, " timers bgp 1 3\n");
	for (uint32_t i = 0; i < n->nports; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];
		const struct topo_port *pp = &t->ports[p->peer];
		const struct topo_node *peer = &t->nodes[pp->node];

		if (peer->kind != TOPO_SWITCH)
			continue;
		fprintf(f, " neighbor %s remote-as %u\n", ip_str(pp->addr, a1), peer->asn);
		fprintf(f, " neighbor %s description %s\n", a1, peer->name);
		fprintf(f, " neighbor %s timers connect 1\n", a1);
	}
	fprintf(f, " !\n address-family ipv4 unicast\n");
	fprintf(f, "  network %s/32\n", ip_str(n->loopback, a1));
	for (uint32_t i = 0; i < n->nports; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];

		if (t->nodes[t->ports[p->peer].node].kind != TOPO_HOST)
			continue;
		fprintf(f, "  network %s/%u\n", ip_str(prefix_of(p->addr, p->plen), a2), p->plen);
	}
	for (uint32_t i = 0; i < n->nports; i++) {
		const struct topo_port *pp = &t->ports[t->ports[n->ports[i]].peer];

		if (t->nodes[pp->node].kind == TOPO_SWITCH)
			fprintf(f, "  neighbor %s activate\n", ip_str(pp->addr, a1));
	}
	fprintf(f, "  maximum-paths %u\n", npeers > 64 ? 64 : npeers > 0 ? npeers : 1);
	fprintf(f, " exit-address-family\nexit\n!\n");
	return ferror(f) ? -EIO : 0;
}
