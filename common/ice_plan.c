// SPDX-License-Identifier: Apache-2.0
/*
 * ice_plan.c: per-host plans: canonical JSON (jansson: sorted keys,
 * compact), Ed25519 signatures and key files (OpenSSL libcrypto), and the
 * checks an agent runs before applying a plan (ice_plan.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ice_ipc.h"
#include "ice_plan.h"
#include "ice_roce.h"
#include "ice_time.h"

#define JSON_CANON  (JSON_SORT_KEYS | JSON_COMPACT)
#define ED25519_LEN 32 /* raw public key, private seed */
#define SIG_LEN	    64

/* ---- keys ----------------------------------------------------------------------- */

static void hex_of(const unsigned char *b, size_t n, char *hex)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = d[b[i] >> 4];
		hex[2 * i + 1] = d[b[i] & 15];
	}
	hex[2 * n] = '\0';
}

/* The key id: hex of the first 8 bytes of SHA-256 over the raw public key. */
static int kid_of(EVP_PKEY *pkey, char kid[ICE_PLAN_KID_HEX + 1])
{
	unsigned char raw[ED25519_LEN], md[EVP_MAX_MD_SIZE];
	size_t len = sizeof(raw);
	unsigned int mdlen = 0;

	if (EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1 || len != ED25519_LEN ||
	    EVP_Digest(raw, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8)
		return -EINVAL;
	hex_of(md, ICE_PLAN_KID_HEX / 2, kid);
	return 0;
}

static int key_set(struct ice_plan_key *key, EVP_PKEY *pkey, bool priv)
{
	memset(key, 0, sizeof(*key));
	if (pkey == NULL || kid_of(pkey, key->kid) < 0) {
		EVP_PKEY_free(pkey);
		return -EINVAL;
	}
	key->pkey = pkey;
	key->priv = priv;
	return 0;
}

void ice_plan_key_fini(struct ice_plan_key *key)
{
	if (key == NULL)
		return;
	EVP_PKEY_free(key->pkey); /* clears the private bytes */
	memset(key, 0, sizeof(*key));
}

int ice_plan_key_generate(struct ice_plan_key *key)
{
	EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	return pkey == NULL ? -EIO : key_set(key, pkey, true);
}

int ice_plan_key_from_seed(const uint8_t seed[32], struct ice_plan_key *key)
{
	return key_set(key, EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32), true);
}

char *ice_plan_key_pem(const struct ice_plan_key *key, bool priv)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;
	int ok;

	if (b == NULL || key == NULL || key->pkey == NULL || (priv && !key->priv)) {
		BIO_free(b);
		errno = EINVAL;
		return NULL;
	}
	ok = priv ? PEM_write_bio_PrivateKey(b, key->pkey, NULL, NULL, 0, NULL, NULL)
		  : PEM_write_bio_PUBKEY(b, key->pkey);
	n = BIO_get_mem_data(b, &data);
	if (ok == 1 && n > 0 && (out = malloc((size_t)n + 1)) != NULL) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
	}
	if (priv && n > 0) /* a memory BIO's free does not clear it */
		OPENSSL_cleanse(data, (size_t)n);
	BIO_free(b);
	if (out == NULL)
		errno = ok == 1 ? ENOMEM : EIO;
	return out;
}

/* err for a key file's content: "FILE:LINE: msg" (line 0: none) */
__attribute__((format(printf, 4, 5))) static void
key_fail(struct ice_cfg_err *err, const char *path, int line, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", path);
	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

/* A key file's text (at most ICE_PLAN_KEYFILE_MAX bytes), read from the
 * checked fd, which it closes. */
static int file_text(int fd, const char *path, char *buf, size_t *len, struct ice_cfg_err *err)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(fd, buf + got, ICE_PLAN_KEYFILE_MAX + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			close(fd);
			key_fail(err, path, 0, "cannot read: %s", strerror(-ret));
			return ret;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > ICE_PLAN_KEYFILE_MAX) {
			close(fd);
			key_fail(err, path, 0, "longer than %d bytes; expected PEM key(s)",
				 ICE_PLAN_KEYFILE_MAX);
			return -EINVAL;
		}
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	if (got == 0) {
		key_fail(err, path, 0, "empty; expected PEM key(s) (icectl keygen)");
		return -EINVAL;
	}
	return 0;
}

/* A key file opened with its check (the private key's or the public keys'),
 * read into *text (malloc'd, the caller frees) and wrapped in *b (a memory
 * BIO over it). 0, or a negative errno with err filled. */
static int key_file_bio(const char *path, bool secret, char **text, size_t *len, BIO **b,
			struct ice_cfg_err *err)
{
	char why[512];
	int fd, ret;

	*text = NULL;
	*b = NULL;
	fd = secret ? ice_ipc_secret_open(path, why, sizeof(why))
		    : ice_ipc_public_open(path, why, sizeof(why));
	if (fd < 0) {
		ice_cfg_fail(err, NULL, "", "%s key file %s", secret ? "private" : "public", why);
		return fd;
	}
	*text = malloc(ICE_PLAN_KEYFILE_MAX + 1);
	if (*text == NULL) {
		close(fd);
		return -ENOMEM;
	}
	ret = file_text(fd, path, *text, len, err);
	if (ret < 0)
		return ret;
	*b = BIO_new_mem_buf(*text, (int)*len);
	return *b == NULL ? -ENOMEM : 0;
}

/* PEM blocks one by one: 1 with name/data (OPENSSL_free both) and the line the
 * block starts on, 0 at the end, -EINVAL on a broken block. */
static int pem_next(BIO *b, const char *text, size_t len, char **name, unsigned char **data,
		    long *dlen, int *line)
{
	size_t at = len - (size_t)BIO_pending(b);
	const char *start = strstr(text + at, "-----BEGIN");
	char *header = NULL;
	int ok;

	*line = 1;
	for (const char *c = text; start != NULL && c < start; c++)
		*line += *c == '\n';
	ERR_clear_error();
	ok = PEM_read_bio(b, name, &header, data, dlen);
	OPENSSL_free(header);
	if (ok == 1)
		return 1;
	ok = ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_NO_START_LINE;
	ERR_clear_error();
	return ok ? 0 : -EINVAL;
}

static const char *type_of(EVP_PKEY *k)
{
	const char *t = EVP_PKEY_get0_type_name(k);

	return t != NULL ? t : "unknown";
}

int ice_plan_key_load(const char *path, struct ice_plan_key *key, struct ice_cfg_err *err)
{
	char *text = NULL, *name = NULL;
	unsigned char *data = NULL;
	const unsigned char *p;
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	EVP_PKEY *pkey = NULL;
	size_t len = 0;
	long dlen = 0;
	int ret, line;
	BIO *b = NULL;

	memset(key, 0, sizeof(*key));
	ret = key_file_bio(path, true, &text, &len, &b, err);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	switch (pem_next(b, text, len, &name, &data, &dlen, &line)) {
	case 1:
		break;
	case 0:
		key_fail(err, path, 0,
			 "holds no PEM block; expected an Ed25519 private key in PEM PKCS#8 "
			 "('BEGIN PRIVATE KEY', icectl keygen)");
		goto out;
	default:
		key_fail(err, path, line, "a broken PEM block (base64 or END line)");
		goto out;
	}
	if (strcmp(name, "PRIVATE KEY") != 0) {
		const char *hint = strcmp(name, "PUBLIC KEY") == 0
					   ? "a public key: the controller signs with the private "
					     "key (NAME.key of icectl keygen)"
				   : strcmp(name, "ENCRYPTED PRIVATE KEY") == 0
					   ? "an encrypted key: the daemon reads keys without a "
					     "passphrase"
					   : "another format or type of key";

		key_fail(err, path, line,
			 "a '%s' block, %s; expected an Ed25519 private key in PEM "
			 "PKCS#8 ('BEGIN PRIVATE KEY')",
			 name, hint);
		goto out;
	}
	p = data;
	p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, dlen);
	pkey = p8 != NULL ? EVP_PKCS82PKEY(p8) : NULL;
	if (pkey == NULL) {
		key_fail(err, path, line, "not a valid PKCS#8 private key");
		goto out;
	}
	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
		key_fail(err, path, line, "an %s key; expected an Ed25519 key", type_of(pkey));
		goto out;
	}
	OPENSSL_clear_free(data, (size_t)dlen);
	OPENSSL_free(name);
	data = NULL;
	name = NULL;
	if (pem_next(b, text, len, &name, &data, &dlen, &line) != 0) {
		key_fail(err, path, line, "a second PEM block; expected one key");
		goto out;
	}
	ret = key_set(key, pkey, true);
	pkey = NULL;
	if (ret < 0)
		key_fail(err, path, 0, "cannot take the public key of the private key");
out:
	if (data != NULL)
		OPENSSL_clear_free(data, (size_t)dlen);
	OPENSSL_free(name);
	PKCS8_PRIV_KEY_INFO_free(p8);
	EVP_PKEY_free(pkey);
	BIO_free(b);
	ERR_clear_error(); /* what OpenSSL queued about a refused file */
	if (text != NULL)
		OPENSSL_cleanse(text, ICE_PLAN_KEYFILE_MAX + 1);
	free(text);
	return ret;
}

int ice_plan_keyring_add(struct ice_plan_keyring *ring, const struct ice_plan_key *key)
{
	unsigned char raw[ED25519_LEN];
	size_t len = sizeof(raw);
	EVP_PKEY *pub;

	if (key == NULL || key->pkey == NULL ||
	    EVP_PKEY_get_raw_public_key(key->pkey, raw, &len) != 1 || len != ED25519_LEN)
		return -EINVAL;
	for (unsigned i = 0; i < ring->n; i++)
		if (strcmp(ring->keys[i].kid, key->kid) == 0)
			return -EEXIST;
	if (ring->n >= ICE_PLAN_PUBKEYS_MAX)
		return -ENOSPC;
	pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, len);
	if (pub == NULL || key_set(&ring->keys[ring->n], pub, false) < 0)
		return -ENOMEM;
	ring->n++;
	return 0;
}

void ice_plan_keyring_fini(struct ice_plan_keyring *ring)
{
	if (ring == NULL)
		return;
	for (unsigned i = 0; i < ring->n; i++)
		ice_plan_key_fini(&ring->keys[i]);
	ring->n = 0;
}

int ice_plan_keyring_load(const char *path, struct ice_plan_keyring *ring, struct ice_cfg_err *err)
{
	char *text = NULL, *name = NULL;
	unsigned char *data = NULL;
	size_t len = 0;
	long dlen = 0;
	int ret, line, more;
	BIO *b = NULL;

	memset(ring, 0, sizeof(*ring));
	ret = key_file_bio(path, false, &text, &len, &b, err);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	while ((more = pem_next(b, text, len, &name, &data, &dlen, &line)) == 1) {
		const unsigned char *p = data;
		struct ice_plan_key k;
		EVP_PKEY *pkey;
		int r;

		if (strstr(name, "PRIVATE KEY") != NULL) {
			key_fail(err, path, line,
				 "a private key; an agent holds public keys only "
				 "(NAME.pub of icectl keygen)");
			goto out;
		}
		if (strcmp(name, "PUBLIC KEY") != 0) {
			key_fail(err, path, line,
				 "a '%s' block; expected Ed25519 public keys in PEM "
				 "('BEGIN PUBLIC KEY')",
				 name);
			goto out;
		}
		pkey = d2i_PUBKEY(NULL, &p, dlen);
		if (pkey == NULL) {
			key_fail(err, path, line, "not a valid public key");
			goto out;
		}
		if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
			key_fail(err, path, line, "an %s key; expected an Ed25519 key",
				 type_of(pkey));
			EVP_PKEY_free(pkey);
			goto out;
		}
		if (key_set(&k, pkey, false) < 0) {
			key_fail(err, path, line, "not a usable Ed25519 key");
			goto out;
		}
		r = ice_plan_keyring_add(ring, &k);
		ice_plan_key_fini(&k);
		if (r == -EEXIST) {
			key_fail(err, path, line, "the same key again");
			goto out;
		}
		if (r == -ENOSPC) {
			key_fail(err, path, line,
				 "more than %d keys; expected at most %d (the keys in "
				 "use and the next)",
				 ICE_PLAN_PUBKEYS_MAX, ICE_PLAN_PUBKEYS_MAX);
			goto out;
		}
		if (r < 0) {
			ret = r;
			goto out;
		}
		OPENSSL_free(name);
		OPENSSL_free(data);
		name = NULL;
		data = NULL;
	}
	if (more < 0) {
		key_fail(err, path, line, "a broken PEM block (base64 or END line)");
		goto out;
	}
	if (ring->n == 0) {
		key_fail(err, path, 0,
			 "holds no PEM block; expected 1 to %d Ed25519 public keys in PEM "
			 "('BEGIN PUBLIC KEY', NAME.pub of icectl keygen)",
			 ICE_PLAN_PUBKEYS_MAX);
		goto out;
	}
	ret = 0;
out:
	OPENSSL_free(name);
	OPENSSL_free(data);
	BIO_free(b);
	free(text);
	ERR_clear_error();
	if (ret < 0)
		ice_plan_keyring_fini(ring);
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

		if (j != NULL &&
		    ((e->has_dcqcn && json_object_set_new(j, "dcqcn", dcqcn_json(&e->dcqcn)) < 0) ||
		     (e->has_tclass &&
		      json_object_set_new(j, "tclass", json_integer(e->tclass)) < 0) ||
		     (e->has_prio && json_object_set_new(j, "prio", json_integer(e->prio)) < 0))) {
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

char *ice_plan_dump(const struct ice_host_plan *hp)
{
	json_t *plan = plan_json(hp);
	char *out = plan != NULL ? json_dumps(plan, JSON_CANON) : NULL;

	json_decref(plan);
	if (out == NULL)
		errno = ENOMEM;
	return out;
}

static int sign_hex(const struct ice_plan_key *key, const char *msg, char hex[ICE_PLAN_SIG_HEX + 1])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char sig[SIG_LEN];
	size_t len = sizeof(sig);
	int ok;

	ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key->pkey) == 1 &&
	     EVP_DigestSign(ctx, sig, &len, (const unsigned char *)msg, strlen(msg)) == 1 &&
	     len == SIG_LEN;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	hex_of(sig, SIG_LEN, hex);
	return 0;
}

char *ice_plan_sign(const struct ice_host_plan *hp, const struct ice_plan_key *key)
{
	char *canon, *out = NULL, hex[ICE_PLAN_SIG_HEX + 1];
	size_t len;

	if (key == NULL || key->pkey == NULL || !key->priv) {
		errno = EINVAL;
		return NULL;
	}
	canon = ice_plan_dump(hp);
	if (canon == NULL)
		return NULL;
	if (sign_hex(key, canon, hex) < 0) {
		free(canon);
		errno = EIO;
		return NULL;
	}
	/* the envelope's own canonical form (keys in order, compact), without
	 * dumping the plan a second time */
	len = strlen(canon) + sizeof(hex) + ICE_PLAN_KID_HEX + 32;
	out = malloc(len);
	if (out != NULL)
		snprintf(out, len, "{\"kid\":\"%s\",\"plan\":%s,\"sig\":\"%s\"}", key->kid, canon,
			 hex);
	else
		errno = ENOMEM;
	free(canon);
	return out;
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
	e->has_tclass = json_object_get(j, "tclass") != NULL;
	if (e->has_tclass)
		ENTRY_INT("tclass", 0, 255, e->tclass);
	e->has_prio = json_object_get(j, "prio") != NULL;
	if (e->has_prio)
		ENTRY_INT("prio", 0, ICE_PLAN_PRIO_MAX, e->prio);
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

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/* The signature: -ENOKEY when no key of the ring has the kid, -EPERM when the
 * kid's key did not sign canon. */
static int sig_check(const struct ice_plan_keyring *ring, json_t *kid, json_t *sig,
		     const char *canon, struct ice_cfg_err *err)
{
	const struct ice_plan_key *k = NULL;
	const char *id = json_string_value(kid), *hex = json_string_value(sig);
	unsigned char raw[SIG_LEN];
	EVP_MD_CTX *ctx;
	int ok;

	if (json_string_length(kid) != ICE_PLAN_KID_HEX || !is_hex(id, ICE_PLAN_KID_HEX)) {
		ice_cfg_fail(err, NULL, "kid", "expected a key id of %d hex digits",
			     ICE_PLAN_KID_HEX);
		return -EBADMSG;
	}
	for (unsigned i = 0; ring != NULL && i < ring->n; i++)
		if (strcmp(ring->keys[i].kid, id) == 0)
			k = &ring->keys[i];
	if (k == NULL) {
		char known[ICE_PLAN_PUBKEYS_MAX * (ICE_PLAN_KID_HEX + 2) + 8] = "none";

		for (unsigned i = 0; ring != NULL && i < ring->n; i++)
			snprintf(known + (i ? strlen(known) : 0),
				 sizeof(known) - (i ? strlen(known) : 0), "%s%s", i ? ", " : "",
				 ring->keys[i].kid);
		ice_cfg_fail(err, NULL, "kid",
			     "unknown key id %s (trusted: %s): signed by a key this host does not "
			     "hold",
			     id, known);
		return -ENOKEY;
	}
	if (json_string_length(sig) != ICE_PLAN_SIG_HEX || !is_hex(hex, ICE_PLAN_SIG_HEX)) {
		ice_cfg_fail(err, NULL, "sig", "expected an Ed25519 signature of %d hex digits",
			     ICE_PLAN_SIG_HEX);
		return -EPERM;
	}
	for (size_t i = 0; i < SIG_LEN; i++) {
		unsigned hi = hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10;
		unsigned lo =
			hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10;

		raw[i] = (unsigned char)(hi << 4 | lo);
	}
	ctx = EVP_MD_CTX_new();
	ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
	     EVP_DigestVerify(ctx, raw, SIG_LEN, (const unsigned char *)canon, strlen(canon)) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	if (!ok) {
		ice_cfg_fail(err, NULL, "sig",
			     "signature does not match the plan under key %s (altered plan, or "
			     "signed by another key)",
			     k->kid);
		return -EPERM;
	}
	return 0;
}

int ice_plan_verify(const char *json, const struct ice_plan_keyring *ring, uint64_t last_epoch,
		    uint64_t now_ms, struct ice_host_plan *out, struct ice_cfg_err *err)
{
	json_t *env, *plan, *sig, *kid, *entries, *host;
	json_error_t jerr;
	char *canon = NULL;
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
	kid = json_object_get(env, "kid");
	plan = json_object_get(env, "plan");
	sig = json_object_get(env, "sig");
	if (!json_is_string(kid) || !json_is_object(plan) || !json_is_string(sig) ||
	    json_object_size(env) != 3) {
		ice_cfg_fail(err, NULL, "",
			     "expected {\"kid\": \"<key id>\", \"plan\": {...}, \"sig\": "
			     "\"<hex>\"}");
		goto out;
	}
	/* authenticity first: nothing unauthenticated is interpreted */
	canon = json_dumps(plan, JSON_CANON);
	if (canon == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	ret = sig_check(ring, kid, sig, canon, err);
	if (ret < 0)
		goto out;
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
