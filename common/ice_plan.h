/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_plan: the plan a controller publishes for one host and an agent
 * applies: its structure, its canonical JSON, its HMAC-SHA256 signature and
 * the checks an agent runs before applying one. Controller and agent meet
 * here and in Redis, nowhere else.
 *
 * Signed form: {"plan":{...},"sig":"<64 hex>"}; the MAC covers the compact
 * sorted-key dump of "plan", which the verifier recomputes from what it
 * parsed (duplicate keys refused), so whitespace or key order on the wire do
 * not matter but every value does.
 *
 * Ownership: plans own their entries; ice_host_plan_fini() frees them.
 */
#ifndef ICE_PLAN_H
#define ICE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"
#include "ice_dcqcn.h"

#define ICE_PLAN_KEY_MIN	 16
#define ICE_PLAN_KEY_MAX	 256
#define ICE_PLAN_VERSION	 1
#define ICE_PLAN_HOST_MAX	 32	 /* host name bytes incl. NUL (= TOPO_NAME_MAX) */
#define ICE_PLAN_RATE_MAX	 400000u /* Mbit/s */
#define ICE_PLAN_ENTRIES_MAX	 65536u
#define ICE_PLAN_LIFETIME_MAX_MS 86400000u /* a day */
#define ICE_PLAN_SKEW_MS	 5000u	   /* plans issued further ahead are refused */
/* Epochs stay below 2^48 (a plan a millisecond for 8,900 years): a number
 * above it read from Redis is someone else's, not a controller's */
#define ICE_PLAN_EPOCH_MAX (1ull << 48)

struct ice_plan_key {
	uint8_t bytes[ICE_PLAN_KEY_MAX];
	size_t len;
};

/* The file's bytes (a trailing newline dropped). Refuses files that group or
 * others may access or that neither this process's user nor root owns
 * (-EPERM), keys under ICE_PLAN_KEY_MIN bytes (-EINVAL);
 * err says which and what to do. */
int ice_plan_key_load(const char *path, struct ice_plan_key *key, struct ice_cfg_err *err);

struct ice_plan_entry {
	uint32_t qpn;	      /* local QP number */
	uint16_t sport;	      /* 49152-65535 */
	uint32_t start_mbps;  /* 0 = no planned rate */
	uint32_t target_mbps; /* 0 = no planned rate */
	int32_t path;	      /* path index, for reporting; -1 unknown */
	bool has_dcqcn;	      /* false: the QP keeps its own parameters (JSON: no "dcqcn") */
	struct ice_dcqcn_params dcqcn;
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

/* Canonical JSON of the plan (sorted keys, compact), signed:
 * {"plan":{...},"sig":"<hex HMAC-SHA256 of the canonical plan>"}.
 * Returns a malloc'd string the caller frees, NULL + errno. */
char *ice_plan_sign(const struct ice_host_plan *hp, const struct ice_plan_key *key);

/* Checks the signature, epoch > last_epoch, issued_ms <= now_ms +
 * ICE_PLAN_SKEW_MS, issued_ms + lifetime_ms > now_ms (now_ms 0: the real clock) and every value's
 * safe range. 0 with *out filled (caller runs ice_host_plan_fini), or -EBADMSG not a plan (JSON,
 * missing or mistyped field) -EPERM   bad signature -ESTALE  epoch not newer than last_epoch -ETIME
 * lifetime over, or issued more than ICE_PLAN_SKEW_MS ahead of now -ERANGE  a value out of its safe
 * range with err->key naming the field ("entries[2].sport") and err->msg why. */
int ice_plan_verify(const char *json, const struct ice_plan_key *key, uint64_t last_epoch,
		    uint64_t now_ms, struct ice_host_plan *out, struct ice_cfg_err *err);

#endif /* ICE_PLAN_H */
