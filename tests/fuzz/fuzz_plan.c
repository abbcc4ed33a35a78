// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_plan: libFuzzer harness for the plan an agent accepts from Redis
 * (common/ice_plan.c: ice_plan_verify).
 *
 * A plan's fields are interpreted only after its Ed25519 signature checks,
 * so random envelopes would stop at the signature. The input is therefore
 * the plan object itself: the harness signs it with a fixed key (from a
 * fixed seed), as a controller (or an attacker holding its private key)
 * would, and hands the envelope to ice_plan_verify with that key's public
 * half as the only trusted key; the raw input is also verified as an
 * envelope, which must fail (it cannot carry a valid signature). A plan that
 * verifies must hold every documented range, sign again (ice_plan_sign) and
 * verify to the same values. Any difference aborts.
 */
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_plan.h"
#include "ice_roce.h"

#define FUZZ_NOW_MS 1800000000000ull

#define fuzz_check(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_plan: %s:%d: check failed: %s\n", __FILE__,          \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ice_plan_key *fuzz_key(void)
{
	static struct ice_plan_key k;

	if (k.pkey == NULL) {
		uint8_t seed[32];

		for (unsigned int i = 0; i < 32; i++)
			seed[i] = (uint8_t)(0x5a ^ i);
		fuzz_check(ice_plan_key_from_seed(seed, &k) == 0);
	}
	return &k;
}

/* the agent's trusted keys: the fuzz key's public half only */
static const struct ice_plan_keyring *fuzz_ring(void)
{
	static struct ice_plan_keyring ring;

	if (ring.n == 0)
		fuzz_check(ice_plan_keyring_add(&ring, fuzz_key()) == 0);
	return &ring;
}

/* {"kid": <the key's id>, "plan": <plan>, "sig": Ed25519(canonical plan)};
 * NULL when the input is not a JSON object. */
static char *envelope(const char *text)
{
	json_t *plan = json_loads(text, JSON_REJECT_DUPLICATES, NULL), *env = NULL;
	unsigned char sig[64];
	size_t len = sizeof(sig);
	char *canon = NULL, *out = NULL, hex[129];
	EVP_MD_CTX *ctx = NULL;

	if (!json_is_object(plan))
		goto out;
	canon = json_dumps(plan, JSON_SORT_KEYS | JSON_COMPACT);
	ctx = EVP_MD_CTX_new();
	if (canon == NULL || ctx == NULL ||
	    EVP_DigestSignInit(ctx, NULL, NULL, NULL, fuzz_key()->pkey) != 1 ||
	    EVP_DigestSign(ctx, sig, &len, (const unsigned char *)canon, strlen(canon)) != 1 ||
	    len != sizeof(sig))
		goto out;
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", sig[i]);
	env = json_pack("{s:s,s:O,s:s}", "kid", fuzz_key()->kid, "plan", plan, "sig", hex);
	if (env != NULL)
		out = json_dumps(env, JSON_SORT_KEYS | JSON_COMPACT);
out:
	EVP_MD_CTX_free(ctx);
	free(canon);
	json_decref(plan);
	json_decref(env);
	return out;
}

static void check_ranges(const struct ice_host_plan *p)
{
	fuzz_check(p->epoch >= 1);
	fuzz_check(p->host[0] != '\0' && strlen(p->host) < sizeof(p->host));
	fuzz_check(p->lifetime_ms >= 1);
	fuzz_check(p->issued_ms <= FUZZ_NOW_MS + ICE_PLAN_SKEW_MS);
	fuzz_check(p->issued_ms + p->lifetime_ms > FUZZ_NOW_MS);
	fuzz_check(p->n == 0 || p->entries != NULL);
	for (uint32_t i = 0; i < p->n; i++) {
		const struct ice_plan_entry *e = &p->entries[i];

		fuzz_check(e->qpn <= 0xffffff);
		fuzz_check(e->sport >= ICE_ROCE_SPORT_MIN);
		fuzz_check(e->target_mbps == 0 || e->start_mbps <= e->target_mbps);
		fuzz_check(!e->has_prio || e->prio <= ICE_PLAN_PRIO_MAX);
		fuzz_check(e->start_mbps <= ICE_PLAN_RATE_MAX &&
			   e->target_mbps <= ICE_PLAN_RATE_MAX);
	}
}

static void round_trip(const struct ice_host_plan *p)
{
	struct ice_host_plan q;
	struct ice_cfg_err err;
	char *js = ice_plan_sign(p, fuzz_key());

	fuzz_check(js != NULL);
	fuzz_check(ice_plan_verify(js, fuzz_ring(), 0, FUZZ_NOW_MS, &q, &err) == 0);
	fuzz_check(strcmp(q.host, p->host) == 0 && q.epoch == p->epoch &&
		   q.lifetime_ms == p->lifetime_ms && q.issued_ms == p->issued_ms && q.n == p->n);
	for (uint32_t i = 0; i < p->n; i++) {
		const struct ice_plan_entry *a = &p->entries[i], *b = &q.entries[i];

		fuzz_check(a->qpn == b->qpn && a->sport == b->sport &&
			   a->start_mbps == b->start_mbps && a->target_mbps == b->target_mbps &&
			   a->path == b->path && a->has_dcqcn == b->has_dcqcn &&
			   a->has_tclass == b->has_tclass && a->has_prio == b->has_prio &&
			   (!a->has_tclass || a->tclass == b->tclass) &&
			   (!a->has_prio || a->prio == b->prio));
		fuzz_check(!a->has_dcqcn || memcmp(&a->dcqcn, &b->dcqcn, sizeof(a->dcqcn)) == 0);
	}
	ice_host_plan_fini(&q);
	free(js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *env;
	struct ice_host_plan p;
	struct ice_cfg_err err;
	int ret;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	/* the raw input as an envelope: never accepted without the key's signature */
	ret = ice_plan_verify(text, fuzz_ring(), 0, FUZZ_NOW_MS, &p, &err);
	fuzz_check(ret <= 0);
	ice_host_plan_fini(&p);
	env = envelope(text);
	if (env != NULL) {
		ret = ice_plan_verify(env, fuzz_ring(), 0, FUZZ_NOW_MS, &p, &err);
		fuzz_check(ret == 0 || ret == -EBADMSG || ret == -ERANGE || ret == -ETIME ||
			   ret == -ESTALE);
		if (ret == 0) {
			check_ranges(&p);
			round_trip(&p);
		} else {
			fuzz_check(p.entries == NULL && p.n == 0); /* nothing half-filled */
		}
		ice_host_plan_fini(&p);
		free(env);
	}
	free(text);
	return 0;
}
