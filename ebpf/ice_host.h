/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_host: what the host NIC programs (ice_host.bpf.c) share with user space
 * (ice_host_loader.c, the agent). Included by both sides.
 *
 * A RoCEv2 packet names only its destination QP. So flows are keyed per
 * direction: on egress the key's qpn is the REMOTE QP a packet goes to, on
 * ingress it is the LOCAL QP it comes to. The agent joins the two directions
 * of a queue pair with the QP table the transport (or the verbs hook)
 * announces.
 *
 * Maps (pinned under the agent's pin directory, names = pin file names):
 *   ice_host_flows   lru hash  struct ice_flow_key -> struct ice_flow_stats (per-CPU)
 *   ice_host_events  ringbuf   struct ice_flow_event (new flows)
 *   ice_host_stats   percpu array  enum ice_host_stat -> u64 (parse outcomes)
 */
#ifndef ICE_HOST_H
#define ICE_HOST_H

#include <linux/types.h>

#define ICE_HOST_MAX_FLOWS 65536
#define ICE_HOST_RINGBUF   (256 * 1024)

#define ICE_HOST_MAP_FLOWS  "ice_host_flows"
#define ICE_HOST_MAP_EVENTS "ice_host_events"
#define ICE_HOST_MAP_STATS  "ice_host_stats"

enum ice_dir {
	ICE_DIR_EGRESS = 0,
	ICE_DIR_INGRESS = 1,
};

struct ice_flow_key {
	__u32 local_ip;	 /* IPv4, network order (IPv6: a 32-bit fold of the address) */
	__u32 remote_ip; /* same */
	__u32 qpn;	 /* egress: remote QPN; ingress: local QPN */
	__u8 dir;	 /* enum ice_dir */
	__u8 ipv6;	 /* 1 when the addresses are IPv6 folds */
	__u16 pad;
};

struct ice_flow_stats {
	__u64 pkts;	  /* all RoCEv2 packets of this key */
	__u64 bytes;	  /* their IP length (what the link carries minus L2) */
	__u64 data_pkts;  /* SEND/WRITE/READ packets */
	__u64 data_bytes; /* their payload bytes (after BTH/RETH, before pad/ICRC) */
	__u64 ce;	  /* CE-marked packets (ingress: marks the network made) */
	__u64 cnp;	  /* CNPs (egress: sent by us; ingress: received) */
	__u64 acks;	  /* ACKs (AETH syndrome ACK) */
	__u64 naks;	  /* NAKs (PSN sequence error and others) */
	__u64 rnr_naks;	  /* receiver-not-ready NAKs */
	__u64 psn_back;	  /* data packets whose PSN went backwards: retransmissions */
	__u64 first_ns; /* bpf_ktime_get_coarse_ns() (CLOCK_MONOTONIC_COARSE) of the first packet */
	__u64 last_ns;	/* ... of the last */
	__u32 last_psn; /* last data PSN seen (24 bits) */
	__u16 udp_sport; /* UDP source port of the last packet (host order) */
	__u16 flags;	 /* ICE_FLOW_F_*: of this CPU's slot (summed: OR) */
};

/* last_psn holds a data PSN (SEND/WRITE/READ request), so the next one is compared. */
#define ICE_FLOW_F_PSN 0x1

/* Ring-buffer record: a key seen for the first time. */
struct ice_flow_event {
	struct ice_flow_key key;
	__u16 udp_sport; /* host order */
	__u16 udp_dport;
	__u8 opcode; /* BTH opcode of the first packet */
	__u8 pad[3];
	__u64 ts_ns;
};

/* Outcome counters of the parser (index of ice_host_stats). */
enum ice_host_stat {
	ICE_HS_PKTS = 0,     /* packets the program saw */
	ICE_HS_ROCE,	     /* RoCEv2 packets counted */
	ICE_HS_NOT_IP,	     /* not IPv4/IPv6 (after an optional VLAN tag) */
	ICE_HS_NOT_ROCE,     /* IP but not UDP to the RoCE port */
	ICE_HS_TRUNCATED,    /* headers cut short */
	ICE_HS_SAMPLED_OUT,  /* skipped by sampling */
	ICE_HS_MAP_FULL,     /* a new flow could not be added */
	ICE_HS_RINGBUF_FULL, /* a new-flow event was lost */
	ICE_HS_MAX,
};

#endif /* ICE_HOST_H */
