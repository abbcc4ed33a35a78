// SPDX-License-Identifier: Apache-2.0
/*
 * ice-topo-bench: how long topo_port_map() takes for all 16384 source ports
 * of one NIC pair, against the straightforward way (topo_predict() per port,
 * then a lookup in the path list) in the same run. Prints figures; asserts
 * nothing.
 *
 *   ice-topo-bench [REPEATS]
 */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ice_roce.h"
#include "ice_time.h"
#include "topo.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int path_index(const struct topo_path *paths, int n, const struct topo_path *p)
{
	for (int i = 0; i < n; i++)
		if (paths[i].nhops == p->nhops &&
		    memcmp(paths[i].egress, p->egress, p->nhops * sizeof(p->egress[0])) == 0)
			return i;
	return 0xff;
}

static void bench(const char *label, struct topo *t, uint32_t src, uint32_t dst, int reps)
{
	static uint8_t map[TOPO_SPORT_COUNT], ref[TOPO_SPORT_COUNT];
	uint64_t *ns = calloc((size_t)reps, sizeof(*ns)), t0, naive;
	struct topo_path paths[256], p;
	struct topo_5tuple tu = {
		.saddr = t->ports[src].addr.s_addr,
		.daddr = t->ports[dst].addr.s_addr,
		.dport = htons(ICE_ROCE_UDP_PORT),
		.proto = 17,
	};
	int n = topo_paths(t, src, dst, paths, 256);
	uint32_t used = 0, mism = 0, cnt[256] = {0};
	double sum = 0;

	for (int r = 0; r < reps; r++) {
		t0 = ice_now_ns();
		topo_port_map(t, src, dst, map);
		ns[r] = ice_now_ns() - t0;
		sum += (double)ns[r];
	}
	qsort(ns, (size_t)reps, sizeof(*ns), cmp_u64);
	t0 = ice_now_ns();
	for (int i = 0; i < TOPO_SPORT_COUNT; i++) {
		tu.sport = htons((uint16_t)(TOPO_SPORT_BASE + i));
		topo_predict(t, src, dst, &tu, &p);
		ref[i] = (uint8_t)path_index(paths, n, &p);
	}
	naive = ice_now_ns() - t0;
	for (int i = 0; i < TOPO_SPORT_COUNT; i++) {
		mism += map[i] != ref[i];
		cnt[map[i]]++;
	}
	for (int i = 0; i < 256; i++)
		used += cnt[i] != 0;
	printf("%-28s %s -> %s: %d paths, %u used; topo_port_map 16384 ports: "
	       "min %.1f us, median %.1f us, mean %.1f us (%d runs); "
	       "topo_predict per port: %.1f us; mismatches %u\n",
	       label, t->nodes[t->ports[src].node].name, t->nodes[t->ports[dst].node].name, n, used,
	       ns[0] / 1e3, ns[reps / 2] / 1e3, sum / reps / 1e3, reps, naive / 1e3, mism);
	free(ns);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 200;
	struct topo_gen_opts o;
	struct topo *t;

	if (reps <= 0)
		reps = 200;
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	if (t != NULL)
		bench("leaf-spine 2x2 crc32", t, topo_nic(t, 0)->id,
		      topo_nic(t, topo_nic_count(t) - 1)->id, reps);
	topo_free(t);
	for (uint32_t k = 4; k <= 8; k += 4) {
		for (int alg = TOPO_HASH_CRC32; alg < TOPO_HASH_ALG_MAX; alg++) {
			char label[64];

			topo_gen_opts_default(&o);
			o.k = k;
			o.hash.alg = (uint32_t)alg;
			t = topo_gen_fat_tree(&o);
			if (t == NULL)
				continue;
			snprintf(label, sizeof(label), "fat-tree k=%u %s", k,
				 topo_hash_alg_name((enum topo_hash_alg)alg));
			bench(label, t, topo_nic(t, 0)->id, topo_nic(t, topo_nic_count(t) - 1)->id,
			      reps);
			topo_free(t);
		}
	}
	return 0;
}
