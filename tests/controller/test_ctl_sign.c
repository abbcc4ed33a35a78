// SPDX-License-Identifier: Apache-2.0
/*
 * controller plans: canonical JSON, Ed25519 sign/verify round trip with key
 * ids, and every refusal with its reason: tampered value or signature, a key
 * the verifier does not hold (unknown key id), a key id forged to a trusted
 * key's, old epoch, expired lifetime, future-dated, out-of-range values; key
 * files (private and public) with loose modes, foreign owners, the wrong
 * type of key, garbage or nothing in them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "ctl.h"

#define NOW 1700000000000ull

static char dir[] = "/tmp/ice-ctl-sign-XXXXXX";

static const char *write_key(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void make_plan(struct ice_host_plan *hp)
{
	memset(hp, 0, sizeof(*hp));
	snprintf(hp->host, sizeof(hp->host), "h1");
	hp->epoch = 7;
	hp->lifetime_ms = 5000;
	hp->issued_ms = NOW;
	hp->n = 2;
	hp->entries = calloc(2, sizeof(*hp->entries));
	assert_non_null(hp->entries);
	for (uint32_t i = 0; i < 2; i++) {
		hp->entries[i].qpn = 0x100 + i;
		hp->entries[i].sport = (uint16_t)(50000 + i);
		hp->entries[i].start_mbps = 47;
		hp->entries[i].target_mbps = 50;
		hp->entries[i].path = (int32_t)i;
		hp->entries[i].has_dcqcn = true;
		ice_dcqcn_params_default(&hp->entries[i].dcqcn);
	}
	hp->entries[1].dcqcn.rp_ai_rate = 1;
	/* the second QP steered into priority 5 (DSCP 26 + ECT(0)); the first
	 * leaves both to the host */
	hp->entries[1].has_tclass = true;
	hp->entries[1].tclass = 106;
	hp->entries[1].has_prio = true;
	hp->entries[1].prio = 5;
}

static void seed_key(struct ice_plan_key *k, uint8_t fill)
{
	uint8_t seed[32];

	memset(seed, fill, sizeof(seed));
	assert_int_equal(ice_plan_key_from_seed(seed, k), 0);
}

/* a ring trusting k's public half only */
static void ring_of(struct ice_plan_keyring *r, const struct ice_plan_key *k)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(ice_plan_keyring_add(r, k), 0);
}

static int verify(const char *json, const struct ice_plan_keyring *r, uint64_t last, uint64_t now,
		  struct ice_cfg_err *err)
{
	struct ice_host_plan out;
	int ret = ice_plan_verify(json, r, last, now, &out, err);

	ice_host_plan_fini(&out);
	return ret;
}

/* The envelope of a plan text as a controller holding key would sign it
 * (values ice_plan_sign cannot write: a uint8_t holds no 256). */
static char *sign_text(const char *canon, const struct ice_plan_key *key)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char sig[64];
	size_t len = sizeof(sig), n = strlen(canon) + 256;
	char *out = malloc(n), hex[129];

	assert_non_null(ctx);
	assert_non_null(out);
	assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL, key->pkey), 1);
	assert_int_equal(
		EVP_DigestSign(ctx, sig, &len, (const unsigned char *)canon, strlen(canon)), 1);
	EVP_MD_CTX_free(ctx);
	for (size_t i = 0; i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", sig[i]);
	snprintf(out, n, "{\"kid\":\"%s\",\"plan\":%s,\"sig\":\"%s\"}", key->kid, canon, hex);
	return out;
}

/* PEM of another type of key (RSA), private or public */
static char *rsa_pem(bool priv)
{
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	assert_non_null(rsa);
	assert_int_equal(priv ? PEM_write_bio_PrivateKey(b, rsa, NULL, NULL, 0, NULL, NULL)
			      : PEM_write_bio_PUBKEY(b, rsa),
			 1);
	n = BIO_get_mem_data(b, &data);
	out = strndup(data, (size_t)n);
	BIO_free(b);
	EVP_PKEY_free(rsa);
	return out;
}

static void test_round_trip(void **state)
{
	struct ice_host_plan hp, out;
	struct ice_cfg_err err;
	struct ice_plan_keyring r;
	struct ice_plan_key k, pub;
	const char *sig;
	char *js, *pem, want[64];

	seed_key(&k, 1);
	ring_of(&r, &k);
	assert_true(k.priv);
	assert_false(r.keys[0].priv);
	assert_string_equal(r.keys[0].kid, k.kid);
	make_plan(&hp);
	js = ice_plan_sign(&hp, &k);
	assert_non_null(js);
	/* canonical: compact, sorted keys; the key id first, 128 hex digits of
	 * signature last */
	snprintf(want, sizeof(want), "{\"kid\":\"%s\",\"plan\":{\"entries\":[{", k.kid);
	assert_memory_equal(js, want, strlen(want));
	assert_non_null(strstr(js, "[{\"dcqcn\":{\"enable\":1,"));
	assert_null(strstr(js, ", "));
	sig = strstr(js, "\"sig\":\"");
	assert_non_null(sig);
	assert_int_equal(strlen(sig), strlen("\"sig\":\"\"}") + ICE_PLAN_SIG_HEX);
	assert_int_equal(strlen(k.kid), ICE_PLAN_KID_HEX);
	{ /* the whole envelope is in canonical form, as jansson writes it */
		json_t *env = json_loads(js, JSON_REJECT_DUPLICATES, NULL);
		char *again = json_dumps(env, JSON_SORT_KEYS | JSON_COMPACT);

		assert_string_equal(again, js);
		free(again);
		json_decref(env);
	}
	assert_int_equal(ice_plan_verify(js, &r, 6, NOW + 1, &out, &err), 0);
	assert_string_equal(out.host, "h1");
	assert_int_equal(out.epoch, 7);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.entries[1].sport, 50001);
	assert_true(out.entries[1].has_dcqcn);
	assert_int_equal(out.entries[1].dcqcn.rp_ai_rate, 1);
	assert_true(out.entries[1].has_tclass);
	assert_int_equal(out.entries[1].tclass, 106);
	assert_true(out.entries[1].has_prio);
	assert_int_equal(out.entries[1].prio, 5);
	assert_false(out.entries[0].has_tclass);
	assert_false(out.entries[0].has_prio);
	assert_non_null(strstr(js, "\"prio\":5,\"qpn\":257,"));
	assert_non_null(strstr(js, "\"target_mbps\":50,\"tclass\":106}"));
	ice_host_plan_fini(&out);
	free(js);
	/* an entry without DCQCN parameters: no "dcqcn" (the QP keeps its own) */
	hp.entries[1].has_dcqcn = false;
	js = ice_plan_sign(&hp, &k);
	assert_non_null(js);
	assert_null(strstr(strstr(js, "\"qpn\":257"), "dcqcn"));
	assert_int_equal(ice_plan_verify(js, &r, 6, NOW + 1, &out, &err), 0);
	assert_true(out.entries[0].has_dcqcn);
	assert_false(out.entries[1].has_dcqcn);
	hp.entries[1].has_dcqcn = true;
	assert_int_equal(out.entries[0].start_mbps, 47);
	assert_memory_equal(&out.entries[0].dcqcn, &hp.entries[0].dcqcn,
			    sizeof(struct ice_dcqcn_params));
	ice_host_plan_fini(&out);
	/* a public key cannot sign; the PEM of the public half, loaded as an
	 * agent would, verifies what the private key signed */
	assert_null(ice_plan_sign(&hp, &r.keys[0]));
	assert_int_equal(errno, EINVAL);
	pem = ice_plan_key_pem(&k, false);
	assert_non_null(pem);
	assert_non_null(strstr(pem, "-----BEGIN PUBLIC KEY-----"));
	ice_plan_keyring_fini(&r);
	assert_int_equal(ice_plan_keyring_load(write_key("rt.pub", pem, 0644), &r, &err), 0);
	free(pem);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.keys[0].kid, k.kid);
	assert_int_equal(verify(js, &r, 6, NOW + 1, &err), 0);
	/* the private PEM round trip: same key id, same signature (Ed25519 is
	 * deterministic) */
	pem = ice_plan_key_pem(&k, true);
	assert_non_null(strstr(pem, "-----BEGIN PRIVATE KEY-----"));
	assert_int_equal(ice_plan_key_load(write_key("rt.key", pem, 0600), &pub, &err), 0);
	free(pem);
	assert_string_equal(pub.kid, k.kid);
	{
		char *again = ice_plan_sign(&hp, &pub), *orig = ice_plan_sign(&hp, &k);

		assert_string_equal(again, orig);
		free(again);
		free(orig);
	}
	ice_plan_key_fini(&pub);
	free(js);
	ice_plan_keyring_fini(&r);
	ice_plan_key_fini(&k);
	ice_host_plan_fini(&hp);
}

static void test_refusals(void **state)
{
	struct ice_host_plan hp;
	struct ice_cfg_err err;
	struct ice_plan_key key, k2;
	struct ice_plan_keyring k, none = {0};
	char *js, *bad, *at;

	seed_key(&key, 1);
	seed_key(&k2, 2);
	ring_of(&k, &key);
	make_plan(&hp);
	js = ice_plan_sign(&hp, &key);
	assert_non_null(js);

	/* tampered value: another source port */
	bad = strdup(js);
	at = strstr(bad, "\"sport\":50000");
	assert_non_null(at);
	at[strlen("\"sport\":5000")] = '7';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	assert_string_equal(err.key, "sig");
	free(bad);
	/* tampered signature */
	bad = strdup(js);
	at = strstr(bad, "\"sig\":\"");
	at[7] = at[7] == '0' ? '1' : '0';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	free(bad);
	/* a signature that is not 128 hex digits */
	bad = strdup(js);
	at = strstr(bad, "\"sig\":\"");
	at[7] = 'X';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	free(bad);
	/* a key the verifier does not hold: unknown key id, its own reason */
	free(js);
	js = ice_plan_sign(&hp, &k2);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ENOKEY);
	assert_string_equal(err.key, "kid");
	assert_non_null(strstr(err.msg, "unknown key id"));
	assert_non_null(strstr(err.msg, k2.kid));
	assert_non_null(strstr(err.msg, key.kid)); /* says which it trusts */
	assert_int_equal(verify(js, &none, 0, NOW, &err), -ENOKEY);
	assert_int_equal(verify(js, NULL, 0, NOW, &err), -ENOKEY);
	/* k2's signature under the trusted key's id: a bad signature */
	bad = strdup(js);
	memcpy(strstr(bad, k2.kid), key.kid, ICE_PLAN_KID_HEX);
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	assert_string_equal(err.key, "sig");
	assert_non_null(strstr(err.msg, "signed by another key"));
	free(bad);
	/* a key id that is not one */
	bad = strdup(js);
	strstr(bad, k2.kid)[3] = 'Z';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EBADMSG);
	assert_string_equal(err.key, "kid");
	free(bad);
	free(js);
	js = ice_plan_sign(&hp, &key);
	/* without a key id (the HMAC era's envelope) */
	bad = strdup(strstr(js, "\"plan\"") - 1);
	bad[0] = '{';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EBADMSG);
	free(bad);
	/* old epoch: equal and older */
	assert_int_equal(verify(js, &k, 7, NOW, &err), -ESTALE);
	assert_string_equal(err.key, "epoch");
	assert_int_equal(verify(js, &k, 9, NOW, &err), -ESTALE);
	/* expired */
	assert_int_equal(verify(js, &k, 0, NOW + 5000, &err), -ETIME);
	assert_string_equal(err.key, "lifetime_ms");
	assert_int_equal(verify(js, &k, 0, NOW + 4999, &err), 0);
	/* issued in the future beyond the clock-skew allowance (a replay
	 * prepared ahead, or a controller with a wrong clock) */
	assert_int_equal(verify(js, &k, 0, NOW - ICE_PLAN_SKEW_MS - 1, &err), -ETIME);
	assert_string_equal(err.key, "issued_ms");
	assert_non_null(strstr(err.msg, "future"));
	assert_int_equal(verify(js, &k, 0, NOW - ICE_PLAN_SKEW_MS, &err), 0);
	/* not JSON, not a plan */
	assert_int_equal(verify("{\"plan\":", &k, 0, NOW, &err), -EBADMSG);
	assert_int_equal(verify("{\"kid\":\"0011223344556677\",\"plan\":{},\"sig\":\"00\","
				"\"x\":1}",
				&k, 0, NOW, &err),
			 -EBADMSG);
	free(js);

	/* out-of-range values, correctly signed: refused with the field */
	hp.entries[1].sport = 1000;
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[1].sport");
	assert_non_null(strstr(err.msg, "[49152, 65535]"));
	free(js);
	hp.entries[1].sport = 50001;
	hp.entries[0].dcqcn.rp_gd = 40;
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].dcqcn.rp_gd");
	free(js);
	hp.entries[0].dcqcn.rp_gd = 11;
	hp.entries[0].dcqcn.rp_max_rate = 10;
	hp.entries[0].dcqcn.rp_min_rate = 20;
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].dcqcn.rp_min_rate");
	free(js);
	hp.entries[0].dcqcn.rp_min_rate = 1;
	hp.entries[0].target_mbps = 500000;
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].target_mbps");
	free(js);
	hp.entries[0].target_mbps = 40; /* start 47 > target 40 */
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].start_mbps");
	free(js);
	hp.entries[0].target_mbps = 50;
	/* a priority past 7, a traffic class past 255: refused with the field */
	hp.entries[1].prio = 8;
	js = ice_plan_sign(&hp, &key);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[1].prio");
	assert_non_null(strstr(err.msg, "[0, 7]"));
	free(js);
	hp.entries[1].prio = 7;
	{
		char *canon = ice_plan_dump(&hp), *t;

		assert_non_null(canon);
		js = sign_text(canon, &key);
		assert_int_equal(verify(js, &k, 0, NOW, &err), 0);
		free(js);
		t = strstr(canon, "\"tclass\":106");
		assert_non_null(t);
		memcpy(t + strlen("\"tclass\":"), "256", 3);
		js = sign_text(canon, &key);
		assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
		assert_string_equal(err.key, "entries[1].tclass");
		assert_non_null(strstr(err.msg, "[0, 255]"));
		free(js);
		memcpy(t + strlen("\"tclass\":"), "\"1\"", 3);
		js = sign_text(canon, &key);
		assert_int_equal(verify(js, &k, 0, NOW, &err), -EBADMSG);
		assert_string_equal(err.key, "entries[1].tclass");
		free(js);
		free(canon);
	}
	ice_host_plan_fini(&hp);
	ice_plan_keyring_fini(&k);
	ice_plan_key_fini(&key);
	ice_plan_key_fini(&k2);
}

/* err as one line, which must name the file and say what */
static void says(const struct ice_cfg_err *err, const char *path, const char *what)
{
	char buf[768];

	ice_cfg_err_str(err, buf, sizeof(buf));
	if (strstr(buf, path) == NULL || strstr(buf, what) == NULL)
		fail_msg("'%s' does not name %s and say '%s'", buf, path, what);
}

static void test_key_files(void **state)
{
	struct ice_cfg_err err;
	struct ice_plan_key k, good;
	struct ice_plan_keyring r;
	char *priv, *pub, *rsa, text[8192];
	const char *p;

	seed_key(&good, 7);
	priv = ice_plan_key_pem(&good, true);
	pub = ice_plan_key_pem(&good, false);
	assert_non_null(priv);
	assert_non_null(pub);

	/* the private key: 0600 or 0400, the service's user or root */
	p = write_key("open", priv, 0644);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EPERM);
	says(&err, p, "group or others (mode 0644)");
	p = write_key("grp", priv, 0640);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EPERM);
	says(&err, p, "expected mode 0600 or 0400");
	assert_int_equal(ice_plan_key_load(write_key("ok", priv, 0400), &k, &err), 0);
	assert_string_equal(k.kid, good.kid);
	ice_plan_key_fini(&k);
	assert_int_equal(ice_plan_key_load("/nonexistent/ice.key", &k, &err), -ENOENT);
	/* what is in it */
	p = write_key("empty", "", 0600);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, "empty");
	p = write_key("junk", "0123456789abcdef0123456789abcdef\n", 0600); /* an HMAC key */
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, "no PEM block; expected an Ed25519 private key in PEM PKCS#8");
	p = write_key("pub-as-key", pub, 0600);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, "a public key");
	rsa = rsa_pem(true);
	p = write_key("rsa.key", rsa, 0600);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, ":1: an RSA key; expected an Ed25519 key");
	free(rsa);
	snprintf(text, sizeof(text), "%s%s", priv, priv);
	p = write_key("two.key", text, 0600);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, "a second PEM block");
	snprintf(text, sizeof(text), "%.40s\n!!!!\n-----END PRIVATE KEY-----\n", priv);
	p = write_key("broken.key", text, 0600);
	assert_int_equal(ice_plan_key_load(p, &k, &err), -EINVAL);
	says(&err, p, ":1: a broken PEM block");
	assert_null(k.pkey);

	/* public keys: readable by all, written only by the user or root */
	p = write_key("gw.pub", pub, 0664);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EPERM);
	says(&err, p, "writable by group or others (mode 0664)");
	p = write_key("ww.pub", pub, 0646);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EPERM);
	assert_int_equal(ice_plan_keyring_load(write_key("ro.pub", pub, 0444), &r, &err), 0);
	ice_plan_keyring_fini(&r);
	rsa = rsa_pem(false);
	snprintf(text, sizeof(text), "# the new key\n%s", rsa);
	p = write_key("rsa.pub", text, 0644);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EINVAL);
	says(&err, p, ":2: an RSA key; expected an Ed25519 key");
	free(rsa);
	p = write_key("empty.pub", "", 0644);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EINVAL);
	says(&err, p, "empty");
	p = write_key("priv.pub", priv, 0644);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EINVAL);
	says(&err, p, "a private key; an agent holds public keys only");
	/* up to ICE_PLAN_PUBKEYS_MAX keys, text between them ignored */
	text[0] = '\0';
	for (int i = 0; i <= ICE_PLAN_PUBKEYS_MAX; i++) {
		struct ice_plan_key ki;
		char *pi;

		seed_key(&ki, (uint8_t)(20 + i));
		pi = ice_plan_key_pem(&ki, false);
		if (i < ICE_PLAN_PUBKEYS_MAX) {
			p = write_key("four.pub", text, 0644);
			if (i > 0) {
				assert_int_equal(ice_plan_keyring_load(p, &r, &err), 0);
				assert_int_equal(r.n, (unsigned)i);
				ice_plan_keyring_fini(&r);
			}
		}
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "key %d\n%s", i, pi);
		free(pi);
		ice_plan_key_fini(&ki);
	}
	p = write_key("five.pub", text, 0644);
	assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EINVAL);
	says(&err, p, "more than 4 keys");
	assert_int_equal(r.n, 0);
	/* owned by another user (not root): refused; needs root to chown */
	if (geteuid() == 0) {
		p = write_key("foreign", priv, 0600);
		assert_int_equal(chown(p, 12345, 12345), 0);
		assert_int_equal(ice_plan_key_load(p, &k, &err), -EPERM);
		says(&err, p, "owned by uid 12345");
		p = write_key("foreign.pub", pub, 0644);
		assert_int_equal(chown(p, 12345, 12345), 0);
		assert_int_equal(ice_plan_keyring_load(p, &r, &err), -EPERM);
		says(&err, p, "owned by uid 12345");
	}
	free(priv);
	free(pub);
	ice_plan_key_fini(&good);
}

static void test_build_from_demand(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	struct ctl_planner *p;
	struct ctl_demand d;
	struct ice_host_plan *hps;
	uint32_t nh, nics[4];
	struct ice_plan_key key;
	struct ice_plan_keyring k;

	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	p = ctl_planner_new(t);
	for (int i = 0; i < 4; i++)
		nics[i] = topo_nic(t, (uint32_t)i * 2)->id;
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_ALL_REDUCE, 1 << 20, nics, 4, 2,
						   1, 0, 0x10),
			 0);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_sports(ctl_pathmap_model(p), &d), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 0.95), 0);
	assert_int_equal(ctl_host_plans_build(t, &d, NULL, 3, 2000, NOW, &hps, &nh), 0);
	assert_int_equal(nh, 4);
	seed_key(&key, 1);
	ring_of(&k, &key);
	for (uint32_t h = 0; h < nh; h++) {
		struct ice_host_plan out;
		struct ice_cfg_err err;
		char *js = ice_plan_sign(&hps[h], &key);

		assert_int_equal(hps[h].n, 2);
		assert_true(hps[h].entries[0].start_mbps > 0);
		/* DCQCN climbs back to the fair share, not past it */
		for (uint32_t i = 0; i < hps[h].n; i++)
			assert_int_equal(hps[h].entries[i].dcqcn.rp_max_rate,
					 hps[h].entries[i].target_mbps);
		assert_int_equal(ice_plan_verify(js, &k, 2, NOW, &out, &err), 0);
		/* no policy: no class (the host's own) */
		assert_false(out.entries[0].has_tclass || out.entries[0].has_prio);
		ice_host_plan_fini(&out);
		free(js);
	}
	ctl_host_plans_free(hps, nh);
	{ /* a policy with classes: each QP its profile's priority and the
	   * traffic class of its DSCP, signed and verified */
		static const char pol_text[] = "profiles:\n"
					       "  roce: {rp_ai_rate: 1, priority: 3, dscp: 26}\n"
					       "  bulk: {rp_gd: 9, priority: 1, dscp: 10}\n"
					       "rules:\n"
					       "  - {op: all_reduce, profile: bulk}\n"
					       "default: roce\n";
		struct ctl_policy *pol =
			ctl_policy_load_string("t.yaml", pol_text, strlen(pol_text), NULL, NULL);
		struct ice_host_plan out;
		struct ice_cfg_err err;
		int found = 0;
		char *js;

		assert_non_null(pol);
		assert_int_equal(ctl_host_plans_build(t, &d, pol, 4, 2000, NOW, &hps, &nh), 0);
		js = ice_plan_sign(&hps[0], &key);
		assert_non_null(strstr(js, "\"prio\":1,"));
		assert_non_null(strstr(js, "\"tclass\":40}"));
		assert_int_equal(ice_plan_verify(js, &k, 2, NOW, &out, &err), 0);
		for (uint32_t i = 0; i < out.n; i++) {
			assert_true(out.entries[i].has_prio && out.entries[i].has_tclass);
			assert_int_equal(out.entries[i].prio, 1);
			assert_int_equal(out.entries[i].tclass, 10 << 2);
			assert_int_equal(out.entries[i].dcqcn.rp_gd, 9);
		}
		ice_host_plan_fini(&out);
		free(js);
		ctl_host_plans_free(hps, nh);
		/* the default profile's class for what no rule matches */
		d.flows[0].op = CTL_COLL_BROADCAST;
		assert_int_equal(ctl_host_plans_build(t, &d, pol, 5, 2000, NOW, &hps, &nh), 0);
		for (uint32_t h = 0; h < nh; h++)
			for (uint32_t i = 0; i < hps[h].n; i++)
				if (hps[h].entries[i].qpn == d.flows[0].lqpn) {
					assert_int_equal(hps[h].entries[i].prio, 3);
					assert_int_equal(hps[h].entries[i].tclass, 104);
					found++;
				}
		assert_int_equal(found, 1);
		ctl_policy_free(pol);
	}
	ice_plan_keyring_fini(&k);
	ice_plan_key_fini(&key);
	ctl_host_plans_free(hps, nh);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static int setup(void **state)
{
	return mkdtemp(dir) == NULL ? -1 : 0;
}

/* every key file the tests wrote, whatever its name, then the folder */
static int teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d != NULL)
		closedir(d);
	return rmdir(dir) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_key_files),
		cmocka_unit_test(test_build_from_demand),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
