/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice-probe: learns which UDP source ports take which equal-cost path
 * between two NICs (traceroute-style RoCEv2-shaped probes, ICMP time
 * exceeded from the switches) and measures each path's health (RTT, one-way
 * delay change, loss, queueing delay) against a responder on the peer.
 *
 * Packets cross the I/O backends (struct probe_io_ops) as IPv4 packets, from
 * the IP header on; the raw-socket and the DPDK backend give the same input
 * to the same parser, so the output does not depend on the backend.
 *
 * Ownership: probe_*_new() results are freed with the matching _free()
 * (NULL-safe); a probe_pathmap is a plain value the caller owns.
 */
#ifndef ICE_PROBE_H
#define ICE_PROBE_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ice_config.h"
#include "ice_roce.h"

#define PROBE_PKT_MAX	512
#define PROBE_MAX_HOPS	8 /* switches on a path (and the highest TTL tried) */
#define PROBE_MAX_PATHS 64
#define PROBE_MAX_PORTS 1024
#define PROBE_NAME_MAX	32
#define PROBE_PATH_NAME (PROBE_MAX_HOPS * (PROBE_NAME_MAX + 1))
#define PROBE_MAX_PAIRS 256
extern uint32_t probe_log_sub; /* ICE_LOG=...,debug=probe */
#define PROBE_LOG probe_log_sub

enum probe_backend {
	PROBE_BACKEND_RAW,
	PROBE_BACKEND_DPDK,
};

/* Every option is one row of probe_cfg_fields (probe_cfg.c). */
struct probe_cfg {
	int backend;		   /* enum probe_backend */
	char fabric[64];	   /* Redis key namespace ice:<fabric>: */
	char host[64];		   /* hash tag {<host>}; default: the source address */
	char redis[128];	   /* ADDR:PORT or a unix socket path; "" = no Redis */
	char topo[256];		   /* topology file: node names, path count, link rate */
	char pinglist[256];	   /* YAML/JSON pinglist file ("" = Redis key, then default) */
	char src[INET_ADDRSTRLEN]; /* local NIC address for watch/responder */
	uint32_t sport_min, sport_max;
	uint32_t min_ports;   /* known ports wanted per path */
	uint32_t extra_ports; /* ports without a new path before stopping */
	uint32_t max_ports;   /* hard cap per pair */
	uint32_t max_ttl;
	uint64_t trace_timeout;	  /* ns to wait for a round of trace answers */
	uint64_t probe_interval;  /* ns between health probes on one path */
	uint64_t report_interval; /* ns between published health records */
	uint64_t probe_timeout;	  /* ns after which a health probe is lost */
	uint64_t base_window;	  /* ns over which the base RTT is the minimum */
	uint64_t map_refresh;	  /* ns between full rediscoveries */
	double check_share;	  /* share of the rate limit for path checks; 0 = none */
	uint64_t notice_poll;	  /* ns between reads of the rehash notices; 0 = off */
	double link_share;	  /* probing bytes / link rate, at most */
	uint64_t link_rate;	  /* bit/s; 0 = from the topology, else 100gbit */
	uint64_t burst;		  /* token bucket depth, bytes */
	uint32_t responder_port;  /* UDP port the responder answers on */
	uint64_t duration;	  /* ns to run watch/responder; 0 = until a signal */
	char dpdk_eal[512];	  /* EAL arguments; {if} = the NIC's interface */
	char dpdk_gw_mac[24];	  /* next hop MAC; "" = from the kernel's ARP table */
};

void probe_cfg_defaults(struct probe_cfg *c);
extern const struct ice_cfg_field probe_cfg_fields[];
extern const size_t probe_cfg_nfields;
int probe_cfg_load_file(struct probe_cfg *c, const char *path, struct ice_cfg_err *err);
/* Checks across fields; -EINVAL with err. */
int probe_cfg_check(const struct probe_cfg *c, struct ice_cfg_err *err);

/* ---- pinglist ------------------------------------------------------------- */

struct probe_pair {
	struct in_addr src, dst;
};

struct probe_pinglist {
	uint32_t n;
	struct probe_pair pair[PROBE_MAX_PAIRS];
};

struct topo;
/* Parse a pinglist (YAML or JSON: {pairs: [{src: A, dst: B}, ...]}; src/dst
 * are IPv4 addresses or, with a topology, host names). name labels errors
 * (a file name, or "redis:KEY"). -EINVAL with err naming line, key, value. */
int probe_pinglist_parse(const char *name, const char *text, size_t len, const struct topo *t,
			 struct probe_pinglist *pl, struct ice_cfg_err *err);
int probe_pinglist_load(const char *path, const struct topo *t, struct probe_pinglist *pl,
			struct ice_cfg_err *err);
/* Default: every NIC of another leaf when the fabric has <= 16 NICs, else the
 * first NIC of every other leaf; from each of the given local addresses. */
int probe_pinglist_default(const struct topo *t, struct in_addr src, struct probe_pinglist *pl);

/* ---- path maps and their Redis records ------------------------------------ */

#define PROBE_PATH_KEEP 16 /* ports remembered per path */

struct probe_path {
	char name[PROBE_PATH_NAME]; /* hops joined by '>' */
	uint32_t nports;
	uint16_t port[PROBE_PATH_KEEP];
};

struct probe_pathmap {
	struct in_addr src, dst;
	uint32_t nhops;				    /* switches on every path */
	char fixed[PROBE_MAX_HOPS][PROBE_NAME_MAX]; /* hop names of fixed TTLs */
	uint32_t fixed_mask;			    /* bit t-1: TTL t is not probed */
	uint32_t npaths;
	struct probe_path path[PROBE_MAX_PATHS];
	uint32_t nports;
	uint16_t sport[PROBE_MAX_PORTS];
	int16_t path_of[PROBE_MAX_PORTS]; /* index into path[] */
	uint32_t probes, answers, unanswered_ports;
	int expected; /* equal-cost paths by the topology; -1 unknown */
	uint64_t ts_ms, took_ns;
};

json_t *probe_pathmap_json(const struct probe_pathmap *m, bool ports);

/* The probe's records of docs/redis-schema.md ("Probe"), one pipeline each
 * (ice-loadgen plays them for many probers): the map of m's pair, and a
 * health record rec ({"src","dst","seq","ts_ms","map_age_ms","paths":[...]})
 * of it. */
struct probe_redis;
struct probe_redis *probe_redis_new(const struct probe_cfg *cfg); /* NULL + errno */
void probe_redis_free(struct probe_redis *r);
int probe_redis_map(struct probe_redis *r, const struct probe_pathmap *m);
int probe_redis_health(struct probe_redis *r, const struct probe_pathmap *m, json_t *rec);

#endif /* ICE_PROBE_H */
