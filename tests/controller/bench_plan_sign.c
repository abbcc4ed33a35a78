// SPDX-License-Identifier: Apache-2.0
/*
 * bench_plan_sign: what signing and verifying one host's plan costs
 * (common/ice_plan.c, Ed25519). A plan of N entries (default 1,000, each
 * with a DCQCN profile, as the controller publishes them) is signed and
 * verified R times per run, 3 runs; the median per plan is printed for
 *   sign   ice_plan_sign: canonical JSON + Ed25519 signature
 *   verify ice_plan_verify: parse, canonical JSON again, Ed25519 check,
 *          epoch/lifetime/range checks of every entry
 * and, to split them, the canonical JSON alone (ice_plan_dump) and the
 * Ed25519 step alone over the same bytes.
 *
 *   bench_plan_sign [ENTRIES [REPEATS]]
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_plan.h"
#include "ice_time.h"

#define NOW  1700000000000ull
#define RUNS 3

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp);
	return v[RUNS / 2];
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1000;
	int reps = argc > 2 ? atoi(argv[2]) : 200;
	double t_sign[RUNS], t_verify[RUNS], t_ed_sign[RUNS], t_ed_verify[RUNS], t_dump[RUNS];
	struct ice_host_plan hp = {.epoch = 7, .lifetime_ms = 5000, .issued_ms = NOW, .n = n};
	struct ice_plan_keyring ring = {0};
	struct ice_plan_key key;
	uint8_t seed[32] = {1};
	unsigned char sig[64];
	char *js, *canon;
	size_t len;

	if (n == 0 || n > ICE_PLAN_ENTRIES_MAX || reps <= 0) {
		fprintf(stderr, "usage: bench_plan_sign [ENTRIES (1-%u) [REPEATS]]\n",
			ICE_PLAN_ENTRIES_MAX);
		return 2;
	}
	snprintf(hp.host, sizeof(hp.host), "h1");
	hp.entries = calloc(n, sizeof(*hp.entries));
	if (hp.entries == NULL || ice_plan_key_from_seed(seed, &key) < 0 ||
	    ice_plan_keyring_add(&ring, &key) < 0)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		hp.entries[i] = (struct ice_plan_entry){.qpn = 0x100 + i,
							.sport = (uint16_t)(49152 + i % 16384),
							.start_mbps = 900,
							.target_mbps = 1000,
							.path = (int32_t)(i % 8),
							.has_dcqcn = true};
		ice_dcqcn_params_default(&hp.entries[i].dcqcn);
	}
	js = ice_plan_sign(&hp, &key);
	canon = ice_plan_dump(&hp);
	if (js == NULL || canon == NULL)
		return 1;
	for (int run = 0; run < RUNS; run++) {
		uint64_t t0 = ice_now_ns();

		for (int r = 0; r < reps; r++)
			free(ice_plan_sign(&hp, &key));
		t_sign[run] = (double)(ice_now_ns() - t0) / reps / 1e3;
		t0 = ice_now_ns();
		for (int r = 0; r < reps; r++) {
			struct ice_host_plan out;
			struct ice_cfg_err err;

			if (ice_plan_verify(js, &ring, 0, NOW, &out, &err) != 0) {
				fprintf(stderr, "verify failed: %s: %s\n", err.key, err.msg);
				return 1;
			}
			ice_host_plan_fini(&out);
		}
		t_verify[run] = (double)(ice_now_ns() - t0) / reps / 1e3;
		t0 = ice_now_ns();
		for (int r = 0; r < reps; r++) {
			EVP_MD_CTX *c = EVP_MD_CTX_new();

			len = sizeof(sig);
			if (EVP_DigestSignInit(c, NULL, NULL, NULL, key.pkey) != 1 ||
			    EVP_DigestSign(c, sig, &len, (unsigned char *)canon, strlen(canon)) !=
				    1)
				return 1;
			EVP_MD_CTX_free(c);
		}
		t_ed_sign[run] = (double)(ice_now_ns() - t0) / reps / 1e3;
		t0 = ice_now_ns();
		for (int r = 0; r < reps; r++) {
			EVP_MD_CTX *c = EVP_MD_CTX_new();

			if (EVP_DigestVerifyInit(c, NULL, NULL, NULL, ring.keys[0].pkey) != 1 ||
			    EVP_DigestVerify(c, sig, len, (unsigned char *)canon, strlen(canon)) !=
				    1)
				return 1;
			EVP_MD_CTX_free(c);
		}
		t_ed_verify[run] = (double)(ice_now_ns() - t0) / reps / 1e3;
		t0 = ice_now_ns();
		for (int r = 0; r < reps; r++)
			free(ice_plan_dump(&hp));
		t_dump[run] = (double)(ice_now_ns() - t0) / reps / 1e3;
	}
	printf("plan of %u entries: %zu bytes signed (%zu with the envelope); median of %d runs "
	       "x %d\n",
	       n, strlen(canon), strlen(js), RUNS, reps);
	printf("  sign   %9.1f us/plan  (Ed25519 alone %7.1f us)\n", median(t_sign),
	       median(t_ed_sign));
	printf("  verify %9.1f us/plan  (Ed25519 alone %7.1f us)\n", median(t_verify),
	       median(t_ed_verify));
	printf("  canonical JSON alone %9.1f us/plan\n", median(t_dump));
	free(js);
	free(canon);
	free(hp.entries);
	ice_plan_keyring_fini(&ring);
	ice_plan_key_fini(&key);
	return 0;
}
