/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_roce: how Linux derives a RoCEv2 QP's UDP source port, shared by the
 * transport (which emulates it) and ccl_hooks (which steers real QPs).
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

#include <stdint.h>

#define ICE_ROCE_SPORT_MIN	 0xc000u
#define ICE_ROCE_FLOW_LABEL_MASK 0xfffffu

static inline uint32_t ice_roce_calc_flow_label(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t fl = (uint64_t)lqpn * rqpn;

	fl ^= fl >> 20;
	fl ^= fl >> 40;
	return (uint32_t)(fl & ICE_ROCE_FLOW_LABEL_MASK);
}

static inline uint16_t ice_roce_flow_label_to_udp_sport(uint32_t fl)
{
	uint32_t fl_low = fl & 0x03fff, fl_high = fl & 0xfc000;

	fl_low ^= fl_high >> 14;
	return (uint16_t)(fl_low | ICE_ROCE_SPORT_MIN);
}

/*
 * A non-zero flow label that the kernel maps to UDP source port sport, or 0
 * when no label can (sport below 49152). hi6 picks the free high bits (any
 * value; only its low 6 bits are used), so callers can keep labels distinct
 * for QPs that share a port. A label of 0 means "no label" to the kernel, so
 * the one case that would produce it takes other high bits.
 */
static inline uint32_t ice_roce_flow_label_for_udp_sport(uint16_t sport, uint32_t hi6)
{
	uint32_t hi = hi6 & 0x3f, lo;

	if (sport < ICE_ROCE_SPORT_MIN)
		return 0;
	lo = ((uint32_t)sport & 0x3fff) ^ hi;
	if (lo == 0 && hi == 0) {
		hi = 1;
		lo = ((uint32_t)sport & 0x3fff) ^ hi;
	}
	return (hi << 14) | lo;
}

#endif /* ICE_ROCE_H */
