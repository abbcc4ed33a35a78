// SPDX-License-Identifier: Apache-2.0
/*
 * ice_plan.c: per-host plans: canonical JSON (jansson: sorted keys,
 * compact), HMAC-SHA256 signatures (OpenSSL libcrypto), the key file and the
 * checks an agent runs before applying a plan (ice_plan.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ice_ipc.h"
#include "ice_plan.h"
#include "ice_roce.h"
#include "ice_time.h"

#define JSON_CANON (JSON_SORT_KEYS | JSON_COMPACT)

/* ---- key ------------------------------------------------------------------------ */

int ice_plan_key_load(const char *path, struct ice_plan_key *key, struct ice_cfg_err *err)
{
	char why[512];
	ssize_t n;
	int fd, ret = 0;

	memset(key, 0, sizeof(*key));
	fd = ice_ipc_secret_open(path, why, sizeof(why));
	if (fd < 0) {
		ice_cfg_fail(err, NULL, "key", "key file %s", why);
		return fd;
	}
	n = read(fd, key->bytes, sizeof(key->bytes));
	if (n < 0) {
		ret = -errno;
		ice_cfg_fail(err, NULL, "key", "cannot read key file %s: %s", path, strerror(-ret));
		goto out;
	}
	if ((size_t)n == sizeof(key->bytes)) {
		char extra;

		if (read(fd, &extra, 1) == 1) {
			ice_cfg_fail(err, NULL, "key", "key file %s is longer than %d bytes", path,
				     ICE_PLAN_KEY_MAX);
			ret = -EINVAL;
			goto out;
		}
	}
	if (n > 0 && key->bytes[n - 1] == '\n')
		n--;
	if ((size_t)n < ICE_PLAN_KEY_MIN) {
		ice_cfg_fail(err, NULL, "key", "key file %s holds %zd bytes; expected at least %d",
			     path, n, ICE_PLAN_KEY_MIN);
		ret = -EINVAL;
		goto out;
	}
	key->len = (size_t)n;
out:
	if (ret < 0)
		OPENSSL_cleanse(key, sizeof(*key));
	close(fd);
	return ret;
}

/* ---- plans ---------------------------------------------------------------------- */

void ice_host_plan_fini(struct ice_host_plan *hp)
{
	if (hp == NULL)
		return;
	free(hp->entries);
	hp->entries = NULL;
	hp->n = 0;
}

uint32_t ice_plan_mbps(double bps)
{
	double m = bps / 1e6 + 0.5;

	if (bps <= 0)
		return 0;
	if (m < 1)
		return 1;
	return m > ICE_PLAN_RATE_MAX ? ICE_PLAN_RATE_MAX : (uint32_t)m;
}

/* ---- JSON ---------------------------------------------------------------------- */

static json_t *dcqcn_json(const struct ice_dcqcn_params *p)
{
	size_t nf;
	const struct ice_cfg_field *f = ice_dcqcn_fields(&nf);
	json_t *o = json_object();

	for (size_t i = 0; o != NULL && i < nf; i++) {
		uint32_t v;

		memcpy(&v, (const char *)p + f[i].offset, sizeof(v));
		if (json_object_set_new(o, f[i].key, json_integer(v)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *plan_json(const struct ice_host_plan *hp)
{
	json_t *entries = json_array();
	json_t *o;

	for (uint32_t i = 0; entries != NULL && i < hp->n; i++) {
		const struct ice_plan_entry *e = &hp->entries[i];
		json_t *j = json_pack("{s:I,s:I,s:I,s:I,s:I}", "qpn", (json_int_t)e->qpn, "sport",
				      (json_int_t)e->sport, "start_mbps", (json_int_t)e->start_mbps,
				      "target_mbps", (json_int_t)e->target_mbps, "path",
				      (json_int_t)e->path);

		if (j != NULL && e->has_dcqcn &&
		    json_object_set_new(j, "dcqcn", dcqcn_json(&e->dcqcn)) < 0) {
			json_decref(j);
			j = NULL;
		}
		if (j == NULL || json_array_append_new(entries, j) < 0) {
			json_decref(entries);
			return NULL;
		}
	}
	if (entries == NULL)
		return NULL;
	o = json_pack("{s:i,s:s,s:I,s:I,s:I,s:o}", "v", ICE_PLAN_VERSION, "host", hp->host, "epoch",
		      (json_int_t)hp->epoch, "lifetime_ms", (json_int_t)hp->lifetime_ms,
		      "issued_ms", (json_int_t)hp->issued_ms, "entries", entries);
	return o;
}

static int hmac_hex(const struct ice_plan_key *key, const char *msg, char hex[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (HMAC(EVP_sha256(), key->bytes, (int)key->len, (const unsigned char *)msg, strlen(msg),
		 mac, &len) == NULL ||
	    len != 32)
		return -EIO;
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

char *ice_plan_sign(const struct ice_host_plan *hp, const struct ice_plan_key *key)
{
	json_t *plan = NULL, *env = NULL;
	char *canon = NULL, *out = NULL, hex[65];

	if (key == NULL || key->len < ICE_PLAN_KEY_MIN) {
		errno = EINVAL;
		return NULL;
	}
	plan = plan_json(hp);
	if (plan == NULL)
		goto err;
	canon = json_dumps(plan, JSON_CANON);
	if (canon == NULL || hmac_hex(key, canon, hex) < 0)
		goto err;
	env = json_pack("{s:O,s:s}", "plan", plan, "sig", hex);
	if (env == NULL)
		goto err;
	out = json_dumps(env, JSON_CANON);
	if (out == NULL)
		goto err;
	free(canon);
	json_decref(plan);
	json_decref(env);
	return out;
err:
	free(canon);
	json_decref(plan);
	json_decref(env);
	errno = ENOMEM;
	return NULL;
}

/* ---- verification ------------------------------------------------------------------ */

/* An integer member in [lo, hi]; -EBADMSG when absent or not an integer,
 * -ERANGE when out of range, with err set. */
static int get_int(json_t *o, const char *name, const char *key, long long lo, long long hi,
		   long long *v, struct ice_cfg_err *err)
{
	json_t *j = json_object_get(o, name);

	if (!json_is_integer(j)) {
		ice_cfg_fail(err, NULL, key, "expected an integer, got %s",
			     j == NULL ? "nothing" : "another type");
		return -EBADMSG;
	}
	*v = json_integer_value(j);
	if (*v < lo || *v > hi) {
		ice_cfg_fail(err, NULL, key, "expected an integer in [%lld, %lld], got %lld", lo,
			     hi, *v);
		return -ERANGE;
	}
	return 0;
}

static int parse_entry(json_t *j, uint32_t i, struct ice_plan_entry *e, struct ice_cfg_err *err)
{
	size_t nf;
	const struct ice_cfg_field *f = ice_dcqcn_fields(&nf);
	char key[256];
	long long v;
	json_t *dj;
	int ret;

#define ENTRY_INT(name, lo, hi, dst)                                                               \
	do {                                                                                       \
		snprintf(key, sizeof(key), "entries[%u].%s", i, name);                             \
		ret = get_int(j, name, key, lo, hi, &v, err);                                      \
		if (ret < 0)                                                                       \
			return ret;                                                                \
		dst = v;                                                                           \
	} while (0)

	if (!json_is_object(j)) {
		snprintf(key, sizeof(key), "entries[%u]", i);
		ice_cfg_fail(err, NULL, key, "expected an object");
		return -EBADMSG;
	}
	ENTRY_INT("qpn", 0, 0xffffff, e->qpn);
	ENTRY_INT("sport", ICE_ROCE_SPORT_MIN, 65535, e->sport);
	ENTRY_INT("start_mbps", 0, ICE_PLAN_RATE_MAX, e->start_mbps);
	ENTRY_INT("target_mbps", 0, ICE_PLAN_RATE_MAX, e->target_mbps);
	ENTRY_INT("path", -1, INT32_MAX, e->path);
#undef ENTRY_INT
	if (e->target_mbps != 0 && e->start_mbps > e->target_mbps) {
		snprintf(key, sizeof(key), "entries[%u].start_mbps", i);
		ice_cfg_fail(err, NULL, key, "expected at most target_mbps (%u), got %u",
			     e->target_mbps, e->start_mbps);
		return -ERANGE;
	}
	dj = json_object_get(j, "dcqcn");
	e->has_dcqcn = dj != NULL;
	if (dj == NULL)
		return 0; /* the QP keeps its own DCQCN parameters */
	if (!json_is_object(dj) || json_object_size(dj) != nf) {
		snprintf(key, sizeof(key), "entries[%u].dcqcn", i);
		ice_cfg_fail(err, NULL, key, "expected an object with the %zu DCQCN parameters",
			     nf);
		return -EBADMSG;
	}
	for (size_t k = 0; k < nf; k++) {
		uint32_t u;

		snprintf(key, sizeof(key), "entries[%u].dcqcn.%s", i, f[k].key);
		ret = get_int(dj, f[k].key, key, (long long)f[k].min, (long long)f[k].max, &v, err);
		if (ret < 0)
			return ret;
		u = (uint32_t)v;
		memcpy((char *)&e->dcqcn + f[k].offset, &u, sizeof(u));
	}
	ret = ice_dcqcn_params_check(&e->dcqcn, err);
	if (ret < 0) {
		char msg[sizeof(err->msg)];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		snprintf(key, sizeof(key), "entries[%u].dcqcn.%s", i, err->key);
		ice_cfg_fail(err, NULL, key, "%s", msg);
		return -ERANGE;
	}
	return 0;
}

int ice_plan_verify(const char *json, const struct ice_plan_key *key, uint64_t last_epoch,
		    uint64_t now_ms, struct ice_host_plan *out, struct ice_cfg_err *err)
{
	json_t *env, *plan, *sig, *entries, *host;
	json_error_t jerr;
	char *canon = NULL, hex[65];
	struct ice_host_plan hp = {0};
	long long v;
	int ret = -EBADMSG;

	memset(out, 0, sizeof(*out));
	env = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (env == NULL) {
		ice_cfg_fail(err, NULL, "", "not JSON: line %d column %d: %s", jerr.line,
			     jerr.column, jerr.text);
		return -EBADMSG;
	}
	plan = json_object_get(env, "plan");
	sig = json_object_get(env, "sig");
	if (!json_is_object(plan) || !json_is_string(sig) || json_object_size(env) != 2) {
		ice_cfg_fail(err, NULL, "", "expected {\"plan\": {...}, \"sig\": \"<hex>\"}");
		goto out;
	}
	/* authenticity first: nothing unauthenticated is interpreted */
	canon = json_dumps(plan, JSON_CANON);
	if (canon == NULL || key == NULL || key->len < ICE_PLAN_KEY_MIN ||
	    hmac_hex(key, canon, hex) < 0) {
		ice_cfg_fail(err, NULL, "sig", "cannot compute the signature (no key?)");
		ret = -EPERM;
		goto out;
	}
	if (json_string_length(sig) != 64 || CRYPTO_memcmp(hex, json_string_value(sig), 64) != 0) {
		ice_cfg_fail(err, NULL, "sig",
			     "signature does not match the plan (wrong key or altered plan)");
		ret = -EPERM;
		goto out;
	}
	if ((ret = get_int(plan, "v", "v", ICE_PLAN_VERSION, ICE_PLAN_VERSION, &v, err)) < 0)
		goto out;
	host = json_object_get(plan, "host");
	if (!json_is_string(host) || json_string_length(host) == 0 ||
	    json_string_length(host) >= sizeof(hp.host)) {
		ice_cfg_fail(err, NULL, "host", "expected a host name of 1 to %zu characters",
			     sizeof(hp.host) - 1);
		ret = -EBADMSG;
		goto out;
	}
	snprintf(hp.host, sizeof(hp.host), "%s", json_string_value(host));
	if ((ret = get_int(plan, "epoch", "epoch", 1, (long long)ICE_PLAN_EPOCH_MAX - 1, &v, err)) <
	    0)
		goto out;
	hp.epoch = (uint64_t)v;
	if ((ret = get_int(plan, "lifetime_ms", "lifetime_ms", 1, ICE_PLAN_LIFETIME_MAX_MS, &v,
			   err)) < 0)
		goto out;
	hp.lifetime_ms = (uint32_t)v;
	if ((ret = get_int(plan, "issued_ms", "issued_ms", 0, INT64_MAX, &v, err)) < 0)
		goto out;
	hp.issued_ms = (uint64_t)v;
	if (hp.epoch <= last_epoch) {
		ice_cfg_fail(err, NULL, "epoch",
			     "epoch %llu is not newer than the applied epoch %llu",
			     (unsigned long long)hp.epoch, (unsigned long long)last_epoch);
		ret = -ESTALE;
		goto out;
	}
	if (now_ms == 0)
		now_ms = ice_wall_ms();
	if (hp.issued_ms > now_ms + ICE_PLAN_SKEW_MS) {
		ice_cfg_fail(
			err, NULL, "issued_ms",
			"plan issued in the future: at %llu ms, now %llu ms (clocks may differ "
			"by at most %u ms)",
			(unsigned long long)hp.issued_ms, (unsigned long long)now_ms,
			ICE_PLAN_SKEW_MS);
		ret = -ETIME;
		goto out;
	}
	if (hp.issued_ms + hp.lifetime_ms <= now_ms) {
		ice_cfg_fail(err, NULL, "lifetime_ms",
			     "plan expired: issued at %llu ms + lifetime %u ms <= now %llu ms",
			     (unsigned long long)hp.issued_ms, hp.lifetime_ms,
			     (unsigned long long)now_ms);
		ret = -ETIME;
		goto out;
	}
	entries = json_object_get(plan, "entries");
	if (!json_is_array(entries) || json_array_size(entries) > ICE_PLAN_ENTRIES_MAX) {
		ice_cfg_fail(err, NULL, "entries", "expected a list of at most %u entries",
			     ICE_PLAN_ENTRIES_MAX);
		ret = -EBADMSG;
		goto out;
	}
	hp.n = (uint32_t)json_array_size(entries);
	hp.entries = calloc(hp.n + 1, sizeof(*hp.entries));
	if (hp.entries == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < hp.n; i++) {
		ret = parse_entry(json_array_get(entries, i), i, &hp.entries[i], err);
		if (ret < 0)
			goto out;
	}
	*out = hp;
	hp.entries = NULL;
	ret = 0;
out:
	ice_host_plan_fini(&hp);
	free(canon);
	json_decref(env);
	return ret;
}
