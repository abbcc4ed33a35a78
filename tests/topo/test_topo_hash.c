// SPDX-License-Identifier: Apache-2.0
/*
 * topo_hash: known-answer vectors for the CRC variants and for Toeplitz
 * (Microsoft's RSS verification suite), key layout, field selection, the
 * spread of topo_hash_pick over all 16384 RoCE source ports, and
 * topo_port_map() agreeing with topo_predict() port by port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo.h"

static const uint8_t check_msg[] = "123456789";

static void test_crc_check_values(void **state)
{
	(void)state;
	/* CRC-32/IEEE = init ~0, final xor ~0: ours is the same without the xor */
	assert_int_equal(topo_hash_crc32_bytes(0xffffffffu, 0xEDB88320u, check_msg, 9) ^ ~0u,
			 0xCBF43926u);
	assert_int_equal(topo_hash_crc32_bytes(0xffffffffu, 0xEDB88320u, check_msg, 9),
			 0x340BC6D9u);
	/* CRC-32C */
	assert_int_equal(topo_hash_crc32_bytes(0xffffffffu, 0x82F63B78u, check_msg, 9) ^ ~0u,
			 0xE3069283u);
	/* CRC-16/CCITT-FALSE and XMODEM */
	assert_int_equal(topo_hash_crc16_ccitt_bytes(0xffff, check_msg, 9), 0x29B1);
	assert_int_equal(topo_hash_crc16_ccitt_bytes(0, check_msg, 9), 0x31C3);
	/* CRC-16/ARC */
	assert_int_equal(topo_hash_crc32_bytes(0, 0xA001u, check_msg, 9), 0xBB3D);
}

/* The same through topo_hash(): the 13-byte key of a 5-tuple. */
static void test_hash_matches_bytes(void **state)
{
	struct topo_5tuple t = {.saddr = htonl(0x0a000001),
				.daddr = htonl(0x0a000203),
				.sport = htons(49152),
				.dport = htons(4791),
				.proto = 17};
	const uint8_t want[TOPO_HASH_KEY_LEN] = {10, 0, 0, 1, 10, 0, 2, 3, 17, 0xc0, 0, 0x12, 0xb7};
	struct topo_hash_cfg c = {.alg = TOPO_HASH_CRC32, .seed = 7, .fields = TOPO_HF_5TUPLE};
	uint8_t key[TOPO_HASH_KEY_LEN], secret[40];

	(void)state;
	topo_hash_key(&c, &t, key);
	assert_memory_equal(key, want, sizeof(want));
	assert_int_equal(topo_hash(&c, &t), topo_hash_crc32_bytes(7, 0xEDB88320u, want, 13));
	c.alg = TOPO_HASH_CRC32C;
	assert_int_equal(topo_hash(&c, &t), topo_hash_crc32_bytes(7, 0x82F63B78u, want, 13));
	c.alg = TOPO_HASH_CRC16;
	assert_int_equal(topo_hash(&c, &t), topo_hash_crc16_ccitt_bytes(7, want, 13));
	c.alg = TOPO_HASH_CRC16_ANSI;
	assert_int_equal(topo_hash(&c, &t), topo_hash_crc32_bytes(7, 0xA001u, want, 13));
	c.alg = TOPO_HASH_TOEPLITZ;
	topo_hash_toeplitz_key(7, secret);
	assert_int_equal(topo_hash(&c, &t), topo_hash_toeplitz_bytes(secret, want, 13));
	/* XOR by hand: words 0a000001 ^ 0a000203 ^ 11c00012 ^ b7000000 ^ seed, folded */
	c.alg = TOPO_HASH_XOR;
	{
		uint32_t h = 0x0a000001u ^ 0x0a000203u ^ 0x11c00012u ^ 0xb7000000u ^ 7u;

		h ^= h >> 16;
		assert_int_equal(topo_hash(&c, &t), h & 0xffff);
	}
	/* field selection: only the source port counts */
	c.alg = TOPO_HASH_CRC32;
	c.fields = TOPO_HF_SRC_PORT;
	topo_hash_key(&c, &t, key);
	for (int i = 0; i < TOPO_HASH_KEY_LEN; i++)
		assert_int_equal(key[i], (i == 9) ? 0xc0 : 0);
	{
		uint32_t h = topo_hash(&c, &t);

		t.saddr = htonl(0x0b000001);
		t.proto = 6;
		assert_int_equal(topo_hash(&c, &t), h);
		t.sport = htons(49153);
		assert_int_not_equal(topo_hash(&c, &t), h);
	}
}

/* Microsoft RSS verification suite, IPv4 and IPv4+TCP, standard key. */
static void test_toeplitz_ms_vectors(void **state)
{
	static const uint8_t ms_key[40] = {
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
		0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
		0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
	static const struct {
		const char *src, *dst;
		uint16_t sport, dport;
		uint32_t ip, tcp;
	} v[] = {
		{"66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178},
		{"199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea},
		{"24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
		{"38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f},
		{"153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t in[12];

		inet_pton(AF_INET, v[i].src, in);
		inet_pton(AF_INET, v[i].dst, in + 4);
		in[8] = (uint8_t)(v[i].sport >> 8);
		in[9] = (uint8_t)v[i].sport;
		in[10] = (uint8_t)(v[i].dport >> 8);
		in[11] = (uint8_t)v[i].dport;
		assert_int_equal(topo_hash_toeplitz_bytes(ms_key, in, 8), v[i].ip);
		assert_int_equal(topo_hash_toeplitz_bytes(ms_key, in, 12), v[i].tcp);
	}
}

static void test_toeplitz_key_derivation(void **state)
{
	uint8_t a[40], b[40], c[40];

	(void)state;
	topo_hash_toeplitz_key(1, a);
	topo_hash_toeplitz_key(1, b);
	topo_hash_toeplitz_key(2, c);
	assert_memory_equal(a, b, 40);
	assert_memory_not_equal(a, c, 40);
	/* first word: xorshift32(1) = 0x00042021 */
	assert_int_equal(a[0], 0x00);
	assert_int_equal(a[1], 0x04);
	assert_int_equal(a[2], 0x20);
	assert_int_equal(a[3], 0x21);
}

/* Over all 16384 RoCE source ports each bucket gets its share within 10%. */
static void test_pick_distribution(void **state)
{
	static const uint32_t ns[] = {2, 3, 4, 8, 16};

	(void)state;
	for (uint32_t alg = 0; alg < TOPO_HASH_ALG_MAX; alg++) {
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			struct topo_hash_cfg c = {
				.alg = alg, .seed = 0x1234567u, .fields = TOPO_HF_5TUPLE};
			struct topo_5tuple t = {.saddr = htonl(0x0a010001),
						.daddr = htonl(0x0a020001),
						.dport = htons(4791),
						.proto = 17};
			uint32_t cnt[16] = {0}, n = ns[k], lo = UINT32_MAX, hi = 0;
			double share = (double)TOPO_SPORT_COUNT / n;

			for (uint32_t p = 0; p < TOPO_SPORT_COUNT; p++) {
				t.sport = htons((uint16_t)(TOPO_SPORT_BASE + p));
				cnt[topo_hash_pick(&c, &t, n)]++;
			}
			for (uint32_t i = 0; i < n; i++) {
				lo = cnt[i] < lo ? cnt[i] : lo;
				hi = cnt[i] > hi ? cnt[i] : hi;
			}
			print_message("%-10s n=%-2u min %u max %u (share %.0f)\n",
				      topo_hash_alg_name(alg), n, lo, hi, share);
			assert_true(lo >= 0.9 * share && hi <= 1.1 * share);
		}
	}
}

static int path_index(const struct topo_path *paths, int n, const struct topo_path *p)
{
	for (int i = 0; i < n; i++)
		if (paths[i].nhops == p->nhops &&
		    memcmp(paths[i].egress, p->egress, p->nhops * sizeof(p->egress[0])) == 0)
			return i;
	return 0xff;
}

/* topo_port_map() == topo_predict() for every source port of a pair. */
static void check_port_map(const struct topo *t, uint32_t src, uint32_t dst, int want_paths,
			   bool all_used)
{
	static uint8_t map[TOPO_SPORT_COUNT];
	struct topo_path paths[64], p;
	struct topo_5tuple tu = {.saddr = t->ports[src].addr.s_addr,
				 .daddr = t->ports[dst].addr.s_addr,
				 .dport = htons(4791),
				 .proto = 17};
	uint32_t cnt[256] = {0};
	int n = topo_paths(t, src, dst, paths, 64);

	assert_int_equal(n, want_paths);
	assert_int_equal(topo_port_map(t, src, dst, map), 0);
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT; i++) {
		tu.sport = htons((uint16_t)(TOPO_SPORT_BASE + i));
		assert_int_equal(topo_predict(t, src, dst, &tu, &p), 0);
		assert_int_equal(map[i], path_index(paths, n, &p));
		cnt[map[i]]++;
	}
	for (int i = 0; all_used && i < n; i++)
		assert_true(cnt[i] > 0);
}

static void test_port_map_agrees(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;

	(void)state;
	for (uint32_t alg = 0; alg < TOPO_HASH_ALG_MAX; alg++) {
		topo_gen_opts_default(&o);
		o.hash.alg = alg;
		o.hash.seed = 0xabcdef01u;
		t = topo_gen_leaf_spine(&o);
		assert_non_null(t);
		check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 7)->id, 2, true);
		check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 1)->id, 1, true);
		topo_free(t);

		topo_gen_opts_default(&o);
		o.k = 4;
		o.hash.alg = alg;
		t = topo_gen_fat_tree(&o);
		assert_non_null(t);
		/* across pods: 4 paths, all reachable unless the model polarises (XOR) */
		check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 15)->id, 4, alg != TOPO_HASH_XOR);
		check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 2)->id, 2, true);
		topo_free(t);
	}
	topo_gen_opts_default(&o);
	o.k = 8;
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 127)->id, 16, true);
	topo_free(t);
	topo_gen_opts_default(&o);
	o.hash.alg = TOPO_HASH_TOEPLITZ;
	t = topo_gen_rail(&o);
	assert_non_null(t);
	/* h1 NIC 0 (rail 1) to h5 NIC 1 (group 2, rail 2): via both spines */
	check_port_map(t, topo_nic(t, 0)->id, topo_nic(t, 17)->id, 2, true);
	topo_free(t);
}

/* topo_port_map16() on a pair with more than 255 paths (fat-tree k = 48
 * across pods: 576): agrees with topo_predict() on sampled ports, every
 * index below the count, the uint8 map equal below 0xff and 0xff above;
 * and equal to the uint8 map on a small fabric. */
static void test_port_map16(void **state)
{
	static uint16_t m16[TOPO_SPORT_COUNT];
	static uint8_t m8[TOPO_SPORT_COUNT];
	static struct topo_path paths[1024];
	struct topo_gen_opts o;
	struct topo_path p;
	struct topo *t;
	uint32_t src, dst, above = 0;
	struct topo_5tuple tu = {.dport = htons(4791), .proto = 17};
	int n;

	(void)state;
	topo_gen_opts_default(&o);
	o.k = 48;
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	src = topo_nic(t, 5)->id;
	dst = topo_nic(t, 27000)->id;
	n = topo_paths(t, src, dst, paths, 1024);
	assert_int_equal(n, 576);
	assert_int_equal(topo_port_map16(t, src, dst, m16), 0);
	assert_int_equal(topo_port_map(t, src, dst, m8), 0);
	tu.saddr = t->ports[src].addr.s_addr;
	tu.daddr = t->ports[dst].addr.s_addr;
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT; i++) {
		assert_true(m16[i] < 576);
		assert_int_equal(m8[i], m16[i] < 0xff ? m16[i] : 0xff);
		above += m16[i] >= 0xff;
		if (i % 61 != 0)
			continue;
		tu.sport = htons((uint16_t)(TOPO_SPORT_BASE + i));
		assert_int_equal(topo_predict(t, src, dst, &tu, &p), 0);
		assert_true(p.nhops == paths[m16[i]].nhops);
		assert_memory_equal(p.egress, paths[m16[i]].egress, p.nhops * sizeof(p.egress[0]));
	}
	assert_true(above > 0);
	assert_int_equal(topo_port_map16(t, src, src, m16), -EINVAL);
	topo_free(t);

	topo_gen_opts_default(&o);
	o.k = 8;
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	src = topo_nic(t, 0)->id;
	dst = topo_nic(t, 127)->id;
	assert_int_equal(topo_port_map16(t, src, dst, m16), 0);
	assert_int_equal(topo_port_map(t, src, dst, m8), 0);
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT; i++)
		assert_int_equal(m16[i], m8[i]);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_check_values),
		cmocka_unit_test(test_hash_matches_bytes),
		cmocka_unit_test(test_toeplitz_ms_vectors),
		cmocka_unit_test(test_toeplitz_key_derivation),
		cmocka_unit_test(test_pick_distribution),
		cmocka_unit_test(test_port_map_agrees),
		cmocka_unit_test(test_port_map16),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
