// SPDX-License-Identifier: Apache-2.0
/*
 * topo_gen.c: generators for leaf-spine, k-ary fat-tree and rail-optimised
 * fabrics. Nodes are created top tier first, then hosts; host links come
 * before fabric links, so port and link ids read naturally. Addresses,
 * loopbacks and ASNs follow the plans in topo_finalize (README.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "topo_internal.h"

void topo_gen_opts_default(struct topo_gen_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->spines = 2;
	o->leaves = 2;
	o->hosts_per_leaf = 4;
	o->k = 4;
	o->rails = 4;
	o->hosts_per_rail_group = 4;
	o->host_rate_bps = TOPO_DEF_RATE_BPS;
	o->fabric_rate_bps = TOPO_DEF_RATE_BPS;
	o->mtu = TOPO_DEF_MTU;
	o->ecmp = TOPO_ECMP_KERNEL;
	o->routing = TOPO_ROUTING_STATIC;
	o->hash.alg = TOPO_HASH_CRC32;
	o->hash.seed = TOPO_DEF_HASH_SEED;
	o->hash.fields = TOPO_HF_5TUPLE;
	o->ecn.kmin_bytes = TOPO_DEF_KMIN;
	o->ecn.kmax_bytes = TOPO_DEF_KMAX;
	o->ecn.pmax = TOPO_DEF_PMAX;
	o->buffer_bytes = TOPO_DEF_BUFFER;
}

static struct topo *gen_start(const struct topo_gen_opts *o, const char *def_name,
			      struct topo_link *host_l, struct topo_link *fab_l)
{
	struct topo *t = topo_alloc(o->name[0] != '\0' ? o->name : def_name);

	if (t == NULL)
		return NULL;
	t->mtu = o->mtu != 0 ? o->mtu : TOPO_DEF_MTU;
	t->ecmp = o->ecmp;
	t->routing = o->routing;
	t->hash = o->hash;
	t->hash_known = true;
	if (t->hash.fields == 0)
		t->hash.fields = TOPO_HF_5TUPLE;
	t->kernel_hash_seed = o->hash.seed != 0 ? o->hash.seed : 1;
	topo_link_defaults(host_l);
	host_l->rate_bps = o->host_rate_bps != 0 ? o->host_rate_bps : TOPO_DEF_RATE_BPS;
	if (o->buffer_bytes != 0)
		host_l->buffer_bytes = o->buffer_bytes;
	if (o->ecn.kmax_bytes != 0)
		host_l->ecn = o->ecn;
	*fab_l = *host_l;
	fab_l->rate_bps = o->fabric_rate_bps != 0 ? o->fabric_rate_bps : host_l->rate_bps;
	return t;
}

/* Finalize and validate a generated topology; frees it on failure. */
static struct topo *gen_finish(struct topo *t)
{
	struct ice_cfg_err err;
	int ret = topo_finalize(t, &err);

	if (ret == 0)
		ret = topo_validate(t, &err);
	if (ret < 0) {
		char buf[512];

		ice_err(ICE_SUB_CONFIG, "generated topology '%s': %s", t->name,
			ice_cfg_err_str(&err, buf, sizeof(buf)));
		topo_free(t);
		errno = -ret;
		return NULL;
	}
	return t;
}

static int __attribute__((format(printf, 5, 6)))
add_node_fmt(struct topo *t, enum topo_node_kind kind, uint32_t tier, uint32_t pod, const char *fmt,
	     ...)
{
	char nm[TOPO_NAME_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nm, sizeof(nm), fmt, ap);
	va_end(ap);
	return topo_add_node(t, nm, kind, tier, pod, 0);
}

/* Adds n nodes named <prefix>1..<prefix>n; returns the first one's id, or
 * -1 on failure. */
static int add_nodes(struct topo *t, enum topo_node_kind kind, uint32_t tier, const char *prefix,
		     uint32_t n)
{
	int first = (int)t->nnodes;

	for (uint32_t i = 0; i < n; i++)
		if (add_node_fmt(t, kind, tier, 0, "%s%u", prefix, i + 1) < 0)
			return -1;
	return first;
}

/* Links each of the na nodes from a0 to each of the nb nodes from b0. */
static int link_all(struct topo *t, uint32_t a0, uint32_t na, uint32_t b0, uint32_t nb,
		    const struct topo_link *l)
{
	for (uint32_t a = 0; a < na; a++)
		for (uint32_t b = 0; b < nb; b++)
			if (topo_add_link(t, a0 + a, NULL, b0 + b, NULL, l, 0) < 0)
				return -1;
	return 0;
}

/* A generator's failure after gen_start: frees t. */
static struct topo *gen_fail(struct topo *t)
{
	topo_free(t);
	errno = ENOMEM;
	return NULL;
}

struct topo *topo_gen_leaf_spine(const struct topo_gen_opts *o)
{
	uint32_t nhosts = o->leaves * o->hosts_per_leaf;
	struct topo_link hl, fl;
	struct topo *t;
	int spine0, leaf0, host0;

	if (o->spines == 0 || o->leaves == 0 || o->hosts_per_leaf == 0) {
		errno = EINVAL;
		return NULL;
	}
	t = gen_start(o, "ls", &hl, &fl);
	if (t == NULL)
		return NULL;
	if ((spine0 = add_nodes(t, TOPO_SWITCH, 2, "spine", o->spines)) < 0 ||
	    (leaf0 = add_nodes(t, TOPO_SWITCH, 1, "leaf", o->leaves)) < 0 ||
	    (host0 = add_nodes(t, TOPO_HOST, 0, "h", nhosts)) < 0)
		goto err;
	for (uint32_t h = 0; h < nhosts; h++)
		if (topo_add_link(t, (uint32_t)host0 + h, NULL,
				  (uint32_t)leaf0 + h / o->hosts_per_leaf, NULL, &hl, 0) < 0)
			goto err;
	if (link_all(t, (uint32_t)leaf0, o->leaves, (uint32_t)spine0, o->spines, &fl) < 0)
		goto err;
	return gen_finish(t);
err:
	return gen_fail(t);
}

/* A hash for the aggregation tier that is not a bijection of the ToR's:
 * with the same CRC (any seed) hash % n would pick the same index at both
 * tiers and use only k/2 of the (k/2)^2 paths (hash polarisation). ASICs
 * avoid that with a different hash function per tier; so do we. */
static struct topo_hash_cfg agg_hash(const struct topo_hash_cfg *h)
{
	struct topo_hash_cfg a = *h;

	switch (h->alg) {
	case TOPO_HASH_CRC32:
		a.alg = TOPO_HASH_CRC32C;
		break;
	case TOPO_HASH_CRC32C:
		a.alg = TOPO_HASH_CRC32;
		break;
	case TOPO_HASH_CRC16:
		a.alg = TOPO_HASH_CRC16_ANSI;
		break;
	case TOPO_HASH_CRC16_ANSI:
		a.alg = TOPO_HASH_CRC16;
		break;
	default: /* Toeplitz: another key; XOR stays polarised */
		a.seed = h->seed ^ 0x5bd1e995u;
		break;
	}
	return a;
}

struct topo *topo_gen_fat_tree(const struct topo_gen_opts *o)
{
	struct topo_link hl, fl;
	struct topo *t;
	uint32_t k = o->k, half, core0, agg0, tor0;
	struct topo_hash_cfg ah;
	int host0;

	if (k < 2 || k % 2 != 0 || k > TOPO_FAT_TREE_K_MAX) {
		errno = EINVAL;
		return NULL;
	}
	half = k / 2;
	t = gen_start(o, "ft", &hl, &fl);
	if (t == NULL)
		return NULL;
	ah = agg_hash(&t->hash);
	core0 = t->nnodes;
	if (add_nodes(t, TOPO_SWITCH, 3, "c", half * half) < 0)
		goto err;
	agg0 = t->nnodes;
	for (uint32_t p = 0; p < k; p++)
		for (uint32_t a = 0; a < half; a++) {
			int id = add_node_fmt(t, TOPO_SWITCH, 2, p + 1, "p%ua%u", p + 1, a + 1);

			if (id < 0)
				goto err;
			t->nodes[id].hash = ah;
		}
	tor0 = t->nnodes;
	for (uint32_t p = 0; p < k; p++)
		for (uint32_t e = 0; e < half; e++)
			if (add_node_fmt(t, TOPO_SWITCH, 1, p + 1, "p%ut%u", p + 1, e + 1) < 0)
				goto err;
	host0 = add_nodes(t, TOPO_HOST, 0, "h", k * half * half);
	if (host0 < 0)
		goto err;
	for (uint32_t h = 0; h < k * half * half; h++)
		if (topo_add_link(t, (uint32_t)host0 + h, NULL, tor0 + h / half, NULL, &hl, 0) < 0)
			goto err;
	for (uint32_t p = 0; p < k; p++)
		for (uint32_t e = 0; e < half; e++)
			for (uint32_t a = 0; a < half; a++)
				if (topo_add_link(t, tor0 + p * half + e, NULL, agg0 + p * half + a,
						  NULL, &fl, 0) < 0)
					goto err;
	for (uint32_t p = 0; p < k; p++)
		for (uint32_t a = 0; a < half; a++)
			for (uint32_t c = 0; c < half; c++)
				if (topo_add_link(t, agg0 + p * half + a, NULL,
						  core0 + a * half + c, NULL, &fl, 0) < 0)
					goto err;
	return gen_finish(t);
err:
	return gen_fail(t);
}

struct topo *topo_gen_rail(const struct topo_gen_opts *o)
{
	uint32_t groups = o->leaves, rails = o->rails, hpg = o->hosts_per_rail_group;
	struct topo_link hl, fl;
	struct topo *t;
	uint32_t leaf0;
	int spine0, host0;

	if (o->spines == 0 || groups == 0 || rails == 0 || hpg == 0 || rails > 16) {
		errno = EINVAL;
		return NULL;
	}
	t = gen_start(o, "rail", &hl, &fl);
	if (t == NULL)
		return NULL;
	spine0 = add_nodes(t, TOPO_SWITCH, 2, "spine", o->spines);
	if (spine0 < 0)
		goto err;
	leaf0 = t->nnodes;
	for (uint32_t g = 0; g < groups; g++)
		for (uint32_t r = 0; r < rails; r++)
			if (add_node_fmt(t, TOPO_SWITCH, 1, r + 1, "g%ur%u", g + 1, r + 1) < 0)
				goto err;
	host0 = add_nodes(t, TOPO_HOST, 0, "h", groups * hpg);
	if (host0 < 0)
		goto err;
	for (uint32_t h = 0; h < groups * hpg; h++)
		if (link_all(t, (uint32_t)host0 + h, 1, leaf0 + (h / hpg) * rails, rails, &hl) < 0)
			goto err;
	if (link_all(t, leaf0, groups * rails, (uint32_t)spine0, o->spines, &fl) < 0)
		goto err;
	return gen_finish(t);
err:
	return gen_fail(t);
}
