/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo_hash: switch ECMP hash models, shared by user space (topo/, the
 * controller's planner) and the BPF program that plays a switch ASIC in the
 * test bed (ebpf/). Header-only, no libc: everything is static inline on
 * plain integer types, loops have constant bounds, so the same code compiles
 * for x86 and for BPF and the two sides cannot disagree.
 *
 * A packet's key is the 5-tuple in network byte order, laid out as a switch
 * feeds it to its hash unit: src IP (4), dst IP (4), protocol (1), src port
 * (2), dst port (2) = 13 bytes; fields not selected are zero. The chosen
 * next hop is hash % n over the ECMP group's members in a fixed order.
 */
#ifndef TOPO_HASH_H
#define TOPO_HASH_H

#ifdef __bpf__
#include <linux/types.h>
typedef __u8 th_u8;
typedef __u16 th_u16;
typedef __u32 th_u32;
#else
#include <stdint.h>
typedef uint8_t th_u8;
typedef uint16_t th_u16;
typedef uint32_t th_u32;
#endif

enum topo_hash_alg {
	TOPO_HASH_CRC32 = 0,  /* CRC-32/IEEE, reflected, init = seed, no final xor */
	TOPO_HASH_CRC32C,     /* CRC-32C (Castagnoli), reflected, init = seed */
	TOPO_HASH_CRC16,      /* CRC-16/CCITT (0x1021), init = seed & 0xffff */
	TOPO_HASH_CRC16_ANSI, /* CRC-16/ARC (0x8005 reflected), init = seed & 0xffff */
	TOPO_HASH_XOR,	      /* xor-fold of the key's 32-bit words, then ^ seed, folded */
	TOPO_HASH_TOEPLITZ,   /* Toeplitz over the key with a 40-byte key derived from seed */
	TOPO_HASH_ALG_MAX,
};

/* Field selection bits (same order as Linux's fib_multipath_hash_fields
 * low bits: 0x01 src IP, 0x02 dst IP, 0x04 proto, 0x10 src port, 0x20 dst
 * port). */
#define TOPO_HF_SRC_IP	 0x01u
#define TOPO_HF_DST_IP	 0x02u
#define TOPO_HF_PROTO	 0x04u
#define TOPO_HF_SRC_PORT 0x10u
#define TOPO_HF_DST_PORT 0x20u
#define TOPO_HF_5TUPLE	 0x37u

#define TOPO_HASH_KEY_LEN 13

struct topo_hash_cfg {
	th_u32 alg;    /* enum topo_hash_alg */
	th_u32 seed;   /* initial value / key material */
	th_u32 fields; /* TOPO_HF_* */
};

/* The 5-tuple, every field in network byte order as on the wire. */
struct topo_5tuple {
	th_u32 saddr;
	th_u32 daddr;
	th_u16 sport;
	th_u16 dport;
	th_u8 proto;
};

/* Fill key[TOPO_HASH_KEY_LEN] from t with the selected fields. */
static inline void topo_hash_key(const struct topo_hash_cfg *c, const struct topo_5tuple *t,
				 th_u8 *key);
/* The hash of a 5-tuple under c. */
static inline th_u32 topo_hash(const struct topo_hash_cfg *c, const struct topo_5tuple *t);
/* Index of the chosen member of an n-member ECMP group (n >= 1). */
static inline th_u32 topo_hash_pick(const struct topo_hash_cfg *c, const struct topo_5tuple *t,
				    th_u32 n);

#include "topo_hash_impl.h"

#endif /* TOPO_HASH_H */
