// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * ice_switch: the tc programs that make a network namespace's ports behave
 * like a switch ASIC's in ICE's emulated fabric.
 *
 * ice_sw_egress (clsact egress, every switch port): models the port's egress
 * queue as a FIFO that drains at the port's link rate. Each packet first
 * drains the FIFO by rate * elapsed, then is tail-dropped when it does not
 * fit in the buffer, else queued; ECN-capable packets are marked CE with
 * RED probability on the depth they found. Optional WRED drop of non-ECT
 * packets and injected random loss. The real rate is enforced by a TBF qdisc
 * behind this program (clsact egress runs before the qdisc); the model only
 * decides marks and drops.
 *
 * ice_sw_ingress (clsact ingress, every switch port, `ecmp: model` only):
 * forwards IPv4 by an LPM table of ECMP groups, choosing the member with the
 * switch's configured hash model (topo_hash_pick, the same code user space
 * uses to predict it), decrements the TTL and sends the packet out with
 * bpf_redirect_neigh.
 *
 * Map layouts are in ice_switch.h; the loader is ice_switch_loader.c.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ice_switch.h"
#include "topo_hash.h"

#define NSEC_PER_SEC  1000000000ull
#define AF_INET	      2 /* <sys/socket.h> is libc's, not uapi */
#define INET_ECN_MASK 3
#define INET_ECN_CE   3
#define IP_MF	      0x2000
#define IP_OFFSET     0x1fff

/* Tests pin the clock here (ns); 0 = bpf_ktime_get_ns(). */
volatile __u64 ice_test_now_ns;

/* Egress profile of each port, by ifindex (written by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ICE_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct ice_port_cfg);
} ice_port_cfg SEC(".maps");

/* Modelled queue and counters of each port, by ifindex. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ICE_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct ice_port_state);
} ice_port_state SEC(".maps");

/* IPv4 destination prefix -> ECMP group id. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, ICE_SW_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ice_lpm4_key);
	__type(value, __u32);
} ice_ecmp_lpm SEC(".maps");

/* ECMP groups by id. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ICE_SW_MAX_GROUPS);
	__type(key, __u32);
	__type(value, struct ice_ecmp_group);
} ice_ecmp_grp SEC(".maps");

/* Packets sent through each member: index group id * 16 + member. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ICE_SW_MAX_GROUPS *ICE_SW_MAX_MEMBERS);
	__type(key, __u32);
	__type(value, __u64);
} ice_ecmp_hits SEC(".maps");

/* The switch's ECMP hash model (one entry). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct topo_hash_cfg);
} ice_sw_hash SEC(".maps");

/* Switch-wide ingress counters, enum ice_sw_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ICE_SW_ST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ice_sw_stats SEC(".maps");

/* The switch's peak-window generation (one entry): ice_sw_peak_reset()
 * bumps it, every port's peak_depth starts again at its next packet. An
 * array, so the update is in place (a hash element would be swapped). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ice_sw_peak SEC(".maps");

static __always_inline void sw_stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ice_sw_stats, &idx);

	if (v)
		*v += 1;
}

/* ECN field of an IPv4/IPv6 packet, or -1 when it is neither. */
static __always_inline int pkt_ecn(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);

		if ((void *)(iph + 1) > end)
			return -1;
		return iph->tos & INET_ECN_MASK;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		__u8 *b = (void *)(eth + 1);

		if ((void *)(b + 2) > end)
			return -1;
		return (b[1] >> 4) & INET_ECN_MASK;
	}
	return -1;
}

/* RED: 1 when a packet finding depth q is to be marked (or WRED-dropped). */
static __always_inline int red_hit(const struct ice_port_cfg *cfg, __u64 q, __u32 rnd)
{
	__u64 p;

	if (cfg->kmax == 0 || q < cfg->kmin)
		return 0;
	if (q >= cfg->kmax)
		return 1;
	if (cfg->kmax <= cfg->kmin)
		return 1;
	p = (__u64)cfg->pmax * (q - cfg->kmin) / (cfg->kmax - cfg->kmin);
	return (rnd % ICE_SW_PPM) < p;
}

/* A hash key with its size in the type, as global functions need. */
struct ice_hash_key {
	__u8 b[TOPO_HASH_KEY_LEN];
};

/*
 * topo_hash_of_key() for one algorithm, as a global function: the verifier
 * checks each once, on its own, with the algorithm constant so the other
 * models are dead code. Inlined into the caller with the algorithm read from
 * a map, the models' data-dependent branches times the caller's paths exceed
 * the 1M-instruction limit (E2BIG); one function over an unknown algorithm
 * does too. Each alone costs the verifier 3k-64k instructions.
 */
#define ICE_SW_HASH_FN(fn, ALG)                                                                    \
	__noinline __attribute__((flatten)) __u32 fn(__u32 seed, const struct ice_hash_key *k)     \
	{                                                                                          \
		struct topo_hash_cfg c = {.alg = ALG, .seed = seed};                               \
                                                                                                   \
		if (k == NULL)                                                                     \
			return 0;                                                                  \
		return topo_hash_of_key(&c, k->b);                                                 \
	}
ICE_SW_HASH_FN(ice_sw_hash_crc32, TOPO_HASH_CRC32)
ICE_SW_HASH_FN(ice_sw_hash_crc32c, TOPO_HASH_CRC32C)
ICE_SW_HASH_FN(ice_sw_hash_crc16, TOPO_HASH_CRC16)
ICE_SW_HASH_FN(ice_sw_hash_crc16_ansi, TOPO_HASH_CRC16_ANSI)
ICE_SW_HASH_FN(ice_sw_hash_xor, TOPO_HASH_XOR)
ICE_SW_HASH_FN(ice_sw_hash_toeplitz, TOPO_HASH_TOEPLITZ)
_Static_assert(TOPO_HASH_ALG_MAX == 6, "a new topo hash model needs its ICE_SW_HASH_FN");

static __always_inline __u32 sw_hash_of_key(const struct topo_hash_cfg *c,
					    const struct ice_hash_key *k)
{
	switch (c->alg) {
	case TOPO_HASH_CRC32:
		return ice_sw_hash_crc32(c->seed, k);
	case TOPO_HASH_CRC32C:
		return ice_sw_hash_crc32c(c->seed, k);
	case TOPO_HASH_CRC16:
		return ice_sw_hash_crc16(c->seed, k);
	case TOPO_HASH_CRC16_ANSI:
		return ice_sw_hash_crc16_ansi(c->seed, k);
	case TOPO_HASH_XOR:
		return ice_sw_hash_xor(c->seed, k);
	case TOPO_HASH_TOEPLITZ:
		return ice_sw_hash_toeplitz(c->seed, k);
	default:
		return 0;
	}
}

/* topo_hash(c, t), with the hash itself in the global function above. */
static __always_inline __u32 sw_hash(const struct topo_hash_cfg *c, const struct topo_5tuple *t)
{
	struct ice_hash_key k;

	topo_hash_key(c, t, k.b);
	return sw_hash_of_key(c, &k);
}

/* The member for hash h: topo_hash_pick()'s h % n, or, when that member's
 * link is down, live member number h % live (see struct ice_ecmp_group).
 * ICE_SW_MAX_MEMBERS when every member is down. */
static __always_inline __u32 sw_member(const struct ice_ecmp_group *g, __u32 h)
{
	__u32 n = g->n, idx, live = 0, k;

	if (n > ICE_SW_MAX_MEMBERS)
		n = ICE_SW_MAX_MEMBERS;
	idx = n > 1 ? h % n : 0;
	/* the verifier loses the bound after the modulo; keep the mask the
	 * compiler would prove redundant */
	asm volatile("" : "+r"(idx));
	idx &= ICE_SW_MAX_MEMBERS - 1;
	if (!(g->m[idx].flags & ICE_MEMBER_F_DOWN))
		return idx;
	for (__u32 i = 0; i < ICE_SW_MAX_MEMBERS; i++)
		if (i < n && !(g->m[i].flags & ICE_MEMBER_F_DOWN))
			live++;
	if (live == 0)
		return ICE_SW_MAX_MEMBERS;
	k = h % live;
	for (__u32 i = 0; i < ICE_SW_MAX_MEMBERS; i++) {
		if (i >= n || (g->m[i].flags & ICE_MEMBER_F_DOWN))
			continue;
		if (k-- == 0)
			return i;
	}
	return ICE_SW_MAX_MEMBERS;
}

enum { V_PASS, V_MARK, V_DROP };

SEC("tc")
int ice_sw_egress(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	struct ice_port_state *st;
	struct ice_port_cfg *cfg;
	__u32 len = skb->len, rnd = 0, zero = 0, gen, *genp;
	int ecn, lost = 0, verdict = V_PASS;
	__u64 now, q;

	cfg = bpf_map_lookup_elem(&ice_port_cfg, &ifindex);
	if (cfg == NULL)
		return TC_ACT_OK;
	st = bpf_map_lookup_elem(&ice_port_state, &ifindex);
	if (st == NULL)
		return TC_ACT_OK;

	/* Helpers cannot be called under the spin lock: draw everything first. */
	ecn = pkt_ecn(skb);
	now = ice_test_now_ns;
	if (now == 0)
		now = bpf_ktime_get_ns();
	if (cfg->loss_ppm && bpf_get_prandom_u32() % ICE_SW_PPM < cfg->loss_ppm)
		lost = 1;
	if (cfg->kmax)
		rnd = bpf_get_prandom_u32();
	genp = bpf_map_lookup_elem(&ice_sw_peak, &zero);
	gen = genp ? *genp : 0;

	bpf_spin_lock(&st->lock);
	q = st->c.depth;
	if (q && now > st->last_ns) {
		__u64 dt = now - st->last_ns, bytes;

		if (dt > NSEC_PER_SEC)
			dt = NSEC_PER_SEC; /* keeps dt * rate within 64 bits */
		bytes = dt * (cfg->rate_bps >> 3) + st->drain_rem;
		st->drain_rem = bytes % NSEC_PER_SEC;
		bytes /= NSEC_PER_SEC;
		st->c.depth_area += ice_sw_drain_area(q, bytes, dt, cfg->rate_bps >> 3);
		if (bytes >= q) {
			q = 0;
			st->drain_rem = 0;
		} else {
			q -= bytes;
		}
	}
	if (now > st->last_ns)
		st->last_ns = now;

	if (lost) {
		st->c.injected_drops++;
		verdict = V_DROP;
	} else if (cfg->buffer && q + len > cfg->buffer) {
		st->c.drops++;
		verdict = V_DROP;
	} else {
		if (red_hit(cfg, q, rnd)) {
			if (ecn == 1 || ecn == 2) {
				st->c.ce_marked++;
				verdict = V_MARK;
			} else if (ecn != INET_ECN_CE && (cfg->flags & ICE_PORT_F_WRED_DROP)) {
				st->c.wred_drops++;
				verdict = V_DROP;
			}
		}
		if (verdict != V_DROP) {
			if (cfg->rate_bps)
				q += len;
			st->c.bytes += len;
			st->c.packets++;
		}
	}
	st->c.depth = q;
	if (st->peak_gen != gen) {
		/* a new peak window (ice_sw_peak_reset) */
		st->peak_gen = gen;
		st->c.peak_depth = q;
	}
	if (q > st->c.peak_depth)
		st->c.peak_depth = q;
	bpf_spin_unlock(&st->lock);

	if (verdict == V_DROP)
		return TC_ACT_SHOT;
	if (verdict == V_MARK)
		bpf_skb_ecn_set_ce(skb);
	return TC_ACT_OK;
}

SEC("tc")
int ice_sw_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct bpf_redir_neigh nh = {.nh_family = AF_INET};
	struct ethhdr *eth = data;
	struct ice_lpm4_key key;
	struct ice_ecmp_group *grp;
	struct iphdr *iph;
	__u32 *gidp, gid, idx, hash = 0, slot, oif, zero = 0;
	__u16 old_ttl, new_ttl;
	__u64 *hits;
	long ret;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    skb->pkt_type != PACKET_HOST) {
		sw_stat_inc(ICE_SW_ST_PASS_OTHER);
		return TC_ACT_OK;
	}
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > end || iph->ihl < 5) {
		sw_stat_inc(ICE_SW_ST_PASS_OTHER);
		return TC_ACT_OK;
	}

	key.prefixlen = 32;
	key.addr = iph->daddr;
	gidp = bpf_map_lookup_elem(&ice_ecmp_lpm, &key);
	if (gidp == NULL) {
		sw_stat_inc(ICE_SW_ST_PASS_MISS);
		return TC_ACT_OK;
	}
	gid = *gidp;
	grp = bpf_map_lookup_elem(&ice_ecmp_grp, &gid);
	if (grp == NULL || grp->n == 0) {
		sw_stat_inc(ICE_SW_ST_PASS_LOCAL);
		return TC_ACT_OK;
	}
	if (iph->ttl <= 1) {
		/* Up the switch's own stack, which drops it and answers ICMP
		 * time exceeded, as a switch does (traceroute-style path
		 * discovery relies on it). */
		sw_stat_inc(ICE_SW_ST_TTL_EXPIRED);
		return TC_ACT_OK;
	}

	/* Fragments and other protocols have no ports: hash 0 (member 0 while
	 * it is up), as for n == 1. */
	if (grp->n > 1 && (iph->protocol == IPPROTO_UDP || iph->protocol == IPPROTO_TCP) &&
	    !(iph->frag_off & bpf_htons(IP_MF | IP_OFFSET))) {
		__u16 *ports = (void *)iph + iph->ihl * 4;
		struct topo_hash_cfg *hc;
		struct topo_5tuple t = {};

		if ((void *)(ports + 2) > end) {
			sw_stat_inc(ICE_SW_ST_PASS_OTHER);
			return TC_ACT_OK;
		}
		hc = bpf_map_lookup_elem(&ice_sw_hash, &zero);
		if (hc == NULL)
			return TC_ACT_OK;
		t.saddr = iph->saddr;
		t.daddr = iph->daddr;
		t.proto = iph->protocol;
		t.sport = ports[0];
		t.dport = ports[1];
		hash = sw_hash(hc, &t);
	}
	idx = sw_member(grp, hash);
	if (idx >= ICE_SW_MAX_MEMBERS) {
		/* every member down: the kernel's routes decide (and drop) */
		sw_stat_inc(ICE_SW_ST_ALL_DOWN);
		return TC_ACT_OK;
	}
	if (idx != (grp->n > 1 ? hash % grp->n : 0))
		sw_stat_inc(ICE_SW_ST_FAILOVER);
	asm volatile("" : "+r"(idx));
	idx &= ICE_SW_MAX_MEMBERS - 1;
	nh.ipv4_nh = grp->m[idx].nh;
	oif = grp->m[idx].ifindex;

	/* TTL shares a 16-bit checksum word with the protocol. */
	old_ttl = *(__u16 *)&iph->ttl;
	iph->ttl--;
	new_ttl = *(__u16 *)&iph->ttl;
	bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), old_ttl, new_ttl,
			    sizeof(__u16));

	slot = gid * ICE_SW_MAX_MEMBERS + idx;
	hits = bpf_map_lookup_elem(&ice_ecmp_hits, &slot);
	if (hits)
		*hits += 1;

	ret = bpf_redirect_neigh(oif, &nh, sizeof(nh), 0);
	sw_stat_inc(ret == TC_ACT_REDIRECT ? ICE_SW_ST_REDIRECT : ICE_SW_ST_REDIRECT_ERR);
	return ret;
}

char LICENSE[] SEC("license") = "GPL";
