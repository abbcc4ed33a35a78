// SPDX-License-Identifier: Apache-2.0
/*
 * topo.c: building blocks of a topology (nodes, links, ports), the address
 * and ASN plans applied at finalize, lookups, names and validation.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ice_redis.h"
#include "topo_internal.h"

static const char *const hash_alg_names[TOPO_HASH_ALG_MAX] = {
	[TOPO_HASH_CRC32] = "crc32", [TOPO_HASH_CRC32C] = "crc32c",
	[TOPO_HASH_CRC16] = "crc16", [TOPO_HASH_CRC16_ANSI] = "crc16-ansi",
	[TOPO_HASH_XOR] = "xor",     [TOPO_HASH_TOEPLITZ] = "toeplitz",
};

const char *topo_hash_alg_name(enum topo_hash_alg a)
{
	return (unsigned)a < TOPO_HASH_ALG_MAX ? hash_alg_names[a] : "?";
}

int topo_hash_alg_parse(const char *s)
{
	for (int i = 0; i < TOPO_HASH_ALG_MAX; i++)
		if (s != NULL && strcmp(s, hash_alg_names[i]) == 0)
			return i;
	return -1;
}

static const struct {
	const char *name;
	uint32_t bit;
} hash_fields[] = {
	{"src_ip", TOPO_HF_SRC_IP},	{"dst_ip", TOPO_HF_DST_IP},	{"proto", TOPO_HF_PROTO},
	{"src_port", TOPO_HF_SRC_PORT}, {"dst_port", TOPO_HF_DST_PORT},
};

int topo_hash_field_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(hash_fields) / sizeof(hash_fields[0]); i++)
		if (strcmp(s, hash_fields[i].name) == 0)
			return (int)hash_fields[i].bit;
	return -1;
}

const char *topo_hash_field_name(uint32_t bit)
{
	for (size_t i = 0; i < sizeof(hash_fields) / sizeof(hash_fields[0]); i++)
		if (hash_fields[i].bit == bit)
			return hash_fields[i].name;
	return NULL;
}

/* ---- building ------------------------------------------------------------- */

void topo_link_defaults(struct topo_link *l)
{
	memset(l, 0, sizeof(*l));
	l->rate_bps = TOPO_DEF_RATE_BPS;
	l->buffer_bytes = TOPO_DEF_BUFFER;
	l->ecn.kmin_bytes = TOPO_DEF_KMIN;
	l->ecn.kmax_bytes = TOPO_DEF_KMAX;
	l->ecn.pmax = TOPO_DEF_PMAX;
}

struct topo *topo_alloc(const char *name)
{
	struct topo *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name != NULL ? name : "");
	t->mtu = TOPO_DEF_MTU;
	t->hash.alg = TOPO_HASH_CRC32;
	t->hash.seed = TOPO_DEF_HASH_SEED;
	t->hash.fields = TOPO_HF_5TUPLE;
	t->kernel_hash_seed = 1;
	return t;
}

void topo_free(struct topo *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; i < t->nnodes; i++)
		free(t->nodes[i].ports);
	free(t->nodes);
	free(t->ports);
	free(t->links);
	free(t);
}

/* Grow *arr (of elem-sized items, capacity 16 then powers of two) so that
 * index n fits; 0 or -ENOMEM. */
static int grow(void **arr, uint32_t n, size_t elem)
{
	size_t cap;
	void *p;

	if (n == 0)
		cap = 16;
	else if (n >= 16 && (n & (n - 1)) == 0)
		cap = 2 * (size_t)n;
	else
		return 0;
	p = realloc(*arr, cap * elem);
	if (p == NULL)
		return -ENOMEM;
	*arr = p;
	return 0;
}

int topo_add_node(struct topo *t, const char *name, enum topo_node_kind kind, uint32_t tier,
		  uint32_t pod, int line)
{
	struct topo_node *n;

	if (grow((void **)&t->nodes, t->nnodes, sizeof(*t->nodes)) < 0)
		return -ENOMEM;
	n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof(*n));
	n->id = t->nnodes;
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->kind = kind;
	n->tier = kind == TOPO_HOST ? 0 : tier;
	n->pod = pod;
	n->line = line;
	if (kind == TOPO_SWITCH)
		n->hash = t->hash;
	return (int)t->nnodes++;
}

static void port_init(struct topo *t, uint32_t id, uint32_t node, uint32_t link, uint32_t peer,
		      const char *ifname)
{
	struct topo_port *p = &t->ports[id];

	memset(p, 0, sizeof(*p));
	p->id = id;
	p->node = node;
	p->link = link;
	p->peer = peer;
	if (ifname != NULL)
		snprintf(p->ifname, sizeof(p->ifname), "%s", ifname);
}

int topo_add_link(struct topo *t, uint32_t na, const char *ifa, uint32_t nb, const char *ifb,
		  const struct topo_link *tmpl, int line)
{
	struct topo_link *l;
	uint32_t pa = t->nports, pb = t->nports + 1;

	if (na >= t->nnodes || nb >= t->nnodes)
		return -EINVAL;
	if (t->nodes[na].tier > t->nodes[nb].tier) {
		uint32_t tn = na;
		const char *ti = ifa;

		na = nb;
		nb = tn;
		ifa = ifb;
		ifb = ti;
	}
	if (grow((void **)&t->links, t->nlinks, sizeof(*t->links)) < 0)
		return -ENOMEM;
	/* ports grow two at a time: keep an even count and make room for both */
	if (grow((void **)&t->ports, t->nports, sizeof(*t->ports)) < 0 ||
	    grow((void **)&t->ports, t->nports + 1, sizeof(*t->ports)) < 0)
		return -ENOMEM;
	l = &t->links[t->nlinks];
	*l = *tmpl;
	l->id = t->nlinks;
	l->a = pa;
	l->b = pb;
	l->line = line;
	port_init(t, pa, na, l->id, pb, ifa);
	port_init(t, pb, nb, l->id, pa, ifb);
	t->nports += 2;
	return (int)t->nlinks++;
}

static bool ifname_used(const struct topo *t, const struct topo_node *n, const char *name)
{
	for (uint32_t i = 0; i < n->nports; i++)
		if (strcmp(t->ports[n->ports[i]].ifname, name) == 0)
			return true;
	return false;
}

static void default_ifname(struct topo *t, struct topo_port *p)
{
	const struct topo_node *n = &t->nodes[p->node];
	const struct topo_node *peer = &t->nodes[t->ports[p->peer].node];
	char name[sizeof(p->ifname)];

	if (n->kind == TOPO_HOST) {
		for (uint32_t k = 0;; k++) {
			snprintf(name, sizeof(name), "eth%u", k);
			if (!ifname_used(t, n, name))
				break;
		}
	} else if (strlen(peer->name) < sizeof(name) && !ifname_used(t, n, peer->name)) {
		snprintf(name, sizeof(name), "%s", peer->name);
	} else {
		snprintf(name, sizeof(name), "p%u", p->id);
	}
	memcpy(p->ifname, name, sizeof(name));
}

static struct in_addr ip4(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	struct in_addr x = {.s_addr = htonl(a << 24 | b << 16 | c << 8 | d)};

	return x;
}

static void __attribute__((format(printf, 5, 6)))
topo_errf(struct ice_cfg_err *err, const struct topo *t, int line, const char *key, const char *fmt,
	  ...)
{
	va_list ap;

	if (err == NULL)
		return;
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", t->file);
	err->line = line;
	snprintf(err->key, sizeof(err->key), "%s", key != NULL ? key : "");
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

/* The /31 or /30 partner of a host address. */
static struct in_addr subnet_peer(struct in_addr a, uint8_t plen)
{
	uint32_t h = ntohl(a.s_addr), net;
	struct in_addr r;

	if (plen == 30) {
		net = h & ~3u;
		r.s_addr = htonl(h == net + 1 ? net + 2 : net + 1);
	} else {
		r.s_addr = htonl(h ^ 1u);
	}
	return r;
}

/*
 * Address plans (README.md). Small fabrics keep the original plan: host
 * /31s from 10.<leaf ordinal + 1>.0.0/16, switch-to-switch /31s from
 * 10.254.0.0/16. A fabric beyond it (more than 253 switches with hosts or
 * 32768 NICs on one, or more than 32768 switch-to-switch links) gets the
 * wide plan for that kind of link instead: host /31s from 10.0.0.0 up, each
 * switch with hosts a block of the next power of two >= 2 x its most NICs,
 * in switch order, below 10.254.0.0; switch-to-switch /31s from
 * 100.64.0.0/10 (2^21 links). 10.254/16 and 10.255/16 (loopbacks) are never
 * used by the wide host plan.
 */
#define WIDE_HOST_BASE (10u << 24)
#define WIDE_HOST_END  (10u << 24 | 254u << 16)
#define WIDE_SS_BASE   (100u << 24 | 64u << 16)
#define WIDE_SS_LINKS  (1u << 21)

static struct in_addr ip4h(uint32_t a)
{
	struct in_addr x = {.s_addr = htonl(a)};

	return x;
}

static int assign_addresses(struct topo *t, struct ice_cfg_err *err)
{
	uint32_t *leaf_ord = NULL, *leaf_cnt = NULL, nleaf = 0, nss = 0, maxper = 0, block = 2;
	bool wide_hosts, wide_ss;
	int ret = -ENOMEM;

	leaf_ord = calloc(t->nnodes, sizeof(*leaf_ord));
	leaf_cnt = calloc(t->nnodes, sizeof(*leaf_cnt));
	if (leaf_ord == NULL || leaf_cnt == NULL)
		goto out;
	/* Ordinal of every switch that has hosts, in node id order. */
	for (uint32_t i = 0; i < t->nnodes; i++)
		leaf_ord[i] = UINT32_MAX;
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];

		if (t->nodes[t->ports[l->a].node].kind == TOPO_HOST) {
			leaf_ord[t->ports[l->b].node] = 0;
			if (++leaf_cnt[t->ports[l->b].node] > maxper)
				maxper = leaf_cnt[t->ports[l->b].node];
		} else {
			nss++;
		}
	}
	for (uint32_t i = 0; i < t->nnodes; i++) {
		leaf_cnt[i] = 0;
		if (leaf_ord[i] != UINT32_MAX)
			leaf_ord[i] = nleaf++;
	}
	wide_hosts = nleaf > 253 || maxper > 32768;
	wide_ss = nss > 32768;
	while (block < 2 * (uint64_t)maxper)
		block *= 2;
	nss = 0;
	ret = -ERANGE;
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];
		struct topo_port *pa = &t->ports[l->a], *pb = &t->ports[l->b];

		if (t->nodes[pa->node].kind == TOPO_HOST) {
			uint32_t lo = leaf_ord[pb->node], m = leaf_cnt[pb->node]++;
			uint64_t a = WIDE_HOST_BASE + (uint64_t)lo * block + 2 * (uint64_t)m;

			if (pa->addr.s_addr != 0) {
				if (pa->plen == 0)
					pa->plen = 31;
				if (pb->addr.s_addr == 0) {
					pb->addr = subnet_peer(pa->addr, pa->plen);
					pb->plen = pa->plen;
				}
				continue;
			}
			if (wide_hosts && a + 1 >= WIDE_HOST_END) {
				topo_errf(err, t, l->line, "links",
					  "address plan exhausted: host NICs get /31s from "
					  "10.0.0.0-10.253.255.255 (a power-of-two block per "
					  "leaf); give the NICs addresses");
				goto out;
			}
			if (wide_hosts) {
				pb->addr = ip4h((uint32_t)a);
				pa->addr = ip4h((uint32_t)a + 1);
			} else {
				pb->addr = ip4(10, lo + 1, (2 * m) >> 8, (2 * m) & 0xff);
				pa->addr = ip4(10, lo + 1, (2 * m) >> 8, ((2 * m) & 0xff) + 1);
			}
			pa->plen = pb->plen = 31;
		} else {
			uint32_t j = nss++;

			if (pa->addr.s_addr != 0 || pb->addr.s_addr != 0)
				continue;
			if (j >= WIDE_SS_LINKS) {
				topo_errf(err, t, l->line, "links",
					  "address plan exhausted: at most %u switch-to-switch "
					  "links (/31s from 100.64.0.0/10)",
					  WIDE_SS_LINKS);
				goto out;
			}
			if (wide_ss) {
				pa->addr = ip4h(WIDE_SS_BASE + 2 * j);
				pb->addr = ip4h(WIDE_SS_BASE + 2 * j + 1);
			} else {
				pa->addr = ip4(10, 254, (2 * j) >> 8, (2 * j) & 0xff);
				pb->addr = ip4(10, 254, (2 * j) >> 8, ((2 * j) & 0xff) + 1);
			}
			pa->plen = pb->plen = 31;
		}
	}
	ret = 0;
out:
	free(leaf_ord);
	free(leaf_cnt);
	return ret;
}

/* AS numbers (RFC 7938): the top tier shares one, a 3-tier fabric's
 * aggregation switches one per pod, every other switch its own. From
 * TOPO_ASN2_BASE (2-byte private, RFC 6996) while the fabric's fit below
 * TOPO_ASN2_MAX, else the whole fabric from TOPO_ASN4_BASE (4-byte private,
 * asplain), so one fabric never mixes the two. */
static int assign_loopbacks_asns(struct topo *t, struct ice_cfg_err *err)
{
	uint32_t maxtier = 0, maxpod = 0, sw = 0, uniq = 0, nuniq = 0;
	uint64_t base;

	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (n->kind != TOPO_SWITCH)
			continue;
		if (n->tier > maxtier)
			maxtier = n->tier;
		if (n->tier == 2 && n->pod > maxpod)
			maxpod = n->pod;
	}
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		nuniq += n->kind == TOPO_SWITCH && n->tier != maxtier &&
			 !(maxtier == 3 && n->tier == 2 && n->pod > 0);
	}
	if (maxtier != 3)
		maxpod = 0;
	base = (uint64_t)TOPO_ASN2_BASE + maxpod + nuniq <= TOPO_ASN2_MAX ? TOPO_ASN2_BASE
									  : TOPO_ASN4_BASE;
	if (base + maxpod + nuniq > TOPO_ASN4_MAX) {
		topo_errf(err, t, 0, "switches",
			  "AS numbers exhausted: %u pods and %u switches with their own AS need "
			  "%" PRIu64 " numbers, the 4-byte private range (RFC 6996) has %u; "
			  "expected fewer switches, or asn: set per switch",
			  maxpod, nuniq, (uint64_t)maxpod + nuniq + 1,
			  TOPO_ASN4_MAX - TOPO_ASN4_BASE + 1);
		return -ERANGE;
	}
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];

		if (n->kind != TOPO_SWITCH)
			continue;
		sw++;
		if (n->loopback.s_addr == 0)
			n->loopback = ip4(10, 255, sw >> 8, sw & 0xff);
		if (n->tier != maxtier && !(maxtier == 3 && n->tier == 2 && n->pod > 0))
			uniq++;
		if (n->asn != 0)
			continue;
		if (n->tier == maxtier)
			n->asn = (uint32_t)base;
		else if (maxtier == 3 && n->tier == 2 && n->pod > 0)
			n->asn = (uint32_t)(base + n->pod);
		else
			n->asn = (uint32_t)(base + maxpod + uniq);
	}
	return 0;
}

int topo_finalize(struct topo *t, struct ice_cfg_err *err)
{
	uint32_t *cnt;

	cnt = calloc(t->nnodes ? t->nnodes : 1, sizeof(*cnt));
	if (cnt == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nports; i++)
		cnt[t->ports[i].node]++;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];

		free(n->ports);
		n->ports = calloc(cnt[i] ? cnt[i] : 1, sizeof(*n->ports));
		if (n->ports == NULL) {
			free(cnt);
			return -ENOMEM;
		}
		n->nports = 0;
	}
	free(cnt);
	for (uint32_t i = 0; i < t->nports; i++) {
		struct topo_node *n = &t->nodes[t->ports[i].node];

		n->ports[n->nports++] = i;
	}
	/* Default names only after every explicit one is in place. */
	for (uint32_t i = 0; i < t->nports; i++)
		if (t->ports[i].ifname[0] == '\0')
			default_ifname(t, &t->ports[i]);
	if (assign_loopbacks_asns(t, err) < 0)
		return -ERANGE;
	return assign_addresses(t, err);
}

/* ---- lookups -------------------------------------------------------------- */

const struct topo_node *topo_node_by_name(const struct topo *t, const char *name)
{
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (strcmp(t->nodes[i].name, name) == 0)
			return &t->nodes[i];
	return NULL;
}

const struct topo_port *topo_port_by_addr(const struct topo *t, struct in_addr a)
{
	for (uint32_t i = 0; i < t->nports; i++)
		if (t->ports[i].addr.s_addr == a.s_addr &&
		    t->nodes[t->ports[i].node].kind == TOPO_HOST)
			return &t->ports[i];
	return NULL;
}

uint32_t topo_nic_count(const struct topo *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nports; i++)
		n += t->nodes[t->ports[i].node].kind == TOPO_HOST;
	return n;
}

const struct topo_port *topo_nic(const struct topo *t, uint32_t idx)
{
	for (uint32_t i = 0; i < t->nports; i++) {
		if (t->nodes[t->ports[i].node].kind != TOPO_HOST)
			continue;
		if (idx-- == 0)
			return &t->ports[i];
	}
	return NULL;
}

const char *topo_link_name(const struct topo *t, uint32_t link, char *buf, size_t len)
{
	const struct topo_link *l;
	const struct topo_port *pa, *pb;
	bool parallel = false;

	if (link >= t->nlinks) {
		snprintf(buf, len, "?");
		return buf;
	}
	l = &t->links[link];
	pa = &t->ports[l->a];
	pb = &t->ports[l->b];
	for (uint32_t i = 0; i < t->nlinks && !parallel; i++)
		parallel = i != link && t->ports[t->links[i].a].node == pa->node &&
			   t->ports[t->links[i].b].node == pb->node;
	if (parallel)
		snprintf(buf, len, "%s.%s:%s.%s", t->nodes[pa->node].name, pa->ifname,
			 t->nodes[pb->node].name, pb->ifname);
	else
		snprintf(buf, len, "%s:%s", t->nodes[pa->node].name, t->nodes[pb->node].name);
	return buf;
}

/* ---- validation ----------------------------------------------------------- */

static bool name_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return false;
	return true;
}

/* "switches[2]" / "hosts[0]" for node n, the idx-th of its kind. */
static void node_key_at(const struct topo_node *n, uint32_t idx, const char *field, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s[%u]%s%s", n->kind == TOPO_HOST ? "hosts" : "switches", idx,
		 field != NULL ? "." : "", field != NULL ? field : "");
}

static void node_key(const struct topo *t, uint32_t id, const char *field, char *buf, size_t len)
{
	const struct topo_node *n = &t->nodes[id];
	uint32_t idx = 0;

	for (uint32_t i = 0; i < id; i++)
		idx += t->nodes[i].kind == n->kind;
	node_key_at(n, idx, field, buf, len);
}

static int name_ref_cmp(const void *a, const void *b, void *arg)
{
	const struct topo *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(t->nodes[x].name, t->nodes[y].name);

	if (c != 0)
		return c;
	return x < y ? -1 : x > y;
}

/* first[i]: the lowest node id with node i's name (i itself when unique
 * so far); sorting keeps validation linear-logarithmic on 10^5 nodes. */
static uint32_t *first_of_name(const struct topo *t)
{
	uint32_t *ord = malloc(sizeof(uint32_t) * (t->nnodes + 1));
	uint32_t *first = malloc(sizeof(uint32_t) * (t->nnodes + 1));

	if (ord == NULL || first == NULL) {
		free(ord);
		free(first);
		return NULL;
	}
	for (uint32_t i = 0; i < t->nnodes; i++)
		ord[i] = i;
	qsort_r(ord, t->nnodes, sizeof(uint32_t), name_ref_cmp, (void *)t);
	for (uint32_t i = 0; i < t->nnodes; i++)
		first[ord[i]] =
			i > 0 && strcmp(t->nodes[ord[i - 1]].name, t->nodes[ord[i]].name) == 0
				? first[ord[i - 1]]
				: ord[i];
	free(ord);
	return first;
}

struct addr_ref {
	uint32_t addr;
	uint32_t port; /* port id, or UINT32_MAX - node id for loopbacks */
};

static int addr_cmp(const void *a, const void *b)
{
	const struct addr_ref *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

static void addr_owner(const struct topo *t, uint32_t ref, char *buf, size_t len, int *line,
		       char *key, size_t klen)
{
	if (ref >= t->nports) {
		uint32_t node = UINT32_MAX - ref;

		snprintf(buf, len, "loopback of %s", t->nodes[node].name);
		*line = t->nodes[node].line;
		node_key(t, node, "loopback", key, klen);
	} else {
		const struct topo_port *p = &t->ports[ref];
		const struct topo_link *l = &t->links[p->link];

		snprintf(buf, len, "%s:%s", t->nodes[p->node].name, p->ifname);
		*line = l->line;
		snprintf(key, klen, "links[%u].%s", l->id, l->a == ref ? "a" : "b");
	}
}

static int check_addresses(const struct topo *t, struct ice_cfg_err *err)
{
	struct addr_ref *r = calloc(t->nports + t->nnodes + 1, sizeof(*r));
	uint32_t n = 0;
	int ret = 0;

	if (r == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nports; i++)
		r[n++] = (struct addr_ref){ntohl(t->ports[i].addr.s_addr), i};
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].kind == TOPO_SWITCH)
			r[n++] = (struct addr_ref){ntohl(t->nodes[i].loopback.s_addr),
						   UINT32_MAX - i};
	qsort(r, n, sizeof(*r), addr_cmp);
	for (uint32_t i = 1; i < n; i++) {
		char o1[80], o2[80], k1[64], k2[64], a[INET_ADDRSTRLEN];
		struct in_addr ia = {.s_addr = htonl(r[i].addr)};
		int l1, l2;

		if (r[i].addr != r[i - 1].addr)
			continue;
		addr_owner(t, r[i - 1].port, o1, sizeof(o1), &l1, k1, sizeof(k1));
		addr_owner(t, r[i].port, o2, sizeof(o2), &l2, k2, sizeof(k2));
		inet_ntop(AF_INET, &ia, a, sizeof(a));
		topo_errf(err, t, l2 > l1 ? l2 : l1, l2 > l1 ? k2 : k1,
			  "duplicate address %s: %s and %s; expected every address to be unique", a,
			  o1, o2);
		ret = -EINVAL;
		break;
	}
	free(r);
	return ret;
}

/* Every host NIC's switch reachable from the first host NIC's switch. */
static int check_connected(const struct topo *t, struct ice_cfg_err *err)
{
	uint32_t *dist = malloc(sizeof(*dist) * (t->nnodes + 1));
	uint32_t *queue = malloc(sizeof(*queue) * (t->nnodes + 1));
	const struct topo_port *first = topo_nic(t, 0);
	int ret = 0;

	if (dist == NULL || queue == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	if (first == NULL)
		goto out;
	topo_route_dist(t, topo_port_peer_node(t, first->id), dist, queue);
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *h = &t->nodes[i];
		char key[64];

		if (h->kind != TOPO_HOST)
			continue;
		for (uint32_t j = 0; j < h->nports; j++) {
			uint32_t sw = topo_port_peer_node(t, h->ports[j]);

			if (dist[sw] != UINT32_MAX)
				continue;
			node_key(t, i, NULL, key, sizeof(key));
			topo_errf(err, t, h->line, key,
				  "host %s (NIC %s on %s) cannot reach host %s: no path "
				  "through the switches; expected a connected fabric",
				  h->name, t->ports[h->ports[j]].ifname, t->nodes[sw].name,
				  t->nodes[first->node].name);
			ret = -EINVAL;
			goto out;
		}
	}
out:
	free(dist);
	free(queue);
	return ret;
}

static int validate_nodes(const struct topo *t, const uint32_t *first, struct ice_cfg_err *err)
{
	uint32_t nkind[2] = {0, 0};
	char key[96];

	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		size_t nslen = 3 + strlen(t->name) + 1 + strlen(n->name);
		uint32_t kidx = nkind[n->kind == TOPO_HOST]++;

		node_key_at(n, kidx, "name", key, sizeof(key));
		if (!name_ok(n->name)) {
			topo_errf(err, t, n->line, key,
				  "node name '%s': expected letters, digits, '-' or '_'", n->name);
			return -EINVAL;
		}
		if (nslen >= 32) {
			topo_errf(err, t, n->line, key,
				  "namespace name 'ice%s-%s' has %zu characters; expected fewer "
				  "than 32: shorten the fabric or the node name",
				  t->name, n->name, nslen);
			return -EINVAL;
		}
		if (first[i] != i) {
			topo_errf(err, t, n->line, key,
				  "duplicate name '%s' (first defined at line %d); expected "
				  "unique node names",
				  n->name, t->nodes[first[i]].line);
			return -EINVAL;
		}
		if (n->kind == TOPO_SWITCH && (n->tier < 1 || n->tier > TOPO_MAX_TIER)) {
			node_key_at(n, kidx, "tier", key, sizeof(key));
			topo_errf(err, t, n->line, key, "tier %u: expected 1, 2 or 3", n->tier);
			return -EINVAL;
		}
		if (n->kind == TOPO_SWITCH &&
		    (n->hash.alg >= TOPO_HASH_ALG_MAX || (n->hash.fields & ~TOPO_HF_5TUPLE) != 0)) {
			node_key_at(n, kidx, "hash", key, sizeof(key));
			topo_errf(err, t, n->line, key,
				  "hash algorithm %u / fields 0x%x: expected a known algorithm "
				  "and fields within 0x37",
				  n->hash.alg, n->hash.fields);
			return -EINVAL;
		}
		if (n->nports == 0) {
			topo_errf(err, t, n->line, key,
				  "%s '%s' has no links; expected at least one",
				  n->kind == TOPO_HOST ? "host" : "switch", n->name);
			return -EINVAL;
		}
		for (uint32_t a = 0; a < n->nports; a++) {
			const struct topo_port *p = &t->ports[n->ports[a]];
			const struct topo_link *l = &t->links[p->link];

			snprintf(key, sizeof(key), "links[%u].%s", l->id,
				 l->a == p->id ? "a" : "b");
			if (p->ifname[0] == '\0' || strlen(p->ifname) >= 16) {
				topo_errf(err, t, l->line, key,
					  "interface name '%s': expected 1 to 15 characters",
					  p->ifname);
				return -EINVAL;
			}
			for (uint32_t b = 0; b < a; b++) {
				if (strcmp(t->ports[n->ports[b]].ifname, p->ifname) != 0)
					continue;
				topo_errf(err, t, l->line, key,
					  "duplicate interface '%s' on %s; expected unique "
					  "interface names per node",
					  p->ifname, n->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int asn_ref_cmp(const void *a, const void *b, void *arg)
{
	const struct topo *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (t->nodes[x].asn != t->nodes[y].asn)
		return t->nodes[x].asn < t->nodes[y].asn ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* May switches x and y share an AS (RFC 7938)? The top tier's, or one
 * pod's aggregation switches in 3 tiers; any other two would drop each
 * other's routes (their own AS in the path). */
static bool asn_shareable(const struct topo_node *x, const struct topo_node *y, uint32_t maxtier)
{
	return x->tier == y->tier && (x->tier == maxtier || (maxtier == 3 && x->tier == 2 &&
							     x->pod > 0 && x->pod == y->pod));
}

/* AS numbers: none reserved (0, AS_TRANS 23456, 65535, 4294967295), none
 * shared where eBGP would lose routes. */
static int check_asns(const struct topo *t, struct ice_cfg_err *err)
{
	uint32_t *ord = calloc(t->nnodes + 1, sizeof(*ord)), n = 0, maxtier = 0;
	char key[96];
	int ret = 0;

	if (ord == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *x = &t->nodes[i];

		if (x->kind != TOPO_SWITCH)
			continue;
		ord[n++] = i;
		if (x->tier > maxtier)
			maxtier = x->tier;
		if (x->asn == 0 || x->asn == TOPO_ASN_TRANS || x->asn == 65535 ||
		    x->asn == UINT32_MAX) {
			node_key(t, i, "asn", key, sizeof(key));
			topo_errf(err, t, x->line, key,
				  "AS %u of %s is reserved (0, 23456 AS_TRANS, 65535, 4294967295); "
				  "expected a private AS: 64512-65534 or 4200000000-4294967294",
				  x->asn, x->name);
			ret = -EINVAL;
			goto out;
		}
	}
	qsort_r(ord, n, sizeof(*ord), asn_ref_cmp, (void *)t);
	for (uint32_t i = 1, first = 0; i < n; i++) {
		const struct topo_node *a = &t->nodes[ord[first]], *b = &t->nodes[ord[i]];

		if (a->asn != b->asn) {
			first = i;
			continue;
		}
		if (asn_shareable(a, b, maxtier))
			continue;
		node_key(t, ord[i], "asn", key, sizeof(key));
		topo_errf(err, t, b->line, key,
			  "AS %u of %s (tier %u) is also %s's (tier %u, line %d); expected a "
			  "unique AS per switch, shared only by the top tier or by one pod's "
			  "aggregation switches (RFC 7938; an unset asn is assigned from %u, or "
			  "from %u past %u switches)",
			  b->asn, b->name, b->tier, a->name, a->tier, a->line, TOPO_ASN2_BASE,
			  TOPO_ASN4_BASE, TOPO_ASN2_MAX - TOPO_ASN2_BASE + 1);
		ret = -EINVAL;
		break;
	}
out:
	free(ord);
	return ret;
}

int topo_validate(const struct topo *t, struct ice_cfg_err *err)
{
	uint32_t *first;
	char key[96];
	int ret;

	if (!name_ok(t->name)) {
		topo_errf(err, t, 0, "name",
			  "fabric name '%s': expected letters, digits, '-' or '_'", t->name);
		return -EINVAL;
	}
	first = first_of_name(t);
	if (first == NULL)
		return -ENOMEM;
	ret = validate_nodes(t, first, err);
	free(first);
	if (ret == 0)
		ret = check_asns(t, err);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];
		const struct topo_node *a = &t->nodes[t->ports[l->a].node];
		const struct topo_node *b = &t->nodes[t->ports[l->b].node];

		snprintf(key, sizeof(key), "links[%u]", i);
		if (b->tier != a->tier + 1) {
			topo_errf(err, t, l->line, key,
				  "%s (tier %u) and %s (tier %u) are not in adjacent tiers; "
				  "expected links between tiers n and n+1 (hosts are tier 0)",
				  a->name, a->tier, b->name, b->tier);
			return -EINVAL;
		}
		snprintf(key, sizeof(key), "links[%u].rate", i);
		if (l->rate_bps == 0) {
			topo_errf(err, t, l->line, key, "rate 0: expected a positive rate");
			return -EINVAL;
		}
		snprintf(key, sizeof(key), "links[%u].ecn", i);
		if (l->ecn.kmin_bytes > l->ecn.kmax_bytes) {
			topo_errf(err, t, l->line, key, "kmin %u > kmax %u: expected kmin <= kmax",
				  l->ecn.kmin_bytes, l->ecn.kmax_bytes);
			return -EINVAL;
		}
		if (!(l->ecn.pmax >= 0.0 && l->ecn.pmax <= 1.0)) {
			topo_errf(err, t, l->line, key, "pmax %g: expected a number in [0, 1]",
				  l->ecn.pmax);
			return -EINVAL;
		}
		if (l->loss_ppm > 1000000) {
			snprintf(key, sizeof(key), "links[%u].loss", i);
			topo_errf(err, t, l->line, key, "loss %u ppm: expected at most 1e6",
				  l->loss_ppm);
			return -EINVAL;
		}
	}
	if (check_addresses(t, err) < 0)
		return -EINVAL;
	return check_connected(t, err);
}

/* ---- Redis users of a fabric's hosts ------------------------------------------ */

struct topo_acl_addrs {
	char addr[TOPO_ACL_ADDRS][INET_ADDRSTRLEN];
	const char *addrs[TOPO_ACL_ADDRS];
};

int topo_acl_hosts(const struct topo *t, struct topo_acl_hosts *out)
{
	memset(out, 0, sizeof(*out));
	out->users = calloc(t->nnodes + 1, sizeof(*out->users));
	out->addrs = calloc(t->nnodes + 1, sizeof(*out->addrs));
	if (out->users == NULL || out->addrs == NULL) {
		topo_acl_hosts_free(out);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *h = &t->nodes[i];
		struct ice_redis_acl_user *u = &out->users[out->n];
		struct topo_acl_addrs *a = &out->addrs[out->n];

		if (h->kind != TOPO_HOST)
			continue;
		u->host = h->name;
		for (uint32_t p = 0; p < h->nports && u->naddrs < TOPO_ACL_ADDRS; p++) {
			size_t k = u->naddrs++;

			inet_ntop(AF_INET, &t->ports[h->ports[p]].addr, a->addr[k],
				  sizeof(a->addr[k]));
			a->addrs[k] = a->addr[k];
		}
		u->addrs = a->addrs;
		out->n++;
	}
	return 0;
}

void topo_acl_hosts_free(struct topo_acl_hosts *a)
{
	free(a->users);
	free(a->addrs);
	memset(a, 0, sizeof(*a));
}
