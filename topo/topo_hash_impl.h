/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo_hash_impl: the bodies of the hash models declared in topo_hash.h.
 * Included by topo_hash.h only. No libc, no tables: CRCs are bitwise (13
 * bytes x 8 bits = 104 steps, constant bounds), Toeplitz derives its 40-byte
 * key on the stack, so the BPF verifier accepts every loop.
 *
 * Definitions (all checked in tests/topo/test_topo_hash.c):
 *   CRC32       reflected 0xEDB88320, init = seed, no final xor. With seed
 *               0xffffffff it is the bitwise complement of CRC-32/IEEE:
 *               "123456789" -> ~0xCBF43926 = 0x340BC6D9.
 *   CRC32C      reflected 0x82F63B78, init = seed, no final xor.
 *               seed 0xffffffff: "123456789" -> ~0xE3069283 = 0x1CF96D7C.
 *   CRC16       CRC-16/CCITT 0x1021, MSB first, init = seed & 0xffff.
 *               seed 0xffff: "123456789" -> 0x29B1 (CCITT-FALSE);
 *               seed 0: 0x31C3 (XMODEM).
 *   CRC16_ANSI  CRC-16/ARC, reflected 0xA001, init = seed & 0xffff.
 *               seed 0: "123456789" -> 0xBB3D.
 *   XOR         key zero-padded to 16 bytes, its four big-endian 32-bit
 *               words xor-ed, ^ seed, then folded: h ^= h >> 16; h &= 0xffff.
 *   TOEPLITZ    Microsoft RSS Toeplitz hash over the key bytes with a 40-byte
 *               secret derived from the seed by xorshift32 expansion:
 *               s = seed ? seed : 0x6d5a56da; ten times { s ^= s << 13;
 *               s ^= s >> 17; s ^= s << 5; emit s big-endian }.
 *
 * Every model is affine over GF(2) in the key bits (h(x ^ y) = h(x) ^ h(y) ^
 * h(0) for keys of equal length); topo_port_map() relies on that.
 */
#ifndef TOPO_HASH_IMPL_H
#define TOPO_HASH_IMPL_H

#define TOPO_TOEPLITZ_KEY_LEN 40

/* In BPF, unroll the byte and bit loops: straight-line code the verifier
 * checks in one pass (its loop walk would otherwise fork per hash bit). */
#if defined(__bpf__) && defined(__clang__)
#define TH_UNROLL _Pragma("unroll")
#else
#define TH_UNROLL
#endif

static inline th_u32 topo_hash_crc32_bytes(th_u32 crc, th_u32 poly_reflected, const th_u8 *p,
					   th_u32 len)
{
	TH_UNROLL
	for (th_u32 i = 0; i < len && i < 64; i++) {
		crc ^= p[i];
		TH_UNROLL
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (poly_reflected * (crc & 1u));
	}
	return crc;
}

static inline th_u32 topo_hash_crc16_ccitt_bytes(th_u32 crc, const th_u8 *p, th_u32 len)
{
	crc &= 0xffffu;
	TH_UNROLL
	for (th_u32 i = 0; i < len && i < 64; i++) {
		crc ^= (th_u32)p[i] << 8;
		TH_UNROLL
		for (int b = 0; b < 8; b++)
			crc = ((crc << 1) ^ (0x1021u * ((crc >> 15) & 1u))) & 0xffffu;
	}
	return crc;
}

static inline th_u32 topo_hash_xor_bytes(th_u32 seed, const th_u8 *p, th_u32 len)
{
	th_u32 h = 0;

	TH_UNROLL
	for (th_u32 i = 0; i < len && i < 64; i++)
		h ^= (th_u32)p[i] << (24 - 8 * (i & 3));
	h ^= seed;
	h ^= h >> 16;
	return h & 0xffffu;
}

/* Derive the 40-byte Toeplitz secret from seed (see the header comment). */
static inline void topo_hash_toeplitz_key(th_u32 seed, th_u8 *key)
{
	th_u32 s = seed != 0 ? seed : 0x6d5a56dau;

	TH_UNROLL
	for (int i = 0; i < TOPO_TOEPLITZ_KEY_LEN / 4; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		key[4 * i] = (th_u8)(s >> 24);
		key[4 * i + 1] = (th_u8)(s >> 16);
		key[4 * i + 2] = (th_u8)(s >> 8);
		key[4 * i + 3] = (th_u8)s;
	}
}

/* Toeplitz hash of p[len] (len <= 36) under a 40-byte secret key. */
static inline th_u32 topo_hash_toeplitz_bytes(const th_u8 *key, const th_u8 *p, th_u32 len)
{
	th_u32 h = 0;
	th_u32 win =
		((th_u32)key[0] << 24) | ((th_u32)key[1] << 16) | ((th_u32)key[2] << 8) | key[3];

	TH_UNROLL
	for (th_u32 i = 0; i < len && i < TOPO_TOEPLITZ_KEY_LEN - 4; i++) {
		th_u32 next = key[i + 4];

		TH_UNROLL
		for (int b = 0; b < 8; b++) {
			h ^= win * (((th_u32)p[i] >> (7 - b)) & 1u);
			win = (win << 1) | ((next >> (7 - b)) & 1u);
		}
	}
	return h;
}

static inline void topo_hash_key(const struct topo_hash_cfg *c, const struct topo_5tuple *t,
				 th_u8 *key)
{
	/* Branch-free field selection, masks by multiplication (not 0 - bit,
	 * which the verifier splits into two states per bit). */
	const th_u8 *s = (const th_u8 *)&t->saddr;
	const th_u8 *d = (const th_u8 *)&t->daddr;
	const th_u8 *sp = (const th_u8 *)&t->sport;
	const th_u8 *dp = (const th_u8 *)&t->dport;
	th_u8 ms = (th_u8)(0xffu * (c->fields & 1u));
	th_u8 md = (th_u8)(0xffu * ((c->fields >> 1) & 1u));
	th_u8 mp = (th_u8)(0xffu * ((c->fields >> 2) & 1u));
	th_u8 msp = (th_u8)(0xffu * ((c->fields >> 4) & 1u));
	th_u8 mdp = (th_u8)(0xffu * ((c->fields >> 5) & 1u));

	key[0] = s[0] & ms;
	key[1] = s[1] & ms;
	key[2] = s[2] & ms;
	key[3] = s[3] & ms;
	key[4] = d[0] & md;
	key[5] = d[1] & md;
	key[6] = d[2] & md;
	key[7] = d[3] & md;
	key[8] = t->proto & mp;
	key[9] = sp[0] & msp;
	key[10] = sp[1] & msp;
	key[11] = dp[0] & mdp;
	key[12] = dp[1] & mdp;
}

/* The hash of an already built key (TOPO_HASH_KEY_LEN bytes) under c. */
static inline th_u32 topo_hash_of_key(const struct topo_hash_cfg *c, const th_u8 *key)
{
	th_u8 secret[TOPO_TOEPLITZ_KEY_LEN];

	switch (c->alg) {
	case TOPO_HASH_CRC32:
		return topo_hash_crc32_bytes(c->seed, 0xEDB88320u, key, TOPO_HASH_KEY_LEN);
	case TOPO_HASH_CRC32C:
		return topo_hash_crc32_bytes(c->seed, 0x82F63B78u, key, TOPO_HASH_KEY_LEN);
	case TOPO_HASH_CRC16:
		return topo_hash_crc16_ccitt_bytes(c->seed, key, TOPO_HASH_KEY_LEN);
	case TOPO_HASH_CRC16_ANSI:
		return topo_hash_crc32_bytes(c->seed & 0xffffu, 0xA001u, key, TOPO_HASH_KEY_LEN);
	case TOPO_HASH_XOR:
		return topo_hash_xor_bytes(c->seed, key, TOPO_HASH_KEY_LEN);
	case TOPO_HASH_TOEPLITZ:
		topo_hash_toeplitz_key(c->seed, secret);
		return topo_hash_toeplitz_bytes(secret, key, TOPO_HASH_KEY_LEN);
	default:
		return 0;
	}
}

static inline th_u32 topo_hash(const struct topo_hash_cfg *c, const struct topo_5tuple *t)
{
	th_u8 key[TOPO_HASH_KEY_LEN];

	topo_hash_key(c, t, key);
	return topo_hash_of_key(c, key);
}

static inline th_u32 topo_hash_pick(const struct topo_hash_cfg *c, const struct topo_5tuple *t,
				    th_u32 n)
{
	if (n <= 1)
		return 0;
	return topo_hash(c, t) % n;
}

#endif /* TOPO_HASH_IMPL_H */
