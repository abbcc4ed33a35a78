// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * ice_drop: a tc program that drops RoCEv2 packets (UDP destination port 4791)
 * leaving an interface, for loss tests of the transport.
 *
 *   tc qdisc add dev X clsact
 *   tc filter add dev X egress bpf da obj ice_drop.bpf.o sec tc
 *
 * Two modes, chosen in ice_drop_cfg (a one-entry array map, so a test can set
 * it after tc loaded the program: bpftool map update name ice_drop_cfg ...):
 *   drop_ppm != 0   drop each packet with probability drop_ppm / 1e6
 *                   (bpf_get_prandom_u32);
 *   every_n != 0    drop every every_n-th packet (deterministic).
 * When the map was never written, the rodata defaults below apply (1% random).
 * Counters of seen and dropped packets are in ice_drop_stats.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ICE_ROCE_PORT 4791

struct ice_drop_cfg {
	__u32 drop_ppm; /* random drop probability, per million */
	__u32 every_n;	/* or: drop every n-th packet */
	__u32 set;	/* non-zero once user space wrote the entry */
};

/* Defaults until the map is written (const volatile: settable before load). */
const volatile __u32 default_drop_ppm = 10000;
const volatile __u32 default_every_n = 0;

/* The test's settings (one entry). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ice_drop_cfg);
} ice_drop_cfg SEC(".maps");

/* [0] RoCEv2 packets seen, [1] dropped, [2] counter for every_n mode. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} ice_drop_stats SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ice_drop_stats, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("tc")
int ice_drop(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp;
	struct ice_drop_cfg *cfg;
	__u32 zero = 0, ppm = default_drop_ppm, every = default_every_n;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_UDP || ip->ihl != 5)
		return TC_ACT_OK;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ICE_ROCE_PORT))
		return TC_ACT_OK;
	count(0);
	cfg = bpf_map_lookup_elem(&ice_drop_cfg, &zero);
	if (cfg && cfg->set) {
		ppm = cfg->drop_ppm;
		every = cfg->every_n;
	}
	if (every != 0) {
		__u32 idx = 2;
		__u64 *n = bpf_map_lookup_elem(&ice_drop_stats, &idx);

		if (n && __sync_fetch_and_add(n, 1) % every == every - 1)
			goto drop;
		return TC_ACT_OK;
	}
	if (ppm != 0 && bpf_get_prandom_u32() % 1000000 < ppm)
		goto drop;
	return TC_ACT_OK;
drop:
	count(1);
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
