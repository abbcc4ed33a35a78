// SPDX-License-Identifier: Apache-2.0
/* ice-probe configuration (one table row per option) and pinglists. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_config.h"
#include "ice_log.h"
#include "ice_time.h"
#include "probe.h"
#include "topo.h"

ICE_LOG_SUBSYSTEM(probe_log_sub, "probe");

#define MS ICE_NSEC_PER_MSEC
#define S  ICE_NSEC_PER_SEC
#define F(k, t, field, lo, hi, u, h)                                                               \
	{                                                                                          \
		.key = k, .type = t, .offset = offsetof(struct probe_cfg, field),                  \
		.size = sizeof(((struct probe_cfg *)0)->field), .min = lo, .max = hi, .unit = u,   \
		.help = h                                                                          \
	}

static const char *const backend_names[] = {"raw", "dpdk", NULL};

const struct ice_cfg_field probe_cfg_fields[] = {
	{.key = "backend",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct probe_cfg, backend),
	 .size = sizeof(int),
	 .choices = backend_names,
	 .help = "I/O backend: raw (sockets) or dpdk"},
	F("fabric", ICE_CFG_STRING, fabric, 0, 0, 0, "Redis namespace ice:<fabric>:"),
	F("host", ICE_CFG_STRING, host, 0, 0, 0, "host name in Redis keys; default: src"),
	F("redis", ICE_CFG_STRING, redis, 0, 0, 0,
	  "ADDR:PORT, unix socket path, or cluster:ADDR:PORT[,...]; '' = none"),
	F("topo", ICE_CFG_STRING, topo, 0, 0, 0, "topology file (names, path count, link rate)"),
	F("pinglist", ICE_CFG_STRING, pinglist, 0, 0, 0, "pinglist file; '' = Redis, then default"),
	F("src", ICE_CFG_STRING, src, 0, 0, 0, "local NIC address"),
	F("sport_min", ICE_CFG_U32, sport_min, 1024, 65535, 0, "first source port tried"),
	F("sport_max", ICE_CFG_U32, sport_max, 1024, 65535, 0, "last source port tried"),
	F("min_ports", ICE_CFG_U32, min_ports, 1, PROBE_MAX_PORTS, 0,
	  "known ports wanted per path"),
	F("extra_ports", ICE_CFG_U32, extra_ports, 1, PROBE_MAX_PORTS, 0,
	  "ports without a new path before discovery stops"),
	F("max_ports", ICE_CFG_U32, max_ports, 1, PROBE_MAX_PORTS, 0,
	  "ports tried per pair, at most"),
	F("max_ttl", ICE_CFG_U32, max_ttl, 2, PROBE_MAX_HOPS, 0, "highest TTL tried"),
	F("trace_timeout", ICE_CFG_DURATION, trace_timeout, 1 * MS, 10 * S, MS,
	  "wait for one round of trace answers"),
	F("probe_interval", ICE_CFG_DURATION, probe_interval, 100 * ICE_NSEC_PER_USEC, 60 * S, MS,
	  "between health probes on one path"),
	F("report_interval", ICE_CFG_DURATION, report_interval, 10 * MS, 3600 * S, MS,
	  "between health records"),
	F("probe_timeout", ICE_CFG_DURATION, probe_timeout, 1 * MS, 60 * S, MS,
	  "a health probe without reply by then is lost"),
	F("base_window", ICE_CFG_DURATION, base_window, 10 * MS, 86400 * S, MS,
	  "the base RTT is the minimum over this window"),
	F("map_refresh", ICE_CFG_DURATION, map_refresh, 100 * MS, 86400 * S, MS,
	  "full rediscovery of every pair's map"),
	F("check_share", ICE_CFG_DOUBLE, check_share, 0, 0.7, 0,
	  "share of the rate limit for path checks; 0 = none (other hosts' notices)"),
	F("notice_poll", ICE_CFG_DURATION, notice_poll, 0, 60 * S, MS,
	  "between reads of the other hosts' rehash notices; 0 = neither read nor sent"),
	F("link_share", ICE_CFG_DOUBLE, link_share, 1e-6, 0.1, 0,
	  "probing bytes per second / link rate, at most"),
	F("link_rate", ICE_CFG_RATE, link_rate, 0, 1e13, 0, "NIC rate; 0 = topology, else 100gbit"),
	F("burst", ICE_CFG_SIZE, burst, 256, 1 << 24, 0, "rate-limit bucket depth, bytes"),
	F("responder_port", ICE_CFG_U32, responder_port, 1, 65535, 0,
	  "UDP port probes go to (RoCEv2: 4791)"),
	F("duration", ICE_CFG_DURATION, duration, 0, 864000 * S, S, "run time; 0 = until SIGINT"),
	F("dpdk_eal", ICE_CFG_STRING, dpdk_eal, 0, 0, 0, "EAL arguments; {if} = the interface"),
	F("dpdk_gw_mac", ICE_CFG_STRING, dpdk_gw_mac, 0, 0, 0,
	  "next-hop MAC; '' = kernel ARP entry of the gateway"),
};
const size_t probe_cfg_nfields = sizeof(probe_cfg_fields) / sizeof(probe_cfg_fields[0]);

void probe_cfg_defaults(struct probe_cfg *c)
{
	const char *f = getenv("ICE_FABRIC"), *r = getenv("ICE_REDIS");

	memset(c, 0, sizeof(*c));
	c->backend = PROBE_BACKEND_RAW;
	/* inside `ice-fabric exec`, ICE_FABRIC is the fabric's name */
	snprintf(c->fabric, sizeof(c->fabric), "%s",
		 f != NULL && f[0] != '\0' && strchr(f, '/') == NULL ? f : "default");
	if (r != NULL)
		snprintf(c->redis, sizeof(c->redis), "%s", r);
	if (f != NULL && f[0] != '\0' && strchr(f, '/') == NULL)
		snprintf(c->topo, sizeof(c->topo), "/run/ice/%s/topo.yaml", f);
	c->sport_min = 49152;
	c->sport_max = 65535;
	c->min_ports = 4;
	c->extra_ports = 8;
	c->max_ports = 256;
	c->max_ttl = 8;
	c->trace_timeout = 200 * MS;
	c->probe_interval = 20 * MS;
	c->report_interval = 1 * S;
	c->probe_timeout = 1 * S;
	c->base_window = 60 * S;
	c->map_refresh = 300 * S;
	c->check_share = 0.4;
	c->notice_poll = 20 * MS;
	c->link_share = 0.001;
	c->burst = 16384;
	c->responder_port = ICE_ROCE_UDP_PORT;
	snprintf(c->dpdk_eal, sizeof(c->dpdk_eal), "%s",
		 "-l 0 --no-huge -m 256 --no-pci --no-telemetry --vdev=net_af_packet0,iface={if}");
}

int probe_cfg_load_file(struct probe_cfg *c, const char *path, struct ice_cfg_err *err)
{
	return ice_cfg_load_file(path, probe_cfg_fields, probe_cfg_nfields, c, err);
}

int probe_cfg_check(const struct probe_cfg *c, struct ice_cfg_err *err)
{
	struct in_addr a;

	memset(err, 0, sizeof(*err));
	if (c->sport_min > c->sport_max) {
		snprintf(err->key, sizeof(err->key), "sport_min");
		snprintf(err->msg, sizeof(err->msg), "expected <= sport_max (%u), got %u",
			 c->sport_max, c->sport_min);
		return -EINVAL;
	}
	if (c->src[0] != '\0' && inet_pton(AF_INET, c->src, &a) != 1) {
		snprintf(err->key, sizeof(err->key), "src");
		snprintf(err->msg, sizeof(err->msg), "expected an IPv4 address, got '%s'", c->src);
		return -EINVAL;
	}
	return 0;
}

/* ---- pinglist --------------------------------------------------------------- */

static int pl_addr(const struct ice_yaml_doc *doc, const struct ice_yaml_node *n, const char *key,
		   const struct topo *t, struct in_addr *out, struct ice_cfg_err *err)
{
	const char *s = ice_yaml_scalar(n);
	const struct topo_node *node;

	if (s != NULL && inet_pton(AF_INET, s, out) == 1)
		return 0;
	if (s != NULL && t != NULL && (node = topo_node_by_name(t, s)) != NULL &&
	    node->kind == TOPO_HOST && node->nports > 0) {
		*out = t->ports[node->ports[0]].addr;
		return 0;
	}
	ice_cfg_errf(err, doc, n, key, "expected an IPv4 address%s, got '%s'",
		     t != NULL ? " or a host of the topology" : "",
		     s != NULL ? s : "(not a scalar)");
	return -EINVAL;
}

static int pl_from_doc(const struct ice_yaml_doc *doc, const struct topo *t,
		       struct probe_pinglist *pl, struct ice_cfg_err *err)
{
	const struct ice_yaml_node *root = ice_yaml_root(doc), *pairs;
	char key[64];

	memset(pl, 0, sizeof(*pl));
	if (ice_yaml_kind(root) != ICE_YAML_MAP || (pairs = ice_yaml_get(root, "pairs")) == NULL) {
		ice_cfg_errf(err, doc, root, "pairs", "expected a mapping with a 'pairs' list");
		return -EINVAL;
	}
	for (size_t i = 0; i < ice_yaml_len(root); i++) {
		const char *k = ice_yaml_scalar(ice_yaml_key_at(root, i));

		if (strcmp(k, "pairs") != 0 && strcmp(k, "version") != 0) {
			ice_cfg_errf(err, doc, ice_yaml_key_at(root, i), k,
				     "unknown key; expected 'pairs' or 'version'");
			return -EINVAL;
		}
	}
	if (ice_yaml_kind(pairs) != ICE_YAML_SEQ) {
		ice_cfg_errf(err, doc, pairs, "pairs", "expected a list of {src, dst}");
		return -EINVAL;
	}
	if (ice_yaml_len(pairs) > PROBE_MAX_PAIRS) {
		ice_cfg_errf(err, doc, pairs, "pairs", "expected at most %d pairs, got %zu",
			     PROBE_MAX_PAIRS, ice_yaml_len(pairs));
		return -EINVAL;
	}
	for (size_t i = 0; i < ice_yaml_len(pairs); i++) {
		const struct ice_yaml_node *e = ice_yaml_at(pairs, i), *src, *dst;
		struct probe_pair *p = &pl->pair[pl->n];

		snprintf(key, sizeof(key), "pairs[%zu]", i);
		if (ice_yaml_kind(e) != ICE_YAML_MAP) {
			ice_cfg_errf(err, doc, e, key, "expected a mapping {src, dst}");
			return -EINVAL;
		}
		for (size_t j = 0; j < ice_yaml_len(e); j++) {
			const char *k = ice_yaml_scalar(ice_yaml_key_at(e, j));

			if (strcmp(k, "src") != 0 && strcmp(k, "dst") != 0) {
				snprintf(key, sizeof(key), "pairs[%zu].%s", i, k);
				ice_cfg_errf(err, doc, ice_yaml_key_at(e, j), key,
					     "unknown key; expected 'src' or 'dst'");
				return -EINVAL;
			}
		}
		src = ice_yaml_get(e, "src");
		dst = ice_yaml_get(e, "dst");
		if (src == NULL || dst == NULL) {
			snprintf(key, sizeof(key), "pairs[%zu].%s", i, src == NULL ? "src" : "dst");
			ice_cfg_errf(err, doc, e, key, "missing; expected an address");
			return -EINVAL;
		}
		snprintf(key, sizeof(key), "pairs[%zu].src", i);
		if (pl_addr(doc, src, key, t, &p->src, err) < 0)
			return -EINVAL;
		snprintf(key, sizeof(key), "pairs[%zu].dst", i);
		if (pl_addr(doc, dst, key, t, &p->dst, err) < 0)
			return -EINVAL;
		if (p->src.s_addr == p->dst.s_addr) {
			ice_cfg_errf(err, doc, dst, key, "expected an address other than src");
			return -EINVAL;
		}
		pl->n++;
	}
	return 0;
}

int probe_pinglist_parse(const char *name, const char *text, size_t len, const struct topo *t,
			 struct probe_pinglist *pl, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_string(name, text, len, err);
	int ret;

	if (doc == NULL)
		return -EINVAL;
	ret = pl_from_doc(doc, t, pl, err);
	ice_yaml_free(doc);
	return ret;
}

int probe_pinglist_load(const char *path, const struct topo *t, struct probe_pinglist *pl,
			struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_file(path, err);
	int ret;

	if (doc == NULL)
		return -EINVAL;
	ret = pl_from_doc(doc, t, pl, err);
	ice_yaml_free(doc);
	return ret;
}

static const struct topo_node *leaf_of(const struct topo *t, const struct topo_port *nic)
{
	return &t->nodes[t->ports[nic->peer].node];
}

int probe_pinglist_default(const struct topo *t, struct in_addr src, struct probe_pinglist *pl)
{
	const struct topo_port *me = topo_port_by_addr(t, src);
	uint32_t nics = topo_nic_count(t);
	const struct topo_node *seen[PROBE_MAX_PAIRS];
	uint32_t nseen = 0;

	memset(pl, 0, sizeof(*pl));
	if (me == NULL)
		return -ENOENT;
	for (uint32_t i = 0; i < nics && pl->n < PROBE_MAX_PAIRS; i++) {
		const struct topo_port *p = topo_nic(t, i);
		const struct topo_node *leaf = leaf_of(t, p);
		bool dup = false;

		if (leaf == leaf_of(t, me))
			continue; /* one path: nothing to learn */
		if (nics > 16) {  /* first NIC of each other leaf */
			for (uint32_t j = 0; j < nseen; j++)
				dup |= seen[j] == leaf;
			if (dup)
				continue;
			seen[nseen++] = leaf;
		}
		pl->pair[pl->n].src = src;
		pl->pair[pl->n].dst = p->addr;
		pl->n++;
	}
	return 0;
}
