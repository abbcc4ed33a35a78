/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * ice_switch: what the switch BPF programs (ice_switch.bpf.c) and their
 * loader (ice_switch_loader.c) share: map keys and values, counter layout,
 * limits and flags. Included by both sides, so they cannot drift; only
 * uapi types (<linux/types.h>, <linux/bpf.h>), no libc.
 *
 * Maps (each pinned as <pin_dir>/<name> by the loader):
 *   ice_port_cfg    hash  ifindex -> struct ice_port_cfg     (user writes)
 *   ice_port_state  hash  ifindex -> struct ice_port_state   (BPF writes, spin-locked)
 *   ice_ecmp_lpm    lpm   struct ice_lpm4_key -> group id    (user writes)
 *   ice_ecmp_grp    array group id -> struct ice_ecmp_group  (user writes)
 *   ice_ecmp_hits   percpu array group id * 16 + member -> packets
 *   ice_sw_hash     array 0 -> struct topo_hash_cfg          (user writes)
 *   ice_sw_stats    percpu array enum ice_sw_stat -> packets
 *   ice_sw_peak     array 0 -> peak window generation        (user writes)
 */
#ifndef ICE_SWITCH_H
#define ICE_SWITCH_H

#include <linux/types.h>
#include <linux/bpf.h>

#define ICE_SW_MAX_PORTS    256
#define ICE_SW_MAX_PREFIXES 4096
#define ICE_SW_MAX_GROUPS   1024 /* group id 0 is never used: "no group" */
#define ICE_SW_MAX_MEMBERS  16
#define ICE_SW_PPM	    1000000u
/* The drain step multiplies up to 1 s of ns by bytes/s in 64 bits. */
#define ICE_SW_MAX_RATE_BPS 100000000000ull

/* Map names, which are also the pin file names. */
#define ICE_SW_MAP_PORT_CFG   "ice_port_cfg"
#define ICE_SW_MAP_PORT_STATE "ice_port_state"
#define ICE_SW_MAP_ECMP_LPM   "ice_ecmp_lpm"
#define ICE_SW_MAP_ECMP_GRP   "ice_ecmp_grp"
#define ICE_SW_MAP_ECMP_HITS  "ice_ecmp_hits"
#define ICE_SW_MAP_HASH	      "ice_sw_hash"
#define ICE_SW_MAP_STATS      "ice_sw_stats"
#define ICE_SW_MAP_PEAK	      "ice_sw_peak"

/* struct ice_port_cfg.flags */
#define ICE_PORT_F_WRED_DROP (1u << 0) /* non-ECT packets in the RED band are dropped */

/*
 * One switch port's egress profile. Zero values switch a feature off:
 * rate_bps 0 = infinite rate (no queue ever forms), buffer 0 = unlimited,
 * kmax 0 = no ECN marking, loss_ppm 0 = no injected loss.
 */
struct ice_port_cfg {
	__u64 rate_bps; /* drain rate of the modelled FIFO, bits per second */
	__u32 buffer;	/* bytes the port may queue; more is tail-dropped */
	__u32 kmin;	/* RED: no marks below this depth (bytes) */
	__u32 kmax;	/* RED: mark every ECT packet at or above this depth */
	__u32 pmax;	/* RED: mark probability at kmax, per million */
	__u32 loss_ppm; /* injected random loss, per million */
	__u32 flags;	/* ICE_PORT_F_* */
};

/* Per-port counters; bytes and packets count what was let through. */
struct ice_port_counters {
	__u64 bytes;
	__u64 packets;
	__u64 ce_marked;      /* ECT packets set to CE */
	__u64 drops;	      /* tail drops: depth + len > buffer */
	__u64 wred_drops;     /* non-ECT packets dropped in the RED band */
	__u64 injected_drops; /* loss_ppm */
	__u64 depth;	      /* modelled queue depth after the last packet (bytes) */
	__u64 peak_depth;     /* highest depth seen (since the last ice_sw_peak_reset) */
	__u64 depth_area;     /* depth integrated over time, byte x ns: its change over an
				 interval / the interval's ns = the mean depth */
};

/* The area (byte x ns) under a queue of q bytes draining drained bytes over
 * dt ns at rate_Bps bytes/s: a trapezoid, or a triangle when it empties
 * (after q / rate). Shared by the egress program and the counter readers;
 * in 64 bits for q up to a few MB and dt up to tens of seconds; always
 * inlined: the egress program calls it holding a spin lock, where a
 * BPF-to-BPF call is not allowed. */
static inline __attribute__((always_inline)) __u64 ice_sw_drain_area(__u64 q, __u64 drained,
								     __u64 dt, __u64 rate_Bps)
{
	if (drained < q)
		return (2 * q - drained) * dt / 2;
	return rate_Bps ? q * (q * 1000000000ull / rate_Bps) / 2 : 0;
}

/* Per-port state, written under the lock by the egress program. */
struct ice_port_state {
	struct bpf_spin_lock lock;
	__u32 peak_gen;	 /* the ice_sw_peak generation peak_depth belongs to */
	__u64 last_ns;	 /* time the queue was last drained to */
	__u64 drain_rem; /* drained byte-ns not yet worth a whole byte */
	struct ice_port_counters c;
};

/* LPM trie key for an IPv4 destination prefix. */
struct ice_lpm4_key {
	__u32 prefixlen;
	__u32 addr; /* network byte order */
};

struct ice_ecmp_member {
	__u32 ifindex; /* egress port */
	__u32 nh;      /* IPv4 next hop, network byte order */
	__u32 flags;   /* ICE_MEMBER_F_* */
};

/* struct ice_ecmp_member.flags */
#define ICE_MEMBER_F_DOWN (1u << 0) /* out of use: link down, or the next switch lost the way */

/* struct ice_ecmp_group.flags */
#define ICE_GRP_F_USED (1u << 0)

/*
 * An ECMP group: n members in the order the switch hashes over them
 * (member = topo_hash_pick(cfg, 5-tuple, n)). n == 0 marks a prefix as
 * local to the switch: its packets go up the switch's own stack.
 *
 * Fast failover, resilient: a flow whose member is down moves to live
 * member number (hash % live) in member order; flows on live members stay
 * where they are. With no live member the packet goes to the kernel.
 */
struct ice_ecmp_group {
	__u32 n;
	__u32 flags;	 /* ICE_GRP_F_* */
	__u32 prefix;	 /* the LPM entry that owns the group (loader only) */
	__u32 prefixlen; /* its length */
	struct ice_ecmp_member m[ICE_SW_MAX_MEMBERS];
};

/* Switch-wide counters of the ingress (ECMP) program. */
enum ice_sw_stat {
	ICE_SW_ST_REDIRECT = 0, /* forwarded by the model */
	ICE_SW_ST_TTL_EXPIRED,	/* TTL <= 1: to the kernel (ICMP time exceeded) */
	ICE_SW_ST_PASS_LOCAL,	/* destination is the switch itself */
	ICE_SW_ST_PASS_MISS,	/* no prefix matched: left to the kernel */
	ICE_SW_ST_PASS_OTHER,	/* not IPv4 unicast to this port */
	ICE_SW_ST_REDIRECT_ERR, /* bpf_redirect_neigh refused */
	ICE_SW_ST_FAILOVER,	/* hashed onto a down member, moved to a live one */
	ICE_SW_ST_ALL_DOWN,	/* every member down: left to the kernel */
	ICE_SW_ST_MAX,
};

#endif /* ICE_SWITCH_H */
