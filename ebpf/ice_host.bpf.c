// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * ice_host: the tc programs on a host NIC that watch its RoCEv2 traffic.
 *
 * ice_host_ingress / ice_host_egress parse Ethernet (one optional 802.1Q or
 * 802.1ad tag) / IPv4 or IPv6 / UDP to roce_port / BTH (+ RETH, AETH, ImmDt,
 * IETH, DETH by opcode) and count each packet into the per-CPU LRU hash
 * ice_host_flows under its per-direction key (ice_host.h). A key seen for
 * the first time is announced on the ring buffer ice_host_events. Every
 * packet ends in one parse-outcome counter of ice_host_stats.
 *
 * Observe only: the programs never write the packet, and return
 * TC_ACT_UNSPEC (-1), which is TCX_NEXT for a TCX link: the packet goes on
 * unchanged to the next program of the chain (TCX, then any clsact filters),
 * and passes when none is left. TC_ACT_OK (0 = TCX_PASS) would also pass it
 * but would end the chain, hiding the packet from programs attached after us.
 *
 * A packet is counted into a flow only when all of it is present: its bytes
 * cover the IP length it claims, and that length holds the headers its
 * opcode needs plus pad and ICRC. Otherwise it is TRUNCATED and nothing of
 * it is counted. (On a real NIC the BTH may sit in the skb's paged part; it
 * is then read with bpf_skb_load_bytes.)
 *
 * PSN: only requests (SEND, WRITE, READ request) move a key's last_psn and
 * are checked for going backwards; READ responses count as data but carry
 * the requester's PSNs, ACKs and CNPs carry none worth comparing. Times are
 * bpf_ktime_get_coarse_ns() (tick resolution; ~20 ns cheaper per packet than
 * bpf_ktime_get_ns() here). Sampling (sample > 1) keeps the 1st of every
 * `sample` RoCE packets per CPU, whatever their opcode; the agent scales.
 *
 * Known limits: a UDP GSO super-packet on egress counts as one packet;
 * IPv4 fragments and IPv6 extension headers are NOT_ROCE.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/stddef.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ice_host.h"
#include "ice_roce.h"

#define EEXIST 17 /* <errno.h> is libc's, not uapi */

#define ETH_P_8021Q_  0x8100
#define ETH_P_8021AD_ 0x88a8
#define IP_MF	      0x2000
#define IP_OFFSET     0x1fff
#define INET_ECN_MASK 3
#define INET_ECN_CE   3

#define AETH_CLASS_MASK 0x60 /* bits 6..5 of the syndrome; bit 7 is reserved */

/* Tunables, set by the loader between open and load. */
const volatile __u16 roce_port = ICE_ROCE_UDP_PORT; /* UDP destination port */
const volatile __u32 sample = 0; /* count 1 in `sample` RoCE packets; 0, 1 = all */

/* Per-direction flow counters (struct ice_flow_key -> struct ice_flow_stats). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, ICE_HOST_MAX_FLOWS);
	__type(key, struct ice_flow_key);
	__type(value, struct ice_flow_stats);
} ice_host_flows SEC(".maps");

/* New-flow announcements (struct ice_flow_event). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ICE_HOST_RINGBUF);
} ice_host_events SEC(".maps");

/* Parse outcomes, enum ice_host_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ICE_HS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ice_host_stats SEC(".maps");

/* The sampler's per-CPU count of RoCE packets (one slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ice_host_sample_ctr SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ice_host_stats, &idx);

	if (v)
		*v += 1;
}

/* Opcode kinds: what a packet counts as, and its headers after the BTH. */
enum op_kind {
	OK_REQ,	      /* SEND / WRITE / READ request: data, PSN tracked */
	OK_READ_RESP, /* RDMA READ response: data, not PSN tracked (requester's PSNs) */
	OK_ACK,	      /* ACK / atomic ACK: AETH syndrome classified */
	OK_CNP,
	OK_OTHER, /* atomics, unknown: packets and bytes only */
};

/* Kind and extension header length of an opcode. */
static __always_inline int op_classify(__u8 op, __u32 *ext)
{
	__u8 tc = op >> 5, code = op & 0x1f;

	*ext = 0;
	if (op == ICE_ROCE_OP_CNP)
		return OK_CNP;
	if (tc == 3) { /* UD: SEND_ONLY (+IMM), with a DETH */
		if (code == 0x04 || code == 0x05) {
			*ext = ICE_ROCE_DETH_LEN + (code == 0x05 ? ICE_ROCE_IMMDT_LEN : 0);
			return OK_REQ;
		}
		return OK_OTHER;
	}
	if (tc > 1) /* RD, CNP range, manufacturer specific */
		return OK_OTHER;
	switch (code) { /* RC (tc 0) and UC (tc 1) share the codes they have */
	case 0x00:	/* SEND_FIRST */
	case 0x01:	/* SEND_MIDDLE */
	case 0x02:	/* SEND_LAST */
	case 0x04:	/* SEND_ONLY */
	case 0x07:	/* WRITE_MIDDLE */
	case 0x08:	/* WRITE_LAST */
		return OK_REQ;
	case 0x03: /* SEND_LAST_IMM */
	case 0x05: /* SEND_ONLY_IMM */
	case 0x09: /* WRITE_LAST_IMM */
	case 0x16: /* SEND_LAST_INV (IETH) */
	case 0x17: /* SEND_ONLY_INV (IETH) */
		*ext = ICE_ROCE_IMMDT_LEN;
		return OK_REQ;
	case 0x06: /* WRITE_FIRST */
	case 0x0a: /* WRITE_ONLY */
	case 0x0c: /* READ_REQUEST */
		*ext = ICE_ROCE_RETH_LEN;
		return OK_REQ;
	case 0x0b: /* WRITE_ONLY_IMM */
		*ext = ICE_ROCE_RETH_LEN + ICE_ROCE_IMMDT_LEN;
		return OK_REQ;
	case 0x0d: /* READ_RESPONSE_FIRST */
	case 0x0f: /* READ_RESPONSE_LAST */
	case 0x10: /* READ_RESPONSE_ONLY */
		*ext = ICE_ROCE_AETH_LEN;
		return OK_READ_RESP;
	case 0x0e: /* READ_RESPONSE_MIDDLE */
		return OK_READ_RESP;
	case 0x11: /* ACK */
		*ext = ICE_ROCE_AETH_LEN;
		return OK_ACK;
	case 0x12: /* ATOMIC_ACK */
		*ext = ICE_ROCE_AETH_LEN + ICE_ROCE_ATOMIC_ACK_ETH_LEN;
		return OK_ACK;
	case 0x13: /* COMPARE_SWAP */
	case 0x14: /* FETCH_ADD */
		*ext = ICE_ROCE_ATOMIC_ETH_LEN;
		return OK_OTHER;
	default:
		return OK_OTHER;
	}
}

/* The BTH and the first AETH byte, wherever in the skb they are. */
struct roce_hdr {
	__u8 bth[ICE_ROCE_BTH_LEN];
	__u8 syndrome; /* AETH byte 0, when the opcode has one first */
};

static __always_inline int ice_host_count(struct __sk_buff *skb, __u8 dir)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ice_flow_key key = {.dir = dir};
	struct ice_flow_stats *st;
	struct roce_hdr rh;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u32 l3off = sizeof(*eth), l4off, ip_len, ext, need, payload, psn, zero = 0;
	__u16 proto;
	__u8 ecn, op, pad;
	int kind;

	stat_inc(ICE_HS_PKTS);
	if ((void *)(eth + 1) > end) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021Q_) || proto == bpf_htons(ETH_P_8021AD_)) {
		__be16 *vlan = (void *)(eth + 1);

		if ((void *)(vlan + 2) > end) {
			stat_inc(ICE_HS_TRUNCATED);
			return TC_ACT_UNSPEC;
		}
		proto = vlan[1];
		l3off += 4;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + l3off;
		__u32 ihl;

		if ((void *)(ip + 1) > end) {
			stat_inc(ICE_HS_TRUNCATED);
			return TC_ACT_UNSPEC;
		}
		if (ip->version != 4 || ip->ihl < 5) {
			stat_inc(ICE_HS_NOT_IP);
			return TC_ACT_UNSPEC;
		}
		if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))) {
			stat_inc(ICE_HS_NOT_ROCE);
			return TC_ACT_UNSPEC;
		}
		ihl = ip->ihl * 4;
		l4off = l3off + ihl;
		ip_len = bpf_ntohs(ip->tot_len);
		ecn = ip->tos & INET_ECN_MASK;
		if (dir == ICE_DIR_EGRESS) {
			key.local_ip = ip->saddr;
			key.remote_ip = ip->daddr;
		} else {
			key.local_ip = ip->daddr;
			key.remote_ip = ip->saddr;
		}
		/* From here on, the IP header's length is ihl + whatever follows. */
		if (ip_len < ihl) {
			stat_inc(ICE_HS_TRUNCATED);
			return TC_ACT_UNSPEC;
		}
		ip_len -= ihl;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + l3off;
		__u32 s, d;

		if ((void *)(ip6 + 1) > end) {
			stat_inc(ICE_HS_TRUNCATED);
			return TC_ACT_UNSPEC;
		}
		if (ip6->version != 6) {
			stat_inc(ICE_HS_NOT_IP);
			return TC_ACT_UNSPEC;
		}
		if (ip6->nexthdr != IPPROTO_UDP) {
			stat_inc(ICE_HS_NOT_ROCE);
			return TC_ACT_UNSPEC;
		}
		l4off = l3off + sizeof(*ip6);
		ip_len = bpf_ntohs(ip6->payload_len);
		ecn = (((__u8 *)ip6)[1] >> 4) & INET_ECN_MASK;
		s = ip6->saddr.in6_u.u6_addr32[0] ^ ip6->saddr.in6_u.u6_addr32[1] ^
		    ip6->saddr.in6_u.u6_addr32[2] ^ ip6->saddr.in6_u.u6_addr32[3];
		d = ip6->daddr.in6_u.u6_addr32[0] ^ ip6->daddr.in6_u.u6_addr32[1] ^
		    ip6->daddr.in6_u.u6_addr32[2] ^ ip6->daddr.in6_u.u6_addr32[3];
		key.local_ip = dir == ICE_DIR_EGRESS ? s : d;
		key.remote_ip = dir == ICE_DIR_EGRESS ? d : s;
		key.ipv6 = 1;
	} else {
		stat_inc(ICE_HS_NOT_IP);
		return TC_ACT_UNSPEC;
	}

	/* l4off <= 18 + 60: a bounded offset the verifier can follow. */
	if (l4off > 78)
		return TC_ACT_UNSPEC;
	udp = data + l4off;
	if ((void *)(udp + 1) > end) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (udp->dest != bpf_htons(roce_port)) {
		stat_inc(ICE_HS_NOT_ROCE);
		return TC_ACT_UNSPEC;
	}
	/* The whole packet must be there: IP length within the skb's bytes. */
	if (ip_len < sizeof(*udp) + ICE_ROCE_BTH_LEN + ICE_ROCE_ICRC_LEN ||
	    l4off + ip_len > skb->len) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	}

	/* BTH (+ AETH syndrome): direct when linear, else copied out. */
	if ((void *)(udp + 1) + sizeof(rh) <= end) {
		__builtin_memcpy(&rh, udp + 1, sizeof(rh));
	} else if (bpf_skb_load_bytes(skb, l4off + sizeof(*udp), &rh, ICE_ROCE_BTH_LEN) != 0) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	} else {
		rh.syndrome = 0; /* read below when the opcode has an AETH */
	}
	op = rh.bth[0];
	pad = (rh.bth[1] >> 4) & 3;
	kind = op_classify(op, &ext);
	need = sizeof(*udp) + ICE_ROCE_BTH_LEN + ext + pad + ICE_ROCE_ICRC_LEN;
	if (ip_len < need) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	payload = ip_len - need;
	if (kind == OK_ACK && (void *)(udp + 1) + sizeof(rh) > end &&
	    bpf_skb_load_bytes(skb, l4off + sizeof(*udp) + ICE_ROCE_BTH_LEN, &rh.syndrome, 1) !=
		    0) {
		stat_inc(ICE_HS_TRUNCATED);
		return TC_ACT_UNSPEC;
	}

	if (sample > 1) {
		__u64 *n = bpf_map_lookup_elem(&ice_host_sample_ctr, &zero);

		if (n) {
			__u64 c = (*n)++;

			if (c % sample != 0) {
				stat_inc(ICE_HS_SAMPLED_OUT);
				return TC_ACT_UNSPEC;
			}
		}
	}

	key.qpn = (__u32)rh.bth[5] << 16 | (__u32)rh.bth[6] << 8 | rh.bth[7];
	psn = (__u32)rh.bth[9] << 16 | (__u32)rh.bth[10] << 8 | rh.bth[11];
	ip_len += l4off - l3off; /* back to the whole IP length */

	st = bpf_map_lookup_elem(&ice_host_flows, &key);
	if (st == NULL) {
		struct ice_flow_stats init = {};
		__u64 now = bpf_ktime_get_coarse_ns();
		long err;

		init.first_ns = now;
		init.last_ns = now;
		if (kind == OK_REQ) {
			init.last_psn = psn;
			init.flags = ICE_FLOW_F_PSN;
		}
		init.udp_sport = bpf_ntohs(udp->source);
		init.pkts = 1;
		init.bytes = ip_len;
		init.ce = ecn == INET_ECN_CE;
		if (kind == OK_REQ || kind == OK_READ_RESP) {
			init.data_pkts = 1;
			init.data_bytes = payload;
		} else if (kind == OK_CNP) {
			init.cnp = 1;
		} else if (kind == OK_ACK) {
			__u8 cls = rh.syndrome & AETH_CLASS_MASK;

			init.acks = cls == ICE_ROCE_AETH_ACK;
			init.rnr_naks = cls == ICE_ROCE_AETH_RNR_NAK;
			init.naks = cls == ICE_ROCE_AETH_NAK;
		}
		err = bpf_map_update_elem(&ice_host_flows, &key, &init, BPF_NOEXIST);
		if (err == 0) {
			struct ice_flow_event ev = {
				.key = key,
				.udp_sport = init.udp_sport,
				.udp_dport = roce_port,
				.opcode = op,
				.ts_ns = now,
			};

			if (bpf_ringbuf_output(&ice_host_events, &ev, sizeof(ev), 0) != 0)
				stat_inc(ICE_HS_RINGBUF_FULL);
			stat_inc(ICE_HS_ROCE);
			return TC_ACT_UNSPEC;
		}
		/* Another CPU added it meanwhile: count into ours below. */
		st = err == -EEXIST ? bpf_map_lookup_elem(&ice_host_flows, &key) : NULL;
		if (st == NULL) {
			stat_inc(ICE_HS_MAP_FULL);
			return TC_ACT_UNSPEC;
		}
		if (st->first_ns == 0)
			st->first_ns = now;
	}

	st->pkts++;
	st->bytes += ip_len;
	if (ecn == INET_ECN_CE)
		st->ce++;
	if (kind == OK_REQ) {
		/* Not ahead of the last PSN (24-bit, wrap-aware): a retransmission. */
		if ((st->flags & ICE_FLOW_F_PSN) && (__s32)((psn - st->last_psn) << 8) <= 0)
			st->psn_back++;
		st->last_psn = psn;
		st->flags |= ICE_FLOW_F_PSN;
		st->data_pkts++;
		st->data_bytes += payload;
	} else if (kind == OK_READ_RESP) {
		st->data_pkts++;
		st->data_bytes += payload;
	} else if (kind == OK_CNP) {
		st->cnp++;
	} else if (kind == OK_ACK) {
		__u8 cls = rh.syndrome & AETH_CLASS_MASK;

		if (cls == ICE_ROCE_AETH_ACK)
			st->acks++;
		else if (cls == ICE_ROCE_AETH_RNR_NAK)
			st->rnr_naks++;
		else if (cls == ICE_ROCE_AETH_NAK)
			st->naks++;
	}
	st->udp_sport = bpf_ntohs(udp->source);
	st->last_ns = bpf_ktime_get_coarse_ns();
	stat_inc(ICE_HS_ROCE);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int ice_host_ingress(struct __sk_buff *skb)
{
	return ice_host_count(skb, ICE_DIR_INGRESS);
}

SEC("tc")
int ice_host_egress(struct __sk_buff *skb)
{
	return ice_host_count(skb, ICE_DIR_EGRESS);
}

char LICENSE[] SEC("license") = "GPL";
