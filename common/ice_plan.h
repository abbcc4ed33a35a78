/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_plan: the plan a controller publishes for one host and an agent
 * applies: its structure, its canonical JSON, its Ed25519 signature and the
 * checks an agent runs before applying one. Controller and agent meet here
 * and in Redis, nowhere else.
 *
 * Signed form: {"kid":"<16 hex>","plan":{...},"sig":"<128 hex>"}. The
 * signature covers the compact sorted-key dump of "plan", which the verifier
 * recomputes from what it parsed (duplicate keys refused), so whitespace or
 * key order on the wire do not matter but every value does. "kid" names the
 * signing key: the first 8 bytes of SHA-256 over its raw 32-byte public key,
 * in hex; it only picks the key to try (it is not signed: a forged kid meets
 * a key that did not sign, and the signature fails).
 *
 * Keys: the controller holds one private key (PEM PKCS#8, "BEGIN PRIVATE
 * KEY", as `icectl keygen` writes it); an agent holds only public keys
 * (PEM SubjectPublicKeyInfo, "BEGIN PUBLIC KEY"), up to ICE_PLAN_PUBKEYS_MAX
 * in one file, so a new key can be trusted before the controller signs with
 * it and the old one dropped after (rotation without downtime).
 *
 * Ownership: plans own their entries; ice_host_plan_fini() frees them. Keys
 * and key rings own their OpenSSL keys; the _fini() functions free them.
 */
#ifndef ICE_PLAN_H
#define ICE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"
#include "ice_dcqcn.h"

#define ICE_PLAN_KID_HEX	 16    /* key id: 8 bytes of SHA-256(public key), hex */
#define ICE_PLAN_SIG_HEX	 128   /* an Ed25519 signature, hex */
#define ICE_PLAN_PUBKEYS_MAX	 4     /* public keys an agent accepts at once */
#define ICE_PLAN_KEYFILE_MAX	 16384 /* bytes of a key file */
#define ICE_PLAN_VERSION	 1
#define ICE_PLAN_HOST_MAX	 32	 /* host name bytes incl. NUL (= TOPO_NAME_MAX) */
#define ICE_PLAN_RATE_MAX	 400000u /* Mbit/s */
#define ICE_PLAN_ENTRIES_MAX	 65536u
#define ICE_PLAN_PRIO_MAX	 7u	   /* 802.1p priorities 0-7 */
#define ICE_PLAN_LIFETIME_MAX_MS 86400000u /* a day */
#define ICE_PLAN_SKEW_MS	 5000u	   /* plans issued further ahead are refused */
/* Epochs stay below 2^48 (a plan a millisecond for 8,900 years): a number
 * above it read from Redis is someone else's, not a controller's */
#define ICE_PLAN_EPOCH_MAX (1ull << 48)

struct evp_pkey_st; /* OpenSSL's EVP_PKEY */

/* One Ed25519 key: private (signs) or public only (verifies). */
struct ice_plan_key {
	struct evp_pkey_st *pkey; /* owned; NULL: no key */
	bool priv;
	char kid[ICE_PLAN_KID_HEX + 1];
};

/* The public keys an agent accepts. */
struct ice_plan_keyring {
	struct ice_plan_key keys[ICE_PLAN_PUBKEYS_MAX];
	unsigned n;
};

/* The controller's private key from a PEM PKCS#8 Ed25519 file. Refuses files
 * that group or others may read or that neither this process's user nor root
 * owns (-EPERM); an empty file, one without a private key PEM block, an
 * encrypted key, another type of key (RSA, EC...) or more than one key
 * (-EINVAL). err says which, naming the file and what was expected. */
int ice_plan_key_load(const char *path, struct ice_plan_key *key, struct ice_cfg_err *err);
/* A new random private key (icectl keygen); 0 or -errno. */
int ice_plan_key_generate(struct ice_plan_key *key);
/* The private key of a 32-byte Ed25519 seed (fixed keys of tests and the
 * fuzzer); 0 or -errno. */
int ice_plan_key_from_seed(const uint8_t seed[32], struct ice_plan_key *key);
/* PEM text of the key: private (PKCS#8; only for a private key) or its
 * public half. malloc'd, NUL-terminated; NULL + errno. */
char *ice_plan_key_pem(const struct ice_plan_key *key, bool priv);
void ice_plan_key_fini(struct ice_plan_key *key); /* NULL-safe, idempotent */

/* The public keys of a file of 1 to ICE_PLAN_PUBKEYS_MAX PEM "PUBLIC KEY"
 * blocks (text around them is ignored). The file must be owned by this user
 * or root and not writable by group or others (-EPERM); no key, another
 * block (a private key), another type of key, a duplicate or too many keys
 * are refused (-EINVAL) with the file and the block's line in err. */
int ice_plan_keyring_load(const char *path, struct ice_plan_keyring *ring, struct ice_cfg_err *err);
/* Trust key's public half (tests, the controller's self-check); 0, -ENOSPC
 * when the ring is full, -EEXIST when it holds the key id already. */
int ice_plan_keyring_add(struct ice_plan_keyring *ring, const struct ice_plan_key *key);
void ice_plan_keyring_fini(struct ice_plan_keyring *ring); /* NULL-safe */

struct ice_plan_entry {
	uint32_t qpn;	      /* local QP number */
	uint16_t sport;	      /* 49152-65535 */
	uint32_t start_mbps;  /* 0 = no planned rate */
	uint32_t target_mbps; /* 0 = no planned rate */
	int32_t path;	      /* path index, for reporting; -1 unknown */
	bool has_dcqcn;	      /* false: the QP keeps its own parameters (JSON: no "dcqcn") */
	struct ice_dcqcn_params dcqcn;
	/* Where a NIC does DCQCN in hardware it takes a profile per priority,
	 * not per QP: the QP is steered into its profile's priority through its
	 * traffic class. Both optional (JSON: no "tclass" / "prio"). */
	bool has_tclass;
	uint8_t tclass; /* IB GRH traffic class: DSCP << 2 | ECN bits */
	bool has_prio;
	uint8_t prio; /* the priority (0-7) whose DCQCN is the profile's */
};

struct ice_host_plan {
	char host[ICE_PLAN_HOST_MAX];
	uint64_t epoch; /* monotonic, > 0 */
	uint32_t lifetime_ms;
	uint64_t issued_ms; /* CLOCK_REALTIME, ms since the epoch */
	struct ice_plan_entry *entries;
	uint32_t n;
};

void ice_host_plan_fini(struct ice_host_plan *hp); /* frees entries; NULL-safe */

/* A rate in bit/s as the plan's Mbit/s: rounded, at least 1 when positive,
 * at most ICE_PLAN_RATE_MAX; 0 for none. */
uint32_t ice_plan_mbps(double bps);

/* The canonical JSON of the plan alone (what is signed; a dry run prints
 * it). malloc'd; NULL + errno. */
char *ice_plan_dump(const struct ice_host_plan *hp);

/* Signed: {"kid":"<key id>","plan":{...},"sig":"<hex Ed25519 signature of
 * the canonical plan>"}. key must be private. Returns a malloc'd string the
 * caller frees, NULL + errno. */
char *ice_plan_sign(const struct ice_host_plan *hp, const struct ice_plan_key *key);

/* Checks the signature with the ring's key of the plan's kid, then epoch >
 * last_epoch, issued_ms <= now_ms + ICE_PLAN_SKEW_MS, issued_ms +
 * lifetime_ms > now_ms (now_ms 0: the real clock) and every value's safe
 * range. 0 with *out filled (caller runs ice_host_plan_fini), or
 *   -EBADMSG not a plan (JSON, missing or mistyped field)
 *   -ENOKEY  signed by a key the ring does not hold (unknown key id)
 *   -EPERM   bad signature (altered plan, or a kid that did not sign)
 *   -ESTALE  epoch not newer than last_epoch
 *   -ETIME   lifetime over, or issued more than ICE_PLAN_SKEW_MS ahead
 *   -ERANGE  a value out of its safe range
 * with err->key naming the field ("entries[2].sport") and err->msg why. */
int ice_plan_verify(const char *json, const struct ice_plan_keyring *ring, uint64_t last_epoch,
		    uint64_t now_ms, struct ice_host_plan *out, struct ice_cfg_err *err);

#endif /* ICE_PLAN_H */
