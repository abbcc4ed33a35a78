/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric: the emulated test bed. Turns a topology (topo/) into network
 * namespaces joined by veth pairs on this machine: a namespace per host and
 * per switch, addresses from the topology, ECMP routing (static routes, or
 * FRR eBGP), TBF link rates, a BPF model of every switch egress queue (ECN
 * marks, drops, loss injection, counters; ebpf/), optionally BPF ECMP next
 * hop selection with the topology's hash model, and a management network so
 * host namespaces reach services in the root namespace (Redis).
 *
 * Everything created is named ice*: namespaces ice<fabric>-<node>, root
 * links ice<hash>..., BPF pins /sys/fs/bpf/ice<fabric>/, state
 * /run/ice/<fabric>/. fab_down() removes all of it, and a failed fab_up()
 * calls it before returning.
 */
#ifndef FABRIC_H
#define FABRIC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "topo.h"

#define FAB_STATE_DIR "/run/ice"
#define FAB_PIN_DIR   "/sys/fs/bpf"

struct fab_opts {
	int routing;		 /* -1: as the topology says; else enum topo_routing */
	bool no_bpf;		 /* skip the switch egress model (plain TBF) */
	unsigned int redis_port; /* start redis-server on the management bridge; 0 = no */
	uint64_t export_ns;	 /* with redis_port: the switch telemetry exporter's
				    interval (ns); 0 = no exporter */
	bool redis_acl;		 /* with redis_port: Redis users (FAB_STATE_DIR/<name>/acl),
				    the default user off */
	bool quiet;
};

/* The switch telemetry exporter (fab_export_run). */
struct fab_export_opts {
	uint64_t interval_ns;	   /* between readings (default 100 ms) */
	char redis[128];	   /* HOST:PORT or unix:/PATH; "" = the fabric's (up --redis) */
	uint32_t stream_cap;	   /* entries kept per port stream (default 1000) */
	uint64_t redis_timeout_ns; /* connect and reply timeout (default 200 ms) */
	uint64_t oper_poll_ns;	   /* ports' oper-status checked this often between
				    * readings; a change is exported at once (10 ms; 0: no) */
};

/* Bring the fabric up; 0 or -errno with the reason printed. */
int fab_up(const struct topo *t, const struct fab_opts *o);
/* Remove everything fab_up() made for fabric `name` (also half-made). */
int fab_down(const char *name);
int fab_status(const char *name, FILE *out);
int fab_stats(const char *name, bool json, bool new_peak, FILE *out);
/* Run argv in the namespace of node `node` (does not return on success). */
int fab_exec(const char *name, const char *node, char **argv);
/* Take a link down or up: dev is "nodeA:nodeB" (the link between them) or
 * "node:ifname" (one port, both ends of its link); record: write its state
 * to Redis (ice:<F>:links), else only the ports' oper-status tells. */
int fab_link(const char *name, const char *dev, bool up, bool record);
/* Change switch `node`'s ECMP hash seed live, as a reboot or upgrade would:
 * the BPF model's hash (`ecmp: model`), else the namespace's
 * net.ipv4.fib_multipath_hash_seed; recorded in the fabric's state topology.
 * Prints the change unless quiet. 0 or -errno with the reason printed. */
int fab_hash_seed(const char *name, const char *node, uint32_t seed, bool quiet);
/* Export every switch port's counters and status to Redis each interval
 * (docs/redis-schema.md, "Switch telemetry") until SIGTERM or SIGINT, or
 * until the fabric is down. One exporter per fabric (FAB_STATE_DIR/<name>/
 * export.pid, locked). 0 after a clean stop, or -errno (-EBUSY: one runs). */
int fab_export_run(const char *name, const struct fab_export_opts *o);
/* The fabric names that are up (state directories), newline-separated. */
int fab_list(FILE *out);
/* Load the topology saved by fab_up(). NULL + errno. */
struct topo *fab_topo(const char *name);

/* Namespace of a node: ice<fabric>-<node>. */
void fab_ns_name(const struct topo *t, const struct topo_node *n, char *buf, size_t len);

#endif /* FABRIC_H */
