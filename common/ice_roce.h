/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_roce: the RoCEv2 facts every module shares, in one header that BPF
 * programs include too (only <linux/types.h>): the UDP port, the header
 * lengths and AETH syndrome classes (IBA vol. 1, 9.2-9.7; RoCEv2 annex
 * A17), and how Linux derives a QP's UDP source port, which the transport
 * emulates, ccl_hooks steers and the controller predicts.
 *
 *   - Without a GRH flow label the kernel uses
 *     fl = rdma_calc_flow_label(lqpn, rqpn) (include/rdma/ib_verbs.h).
 *   - A flow label maps to the port as rdma-core's
 *     ibv_flow_label_to_udp_sport(): ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14))
 *     | 0xc000, so ports are 49152-65535.
 *   - ice_roce_flow_label_for_udp_sport() inverts that map: the 6 high bits
 *     of the label are free, the low 14 bits follow from them and the port.
 */
#ifndef ICE_ROCE_H
#define ICE_ROCE_H

#include <linux/types.h>

#define ICE_ROCE_UDP_PORT	    4791 /* IANA: RoCEv2 */
#define ICE_ROCE_BTH_LEN	    12
#define ICE_ROCE_RETH_LEN	    16
#define ICE_ROCE_AETH_LEN	    4
#define ICE_ROCE_IMMDT_LEN	    4
#define ICE_ROCE_DETH_LEN	    8
#define ICE_ROCE_ATOMIC_ETH_LEN	    28
#define ICE_ROCE_ATOMIC_ACK_ETH_LEN 8
#define ICE_ROCE_ICRC_LEN	    4
#define ICE_ROCE_CNP_RSVD_LEN	    16 /* the CNP's reserved bytes after the BTH */
#define ICE_ROCE_OP_ACK		    0x11
#define ICE_ROCE_OP_CNP		    0x81
/* AETH syndrome classes (IBA 9.7.5.1.1): bits 6..5 of the syndrome byte;
 * bit 7 is reserved. */
#define ICE_ROCE_AETH_ACK     0x00 /* low 5 bits: credit count */
#define ICE_ROCE_AETH_RNR_NAK 0x20 /* low 5 bits: timer */
#define ICE_ROCE_AETH_NAK     0x60 /* low 5 bits: code */

#define ICE_ROCE_SPORT_MIN	 0xc000u
#define ICE_ROCE_FLOW_LABEL_MASK 0xfffffu

static inline __u32 ice_roce_calc_flow_label(__u32 lqpn, __u32 rqpn)
{
	__u64 fl = (__u64)lqpn * rqpn;

	fl ^= fl >> 20;
	fl ^= fl >> 40;
	return (__u32)(fl & ICE_ROCE_FLOW_LABEL_MASK);
}

static inline __u16 ice_roce_flow_label_to_udp_sport(__u32 fl)
{
	__u32 fl_low = fl & 0x03fff, fl_high = fl & 0xfc000;

	fl_low ^= fl_high >> 14;
	return (__u16)(fl_low | ICE_ROCE_SPORT_MIN);
}

/* The port a QP pair takes without a flow label: what a NIC picks without
 * ICE, and what plain-ECMP baselines model. */
static inline __u16 ice_roce_sport_default(__u32 lqpn, __u32 rqpn)
{
	return ice_roce_flow_label_to_udp_sport(ice_roce_calc_flow_label(lqpn, rqpn));
}

/*
 * A non-zero flow label that the kernel maps to UDP source port sport, or 0
 * when no label can (sport below 49152). hi6 picks the free high bits (any
 * value; only its low 6 bits are used), so callers can keep labels distinct
 * for QPs that share a port. A label of 0 means "no label" to the kernel, so
 * the one case that would produce it takes other high bits.
 */
static inline __u32 ice_roce_flow_label_for_udp_sport(__u16 sport, __u32 hi6)
{
	__u32 hi = hi6 & 0x3f, lo;

	if (sport < ICE_ROCE_SPORT_MIN)
		return 0;
	lo = ((__u32)sport & 0x3fff) ^ hi;
	if (lo == 0 && hi == 0) {
		hi = 1;
		lo = ((__u32)sport & 0x3fff) ^ hi;
	}
	return (hi << 14) | lo;
}

#endif /* ICE_ROCE_H */
