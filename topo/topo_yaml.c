// SPDX-License-Identifier: Apache-2.0
/*
 * topo_yaml.c: the topology file format (topo/README.md): loading with
 * errors that name file, line, key and expectation, and writing back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static const char *const alg_choices[] = {"crc32", "crc32c",   "crc16", "crc16-ansi",
					  "xor",   "toeplitz", NULL};
static const char *const ecmp_choices[] = {"kernel", "model", NULL};
static const char *const routing_choices[] = {"static", "frr", NULL};

struct top_cfg {
	char name[TOPO_NAME_MAX];
	uint32_t mtu;
	int ecmp;
	int routing;
	uint32_t kernel_hash_seed;
};

static const struct ice_cfg_field top_fields[] = {
	{.key = "name",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct top_cfg, name),
	 .size = TOPO_NAME_MAX,
	 .help = "fabric name; namespaces are ice<name>-<node>"},
	{.key = "mtu",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct top_cfg, mtu),
	 .min = 1280,
	 .max = 9216,
	 .help = "link MTU in bytes"},
	{.key = "ecmp",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct top_cfg, ecmp),
	 .choices = ecmp_choices,
	 .help = "kernel multipath hashing or the switches' hash models in tc BPF"},
	{.key = "routing",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct top_cfg, routing),
	 .choices = routing_choices,
	 .help = "static ECMP routes or FRR eBGP"},
	{.key = "kernel_hash_seed",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct top_cfg, kernel_hash_seed),
	 .min = 1,
	 .max = 4294967295.0,
	 .help = "net.ipv4.fib_multipath_hash_seed in kernel mode"},
};

struct hash_tmp {
	int alg;
	uint32_t seed;
};

static const struct ice_cfg_field hash_fields[] = {
	{.key = "algorithm",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct hash_tmp, alg),
	 .choices = alg_choices,
	 .help = "switch hash model"},
	{.key = "seed",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct hash_tmp, seed),
	 .help = "CRC initial value / Toeplitz key seed / XOR seed"},
};

struct link_tmp {
	uint64_t rate;
	uint64_t buffer;
	double loss;
};

static const struct ice_cfg_field link_fields[] = {
	{.key = "rate",
	 .type = ICE_CFG_RATE,
	 .offset = offsetof(struct link_tmp, rate),
	 .min = 1000,
	 .max = 1e12,
	 .help = "link rate, both directions"},
	{.key = "buffer",
	 .type = ICE_CFG_SIZE,
	 .offset = offsetof(struct link_tmp, buffer),
	 .min = 1,
	 .max = 4294967295.0,
	 .help = "egress buffer of each switch port"},
	{.key = "loss",
	 .type = ICE_CFG_DOUBLE,
	 .offset = offsetof(struct link_tmp, loss),
	 .min = 0,
	 .max = 1,
	 .help = "injected random loss at switch egress, fraction 0..1"},
};

struct ecn_tmp {
	uint64_t kmin, kmax;
	double pmax;
};

static const struct ice_cfg_field ecn_fields[] = {
	{.key = "kmin",
	 .type = ICE_CFG_SIZE,
	 .offset = offsetof(struct ecn_tmp, kmin),
	 .min = 0,
	 .max = 4294967295.0,
	 .help = "queue depth where marking starts"},
	{.key = "kmax",
	 .type = ICE_CFG_SIZE,
	 .offset = offsetof(struct ecn_tmp, kmax),
	 .min = 0,
	 .max = 4294967295.0,
	 .help = "queue depth where marking reaches pmax"},
	{.key = "pmax",
	 .type = ICE_CFG_DOUBLE,
	 .offset = offsetof(struct ecn_tmp, pmax),
	 .min = 0,
	 .max = 1,
	 .help = "marking probability at kmax"},
};

struct switch_tmp {
	char name[TOPO_NAME_MAX];
	uint32_t tier, pod, asn, kernel_hash_seed;
};

static const struct ice_cfg_field switch_fields[] = {
	{.key = "name",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct switch_tmp, name),
	 .size = TOPO_NAME_MAX},
	{.key = "tier",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct switch_tmp, tier),
	 .min = 1,
	 .max = TOPO_MAX_TIER},
	{.key = "pod", .type = ICE_CFG_U32, .offset = offsetof(struct switch_tmp, pod)},
	{.key = "asn",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct switch_tmp, asn),
	 .min = 1,
	 .max = 4294967294.0},
	{.key = "kernel_hash_seed",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct switch_tmp, kernel_hash_seed),
	 .min = 1,
	 .max = 4294967295.0,
	 .help = "this switch's fib_multipath_hash_seed in kernel mode"},
};

struct host_tmp {
	char name[TOPO_NAME_MAX];
};

static const struct ice_cfg_field host_fields[] = {
	{.key = "name",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct host_tmp, name),
	 .size = TOPO_NAME_MAX},
};

struct nic_spec {
	char name[16];
	struct in_addr addr;
	uint8_t plen;
	int line, addr_line;
	uint32_t used_line; /* link line that took it; 0 when free */
};

struct host_nics {
	struct nic_spec *v;
	uint32_t n;
	bool declared;
};

struct loader {
	const struct ice_yaml_doc *doc;
	struct ice_cfg_err *err;
	struct topo *t;
	struct topo_link defaults;
	struct host_nics *nics; /* by node id */
	uint32_t nics_cap;
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* "prefix.key", or "key" when prefix is empty. */
static void join_key(char *buf, size_t len, const char *prefix, const char *key)
{
	snprintf(buf, len, "%s%s%s", prefix, prefix[0] ? "." : "", key);
}

/* Unknown keys of map are errors; allowed[] lists the keys. */
static int check_keys(struct loader *ld, const struct ice_yaml_node *map, const char *prefix,
		      const char *const *allowed, size_t n)
{
	char path[128], list[256];
	size_t off = 0;

	if (ice_yaml_kind(map) != ICE_YAML_MAP) {
		ice_cfg_errf(ld->err, ld->doc, map, prefix, "expected a mapping");
		return -EINVAL;
	}
	for (size_t i = 0; i < ice_yaml_len(map); i++) {
		const struct ice_yaml_node *k = ice_yaml_key_at(map, i);
		const char *ks = ice_yaml_scalar(k);
		bool ok = false;

		for (size_t j = 0; j < n && !ok; j++)
			ok = strcmp(ks, allowed[j]) == 0;
		if (ok)
			continue;
		list[0] = '\0';
		off = 0;
		for (size_t j = 0; j < n && off < sizeof(list); j++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
						j > 0 ? ", " : "", allowed[j]);
		join_key(path, sizeof(path), prefix, ks);
		ice_cfg_errf(ld->err, ld->doc, k, path, "unknown key '%s'; expected one of: %s", ks,
			     list);
		return -EINVAL;
	}
	return 0;
}

static const struct ice_yaml_node *require(struct loader *ld, const struct ice_yaml_node *map,
					   const char *prefix, const char *key, const char *what)
{
	const struct ice_yaml_node *v = ice_yaml_get(map, key);
	char path[128];

	if (v != NULL)
		return v;
	join_key(path, sizeof(path), prefix, key);
	ice_cfg_errf(ld->err, ld->doc, map, path, "missing required key '%s'; expected %s", key,
		     what);
	return NULL;
}

static const struct ice_yaml_node *get_seq(struct loader *ld, const struct ice_yaml_node *map,
					   const char *key, const char *what, int *ret)
{
	const struct ice_yaml_node *v = require(ld, map, "", key, what);

	*ret = -EINVAL;
	if (v == NULL)
		return NULL;
	if (ice_yaml_kind(v) != ICE_YAML_SEQ) {
		ice_cfg_errf(ld->err, ld->doc, v, key, "expected a list of %s", what);
		return NULL;
	}
	*ret = 0;
	return v;
}

static int parse_hash(struct loader *ld, const struct ice_yaml_node *map, const char *prefix,
		      struct topo_hash_cfg *h)
{
	static const char *const keys[] = {"algorithm", "seed", "fields"};
	struct hash_tmp tmp = {.alg = (int)h->alg, .seed = h->seed};
	const struct ice_yaml_node *fl;
	char path[128];

	if (check_keys(ld, map, prefix, keys, ARRAY_LEN(keys)) < 0 ||
	    ice_cfg_bind(ld->doc, map, prefix, hash_fields, ARRAY_LEN(hash_fields), &tmp, 0,
			 ld->err) < 0)
		return -EINVAL;
	h->alg = (uint32_t)tmp.alg;
	h->seed = tmp.seed;
	fl = ice_yaml_get(map, "fields");
	if (fl == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s.fields", prefix);
	if (ice_yaml_kind(fl) != ICE_YAML_SEQ || ice_yaml_len(fl) == 0) {
		ice_cfg_errf(ld->err, ld->doc, fl, path,
			     "expected a non-empty list of src_ip, dst_ip, proto, src_port, "
			     "dst_port");
		return -EINVAL;
	}
	h->fields = 0;
	for (size_t i = 0; i < ice_yaml_len(fl); i++) {
		const struct ice_yaml_node *it = ice_yaml_at(fl, i);
		const char *s = ice_yaml_scalar(it);
		int bit = s != NULL ? topo_hash_field_parse(s) : -1;

		if (bit < 0) {
			ice_cfg_errf(ld->err, ld->doc, it, path,
				     "unknown field '%s'; expected one of: src_ip, dst_ip, proto, "
				     "src_port, dst_port",
				     s != NULL ? s : "(not a scalar)");
			return -EINVAL;
		}
		h->fields |= (uint32_t)bit;
	}
	return 0;
}

static int parse_ecn(struct loader *ld, const struct ice_yaml_node *map, const char *prefix,
		     struct topo_ecn *e)
{
	static const char *const keys[] = {"kmin", "kmax", "pmax"};
	struct ecn_tmp tmp = {.kmin = e->kmin_bytes, .kmax = e->kmax_bytes, .pmax = e->pmax};

	if (check_keys(ld, map, prefix, keys, ARRAY_LEN(keys)) < 0 ||
	    ice_cfg_bind(ld->doc, map, prefix, ecn_fields, ARRAY_LEN(ecn_fields), &tmp, 0,
			 ld->err) < 0)
		return -EINVAL;
	if (tmp.kmin > tmp.kmax) {
		ice_cfg_errf(ld->err, ld->doc, map, prefix,
			     "kmin %llu > kmax %llu bytes; expected kmin <= kmax",
			     (unsigned long long)tmp.kmin, (unsigned long long)tmp.kmax);
		return -EINVAL;
	}
	e->kmin_bytes = (uint32_t)tmp.kmin;
	e->kmax_bytes = (uint32_t)tmp.kmax;
	e->pmax = tmp.pmax;
	return 0;
}

/* Link parameters (rate, buffer, loss, ecn) of map over l. */
static int parse_link_params(struct loader *ld, const struct ice_yaml_node *map, const char *prefix,
			     const char *rate_key, struct topo_link *l)
{
	struct link_tmp tmp = {
		.rate = l->rate_bps, .buffer = l->buffer_bytes, .loss = l->loss_ppm / 1e6};
	struct ice_cfg_field f[ARRAY_LEN(link_fields)];
	const struct ice_yaml_node *ecn;
	char path[128];

	memcpy(f, link_fields, sizeof(f));
	f[0].key = rate_key;
	if (ice_cfg_bind(ld->doc, map, prefix, f, ARRAY_LEN(f), &tmp, 0, ld->err) < 0)
		return -EINVAL;
	l->rate_bps = tmp.rate;
	l->buffer_bytes = (uint32_t)tmp.buffer;
	l->loss_ppm = (uint32_t)llround(tmp.loss * 1e6);
	ecn = ice_yaml_get(map, "ecn");
	if (ecn == NULL)
		return 0;
	join_key(path, sizeof(path), prefix, "ecn");
	return parse_ecn(ld, ecn, path, &l->ecn);
}

static int parse_addr(struct loader *ld, const struct ice_yaml_node *v, const char *key,
		      bool allow_plen, struct in_addr *a, uint8_t *plen)
{
	const char *s = ice_yaml_scalar(v);
	char buf[32], *slash;
	long pl = 32;

	if (s == NULL || strlen(s) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		char *end;

		*slash = '\0';
		pl = strtol(slash + 1, &end, 10);
		if (*end != '\0' || !allow_plen || (pl != 30 && pl != 31))
			goto bad;
	} else if (allow_plen) {
		pl = 31;
	}
	if (inet_pton(AF_INET, buf, a) != 1 || a->s_addr == 0)
		goto bad;
	if (plen != NULL)
		*plen = (uint8_t)pl;
	return 0;
bad:
	ice_cfg_errf(ld->err, ld->doc, v, key, "expected an IPv4 address%s, got '%s'",
		     allow_plen ? " such as 10.0.0.1/31 (prefix /31 or /30)"
				: " such as 10.255.0.1",
		     s != NULL ? s : "(not a scalar)");
	return -EINVAL;
}

/* A node named name must not exist yet; m is its mapping at pfx. */
static int check_new_name(struct loader *ld, const struct ice_yaml_node *m, const char *pfx,
			  const char *name)
{
	const struct topo_node *dup = topo_node_by_name(ld->t, name);
	char key[80];

	if (dup == NULL)
		return 0;
	snprintf(key, sizeof(key), "%s.name", pfx);
	ice_cfg_errf(ld->err, ld->doc, ice_yaml_get(m, "name"), key,
		     "duplicate name '%s' (first defined at line %d); expected "
		     "unique node names",
		     name, dup->line);
	return -EINVAL;
}

static int parse_switches(struct loader *ld, const struct ice_yaml_node *seq)
{
	static const char *const keys[] = {
		"name", "tier", "pod", "asn", "loopback", "hash", "kernel_hash_seed"};

	for (size_t i = 0; i < ice_yaml_len(seq); i++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, i), *v;
		struct switch_tmp s = {0};
		char pfx[64], key[80];
		int id;

		snprintf(pfx, sizeof(pfx), "switches[%zu]", i);
		if (check_keys(ld, m, pfx, keys, ARRAY_LEN(keys)) < 0 ||
		    require(ld, m, pfx, "name", "the switch's name") == NULL ||
		    require(ld, m, pfx, "tier",
			    "1 (leaf/ToR), 2 (spine/aggregation) or 3 (core)") == NULL ||
		    ice_cfg_bind(ld->doc, m, pfx, switch_fields, ARRAY_LEN(switch_fields), &s, 0,
				 ld->err) < 0)
			return -EINVAL;
		if (check_new_name(ld, m, pfx, s.name) < 0)
			return -EINVAL;
		id = topo_add_node(ld->t, s.name, TOPO_SWITCH, s.tier, s.pod, ice_yaml_line(m));
		if (id < 0)
			return id;
		ld->t->nodes[id].asn = s.asn;
		ld->t->nodes[id].kernel_hash_seed = s.kernel_hash_seed;
		v = ice_yaml_get(m, "loopback");
		snprintf(key, sizeof(key), "%s.loopback", pfx);
		if (v != NULL &&
		    parse_addr(ld, v, key, false, &ld->t->nodes[id].loopback, NULL) < 0)
			return -EINVAL;
		v = ice_yaml_get(m, "hash");
		snprintf(key, sizeof(key), "%s.hash", pfx);
		if (v != NULL && parse_hash(ld, v, key, &ld->t->nodes[id].hash) < 0)
			return -EINVAL;
		ld->t->hash_known |= v != NULL;
	}
	return 0;
}

static int nic_addr_dup(struct loader *ld, const struct nic_spec *ns)
{
	for (uint32_t h = 0; h < ld->t->nnodes; h++) {
		const struct host_nics *hn = &ld->nics[h];

		for (uint32_t j = 0; j < hn->n; j++)
			if (&hn->v[j] != ns && hn->v[j].addr.s_addr == ns->addr.s_addr &&
			    hn->v[j].addr.s_addr != 0)
				return hn->v[j].addr_line;
	}
	return 0;
}

static int parse_nics(struct loader *ld, uint32_t id, const struct ice_yaml_node *seq,
		      const char *pfx)
{
	static const char *const keys[] = {"name", "addr"};
	struct host_nics *hn = &ld->nics[id];
	char key[160];

	snprintf(key, sizeof(key), "%s.nics", pfx);
	if (ice_yaml_kind(seq) != ICE_YAML_SEQ || ice_yaml_len(seq) == 0) {
		ice_cfg_errf(ld->err, ld->doc, seq, key,
			     "expected a non-empty list of NICs ({name?, addr?})");
		return -EINVAL;
	}
	hn->declared = true;
	hn->v = calloc(ice_yaml_len(seq), sizeof(*hn->v));
	if (hn->v == NULL)
		return -ENOMEM;
	for (size_t j = 0; j < ice_yaml_len(seq); j++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, j), *v;
		struct nic_spec *ns = &hn->v[hn->n++];
		char npfx[128];
		int first;

		snprintf(npfx, sizeof(npfx), "%s.nics[%zu]", pfx, j);
		ns->line = ice_yaml_line(m);
		snprintf(ns->name, sizeof(ns->name), "eth%u", (unsigned)(j % 100000));
		if (check_keys(ld, m, npfx, keys, ARRAY_LEN(keys)) < 0)
			return -EINVAL;
		v = ice_yaml_get(m, "name");
		if (v != NULL) {
			const char *s = ice_yaml_scalar(v);

			snprintf(key, sizeof(key), "%s.name", npfx);
			if (s == NULL || s[0] == '\0' || strlen(s) >= sizeof(ns->name)) {
				ice_cfg_errf(ld->err, ld->doc, v, key,
					     "expected an interface name of 1 to 15 characters");
				return -EINVAL;
			}
			snprintf(ns->name, sizeof(ns->name), "%s", s);
		}
		v = ice_yaml_get(m, "addr");
		if (v == NULL)
			continue;
		snprintf(key, sizeof(key), "%s.addr", npfx);
		if (parse_addr(ld, v, key, true, &ns->addr, &ns->plen) < 0)
			return -EINVAL;
		ns->addr_line = ice_yaml_line(v);
		first = nic_addr_dup(ld, ns);
		if (first != 0) {
			ice_cfg_errf(ld->err, ld->doc, v, key,
				     "duplicate address %s (first used at line %d); expected "
				     "unique addresses",
				     ice_yaml_scalar(v), first);
			return -EINVAL;
		}
	}
	return 0;
}

/* ld->nics has room for need hosts' entries, the new ones zeroed. */
static int reserve_nics(struct loader *ld, uint32_t need)
{
	uint32_t cap = ld->nics_cap ? 2 * ld->nics_cap : 64;
	struct host_nics *p;

	if (need <= ld->nics_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(ld->nics, cap * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	memset(p + ld->nics_cap, 0, (cap - ld->nics_cap) * sizeof(*p));
	ld->nics = p;
	ld->nics_cap = cap;
	return 0;
}

static int parse_hosts(struct loader *ld, const struct ice_yaml_node *seq)
{
	static const char *const keys[] = {"name", "nics"};

	for (size_t i = 0; i < ice_yaml_len(seq); i++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, i), *v;
		struct host_tmp h = {0};
		char pfx[64];
		int id, ret;

		snprintf(pfx, sizeof(pfx), "hosts[%zu]", i);
		if (check_keys(ld, m, pfx, keys, ARRAY_LEN(keys)) < 0 ||
		    require(ld, m, pfx, "name", "the host's name") == NULL ||
		    ice_cfg_bind(ld->doc, m, pfx, host_fields, ARRAY_LEN(host_fields), &h, 0,
				 ld->err) < 0)
			return -EINVAL;
		if (check_new_name(ld, m, pfx, h.name) < 0)
			return -EINVAL;
		id = topo_add_node(ld->t, h.name, TOPO_HOST, 0, 0, ice_yaml_line(m));
		if (id < 0)
			return id;
		if (reserve_nics(ld, (uint32_t)id + 1) < 0)
			return -ENOMEM;
		v = ice_yaml_get(m, "nics");
		if (v != NULL) {
			ret = parse_nics(ld, (uint32_t)id, v, pfx);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

struct link_end {
	uint32_t node;
	char ifname[16];
	bool has_ifname;
	struct nic_spec *nic;
};

static int parse_end(struct loader *ld, const struct ice_yaml_node *v, const char *key,
		     int link_line, struct link_end *e)
{
	const char *s = ice_yaml_scalar(v);
	char name[64], *colon;
	const struct topo_node *n;

	memset(e, 0, sizeof(*e));
	if (s == NULL || strlen(s) >= sizeof(name)) {
		ice_cfg_errf(ld->err, ld->doc, v, key, "expected NODE or NODE:IFNAME");
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%s", s);
	colon = strchr(name, ':');
	if (colon != NULL) {
		*colon = '\0';
		if (colon[1] == '\0' || strlen(colon + 1) >= sizeof(e->ifname)) {
			ice_cfg_errf(ld->err, ld->doc, v, key,
				     "interface name '%s': expected 1 to 15 characters", colon + 1);
			return -EINVAL;
		}
		snprintf(e->ifname, sizeof(e->ifname), "%s", colon + 1);
		e->has_ifname = true;
	}
	n = topo_node_by_name(ld->t, name);
	if (n == NULL) {
		ice_cfg_errf(ld->err, ld->doc, v, key,
			     "unknown node '%s'; expected a name defined under switches or hosts",
			     name);
		return -EINVAL;
	}
	e->node = n->id;
	if (n->kind == TOPO_HOST && ld->nics[n->id].declared) {
		struct host_nics *hn = &ld->nics[n->id];

		for (uint32_t j = 0; j < hn->n && e->nic == NULL; j++) {
			if (e->has_ifname ? strcmp(hn->v[j].name, e->ifname) == 0
					  : hn->v[j].used_line == 0)
				e->nic = &hn->v[j];
		}
		if (e->nic == NULL) {
			if (e->has_ifname)
				ice_cfg_errf(ld->err, ld->doc, v, key,
					     "host %s has no NIC '%s'; expected one of the NICs "
					     "listed under its nics",
					     n->name, e->ifname);
			else
				ice_cfg_errf(ld->err, ld->doc, v, key,
					     "host %s has no free NIC for this link; expected one "
					     "link per NIC listed under its nics",
					     n->name);
			return -EINVAL;
		}
		if (e->nic->used_line != 0) {
			ice_cfg_errf(ld->err, ld->doc, v, key,
				     "NIC %s of host %s is already linked at line %u; expected "
				     "one link per NIC",
				     e->nic->name, n->name, e->nic->used_line);
			return -EINVAL;
		}
		e->nic->used_line = (uint32_t)link_line;
		snprintf(e->ifname, sizeof(e->ifname), "%s", e->nic->name);
		e->has_ifname = true;
	}
	return 0;
}

static int parse_links(struct loader *ld, const struct ice_yaml_node *seq)
{
	static const char *const keys[] = {"a", "b", "rate", "buffer", "ecn", "loss"};
	struct topo *t = ld->t;

	for (size_t i = 0; i < ice_yaml_len(seq); i++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, i), *va, *vb;
		struct topo_link l = ld->defaults;
		struct link_end ea, eb;
		char pfx[64], key[80];
		int line = ice_yaml_line(m), id;

		snprintf(pfx, sizeof(pfx), "links[%zu]", i);
		if (check_keys(ld, m, pfx, keys, ARRAY_LEN(keys)) < 0)
			return -EINVAL;
		va = require(ld, m, pfx, "a", "the lower-tier end: NODE or NODE:IFNAME");
		if (va == NULL)
			return -EINVAL;
		vb = require(ld, m, pfx, "b", "the upper-tier end: NODE or NODE:IFNAME");
		if (vb == NULL)
			return -EINVAL;
		snprintf(key, sizeof(key), "%s.a", pfx);
		if (parse_end(ld, va, key, line, &ea) < 0)
			return -EINVAL;
		snprintf(key, sizeof(key), "%s.b", pfx);
		if (parse_end(ld, vb, key, line, &eb) < 0)
			return -EINVAL;
		if (parse_link_params(ld, m, pfx, "rate", &l) < 0)
			return -EINVAL;
		id = topo_add_link(t, ea.node, ea.has_ifname ? ea.ifname : NULL, eb.node,
				   eb.has_ifname ? eb.ifname : NULL, &l, line);
		if (id < 0)
			return id;
		for (int s = 0; s < 2; s++) {
			struct topo_port *p = &t->ports[s == 0 ? t->links[id].a : t->links[id].b];
			const struct nic_spec *ns = p->node == ea.node ? ea.nic : eb.nic;

			if (ns != NULL && ns->addr.s_addr != 0 &&
			    t->nodes[p->node].kind == TOPO_HOST) {
				p->addr = ns->addr;
				p->plen = ns->plen;
			}
		}
	}
	/* Every declared NIC must be linked. */
	for (uint32_t h = 0; h < t->nnodes; h++) {
		const struct host_nics *hn = &ld->nics[h];

		for (uint32_t j = 0; h < ld->nics_cap && j < hn->n; j++) {
			char key[96];
			uint32_t idx = 0;

			if (hn->v[j].used_line != 0)
				continue;
			for (uint32_t k = 0; k < h; k++)
				idx += t->nodes[k].kind == TOPO_HOST;
			snprintf(key, sizeof(key), "hosts[%u].nics[%u]", idx, j);
			if (ld->err != NULL) {
				memset(ld->err, 0, sizeof(*ld->err));
				snprintf(ld->err->file, sizeof(ld->err->file), "%s", t->file);
				ld->err->line = hn->v[j].line;
				snprintf(ld->err->key, sizeof(ld->err->key), "%s", key);
				snprintf(ld->err->msg, sizeof(ld->err->msg),
					 "NIC %s of host %s is not connected; expected a link "
					 "with a: %s:%s",
					 hn->v[j].name, t->nodes[h].name, t->nodes[h].name,
					 hn->v[j].name);
			}
			return -EINVAL;
		}
	}
	return 0;
}

static struct topo *load_doc(const struct ice_yaml_doc *doc, struct ice_cfg_err *err)
{
	static const char *const keys[] = {
		"name", "mtu",	    "ecmp",	"routing", "kernel_hash_seed",
		"hash", "defaults", "switches", "hosts",   "links"};
	static const char *const dkeys[] = {"link_rate", "buffer", "ecn", "loss"};
	const struct ice_yaml_node *root = ice_yaml_root(doc), *v, *sw, *hs, *ls;
	struct top_cfg top = {.mtu = TOPO_DEF_MTU, .kernel_hash_seed = 0};
	struct loader ld = {.doc = doc, .err = err};
	struct topo *t = NULL;
	int ret = -EINVAL;

	if (check_keys(&ld, root, "", keys, ARRAY_LEN(keys)) < 0 ||
	    require(&ld, root, "", "name",
		    "the fabric name (short: namespaces are ice<name>-<node>)") == NULL ||
	    ice_cfg_bind(doc, root, NULL, top_fields, ARRAY_LEN(top_fields), &top, 0, err) < 0)
		goto err;
	ret = -ENOMEM;
	t = topo_alloc(top.name);
	if (t == NULL)
		goto err;
	ld.t = t;
	snprintf(t->file, sizeof(t->file), "%s", ice_yaml_doc_name(doc));
	t->mtu = top.mtu;
	t->ecmp = (enum topo_ecmp_mode)top.ecmp;
	t->routing = (enum topo_routing)top.routing;
	ret = -EINVAL;
	v = ice_yaml_get(root, "hash");
	if (v != NULL && parse_hash(&ld, v, "hash", &t->hash) < 0)
		goto err;
	t->hash_known = v != NULL;
	t->kernel_hash_seed = top.kernel_hash_seed != 0 ? top.kernel_hash_seed
			      : t->hash.seed != 0	? t->hash.seed
							: 1;
	topo_link_defaults(&ld.defaults);
	v = ice_yaml_get(root, "defaults");
	if (v != NULL && (check_keys(&ld, v, "defaults", dkeys, ARRAY_LEN(dkeys)) < 0 ||
			  parse_link_params(&ld, v, "defaults", "link_rate", &ld.defaults) < 0))
		goto err;
	sw = get_seq(&ld, root, "switches",
		     "switches ({name, tier, pod?, asn?, hash?, kernel_hash_seed?})", &ret);
	if (sw == NULL)
		goto err;
	hs = get_seq(&ld, root, "hosts", "hosts ({name, nics?})", &ret);
	if (hs == NULL)
		goto err;
	ls = get_seq(&ld, root, "links", "links ({a, b, rate?, buffer?, ecn?, loss?})", &ret);
	if (ls == NULL)
		goto err;
	ret = parse_switches(&ld, sw);
	if (ret < 0)
		goto err;
	ret = parse_hosts(&ld, hs);
	if (ret < 0)
		goto err;
	if (ld.nics_cap < t->nnodes) {
		ret = reserve_nics(&ld, t->nnodes + 1);
		if (ret < 0)
			goto err;
	}
	ret = parse_links(&ld, ls);
	if (ret < 0)
		goto err;
	ret = topo_finalize(t, err);
	if (ret < 0)
		goto err;
	ret = topo_validate(t, err);
	if (ret < 0)
		goto err;
	for (uint32_t i = 0; i < ld.nics_cap; i++)
		free(ld.nics[i].v);
	free(ld.nics);
	return t;
err:
	for (uint32_t i = 0; i < ld.nics_cap; i++)
		free(ld.nics[i].v);
	free(ld.nics);
	topo_free(t);
	errno = ret == -ENOMEM ? ENOMEM : EINVAL;
	return NULL;
}

/* load_doc(doc), then frees doc (NULL: the parse error is in err). */
static struct topo *load_doc_free(struct ice_yaml_doc *doc, struct ice_cfg_err *err)
{
	struct topo *t;
	int e;

	if (doc == NULL)
		return NULL;
	t = load_doc(doc, err);
	e = errno;
	ice_yaml_free(doc);
	errno = e;
	return t;
}

struct topo *topo_load(const char *path, struct ice_cfg_err *err)
{
	return load_doc_free(ice_yaml_load_file(path, err), err);
}

struct topo *topo_load_string(const char *name, const char *yaml, size_t len,
			      struct ice_cfg_err *err)
{
	return load_doc_free(ice_yaml_load_string(name, yaml, len, err), err);
}

/* ---- writing --------------------------------------------------------------- */

/* v in the largest of the units unit[0..2] that divides it, else in unit[3]. */
static const char *fmt_scaled(uint64_t v, const uint64_t unit[4], const char *const sfx[4],
			      char *buf, size_t len)
{
	int i = 0;

	while (i < 3 && v % unit[i] != 0)
		i++;
	snprintf(buf, len, "%llu%s", (unsigned long long)(v / unit[i]), sfx[i]);
	return buf;
}

static const char *fmt_rate(uint64_t bps, char *buf, size_t len)
{
	static const uint64_t unit[4] = {1000000000ull, 1000000ull, 1000ull, 1};
	static const char *const sfx[4] = {"gbit", "mbit", "kbit", "bit"};

	return fmt_scaled(bps, unit, sfx, buf, len);
}

static const char *fmt_size(uint64_t b, char *buf, size_t len)
{
	static const uint64_t unit[4] = {1ull << 30, 1ull << 20, 1ull << 10, 1};
	static const char *const sfx[4] = {"G", "M", "K", ""};

	if (b == 0) {
		snprintf(buf, len, "0");
		return buf;
	}
	return fmt_scaled(b, unit, sfx, buf, len);
}

/* Shortest text that reads back to the same double. */
static const char *fmt_double(double d, char *buf, size_t len)
{
	snprintf(buf, len, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, len, "%.17g", d);
	return buf;
}

static void write_hash(FILE *f, const struct topo_hash_cfg *h)
{
	bool first = true;

	fprintf(f, "{algorithm: %s, seed: 0x%x, fields: [", topo_hash_alg_name(h->alg), h->seed);
	for (uint32_t b = 1; b <= TOPO_HF_DST_PORT; b <<= 1) {
		if (!(h->fields & b) || topo_hash_field_name(b) == NULL)
			continue;
		fprintf(f, "%s%s", first ? "" : ", ", topo_hash_field_name(b));
		first = false;
	}
	fprintf(f, "]}");
}

static bool hash_eq(const struct topo_hash_cfg *a, const struct topo_hash_cfg *b)
{
	return a->alg == b->alg && a->seed == b->seed && a->fields == b->fields;
}

static void write_link_params(FILE *f, const struct topo_link *l, const struct topo_link *d)
{
	char b1[32], b2[32], b3[32];

	if (l->rate_bps != d->rate_bps)
		fprintf(f, ", rate: %s", fmt_rate(l->rate_bps, b1, sizeof(b1)));
	if (l->buffer_bytes != d->buffer_bytes)
		fprintf(f, ", buffer: %s", fmt_size(l->buffer_bytes, b1, sizeof(b1)));
	if (l->ecn.kmin_bytes != d->ecn.kmin_bytes || l->ecn.kmax_bytes != d->ecn.kmax_bytes ||
	    l->ecn.pmax != d->ecn.pmax)
		fprintf(f, ", ecn: {kmin: %s, kmax: %s, pmax: %s}",
			fmt_size(l->ecn.kmin_bytes, b1, sizeof(b1)),
			fmt_size(l->ecn.kmax_bytes, b2, sizeof(b2)),
			fmt_double(l->ecn.pmax, b3, sizeof(b3)));
	if (l->loss_ppm != d->loss_ppm)
		fprintf(f, ", loss: %s", fmt_double(l->loss_ppm / 1e6, b1, sizeof(b1)));
}

int topo_write_yaml(const struct topo *t, FILE *f)
{
	struct topo_link d;
	char b1[32], b2[32], b3[32], a[INET_ADDRSTRLEN];

	if (t->nlinks > 0)
		d = t->links[0];
	else
		topo_link_defaults(&d);
	fprintf(f, "# ICE fabric topology (format: topo/README.md)\n");
	fprintf(f, "name: %s\nmtu: %u\necmp: %s\nrouting: %s\nkernel_hash_seed: %u\n", t->name,
		t->mtu, ecmp_choices[t->ecmp == TOPO_ECMP_MODEL],
		routing_choices[t->routing == TOPO_ROUTING_FRR], t->kernel_hash_seed);
	fprintf(f, "hash: ");
	write_hash(f, &t->hash);
	fprintf(f, "\ndefaults:\n  link_rate: %s\n  buffer: %s\n",
		fmt_rate(d.rate_bps, b1, sizeof(b1)), fmt_size(d.buffer_bytes, b2, sizeof(b2)));
	fprintf(f, "  ecn: {kmin: %s, kmax: %s, pmax: %s}\n",
		fmt_size(d.ecn.kmin_bytes, b1, sizeof(b1)),
		fmt_size(d.ecn.kmax_bytes, b2, sizeof(b2)), fmt_double(d.ecn.pmax, b3, sizeof(b3)));
	fprintf(f, "  loss: %s\n", fmt_double(d.loss_ppm / 1e6, b1, sizeof(b1)));
	fprintf(f, "switches:\n");
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (n->kind != TOPO_SWITCH)
			continue;
		inet_ntop(AF_INET, &n->loopback, a, sizeof(a));
		fprintf(f, "  - {name: %s, tier: %u", n->name, n->tier);
		if (n->pod != 0)
			fprintf(f, ", pod: %u", n->pod);
		fprintf(f, ", asn: %u, loopback: %s", n->asn, a);
		if (!hash_eq(&n->hash, &t->hash)) {
			fprintf(f, ", hash: ");
			write_hash(f, &n->hash);
		}
		if (n->kernel_hash_seed != 0 && n->kernel_hash_seed != t->kernel_hash_seed)
			fprintf(f, ", kernel_hash_seed: %u", n->kernel_hash_seed);
		fprintf(f, "}\n");
	}
	fprintf(f, "hosts:\n");
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (n->kind != TOPO_HOST)
			continue;
		fprintf(f, "  - name: %s\n    nics: [", n->name);
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];

			inet_ntop(AF_INET, &p->addr, a, sizeof(a));
			fprintf(f, "%s{name: %s, addr: %s/%u}", j > 0 ? ", " : "", p->ifname, a,
				p->plen);
		}
		fprintf(f, "]\n");
	}
	fprintf(f, "links:\n");
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];
		const struct topo_port *ends[2] = {&t->ports[l->a], &t->ports[l->b]};

		fprintf(f, "  - {");
		for (int s = 0; s < 2; s++) {
			const struct topo_port *p = ends[s];
			const struct topo_node *n = &t->nodes[p->node];
			const struct topo_node *peer = &t->nodes[t->ports[p->peer].node];

			fprintf(f, "%s: %s", s == 0 ? "a" : ", b", n->name);
			if (n->kind == TOPO_HOST || strcmp(p->ifname, peer->name) != 0)
				fprintf(f, ":%s", p->ifname);
		}
		write_link_params(f, l, &d);
		fprintf(f, "}\n");
	}
	return ferror(f) ? -EIO : 0;
}
