/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_switch_loader: loads the switch port programs (ice_switch.bpf.c) into
 * one switch namespace, attaches them to its ports and configures them.
 *
 * The caller enters the switch's network namespace (setns) before
 * ice_sw_open() and ice_sw_attach(): ifindexes and tc hooks are per
 * namespace. Programs are attached with tc clsact filters, so they stay
 * after the loading process exits; maps are pinned under pin_dir (e.g.
 * /sys/fs/bpf/ice<fabric>/<switch>), so another process reads the counters
 * with ice_sw_counters(pin_dir, ...) and ice_sw_unpin() removes them.
 *
 * Errors: int functions return 0 or a negative errno and log the reason;
 * ice_sw_open() returns NULL and sets errno.
 */
#ifndef ICE_SWITCH_LOADER_H
#define ICE_SWITCH_LOADER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "ice_switch.h"
#include "topo_hash.h"

/* ice_sw_open() flags */
#define ICE_SW_F_ECMP_MODEL (1u << 0) /* also attach the ECMP program at ingress */

/* tc filter identity of our programs on each port (clsact, both directions). */
#define ICE_SW_TC_HANDLE 0x1ce
#define ICE_SW_TC_PRIO	 1

struct ice_sw;

/* What ice_sw_counters() reports for a port. */
struct ice_port_stats {
	struct ice_port_counters c; /* c.depth: depth right after the last packet */
	uint64_t depth_now;	    /* c.depth drained at the port's rate until now */
};

/*
 * Open and load the switch programs in the current network namespace.
 * pin_dir: where to pin the maps (created, and bpffs mounted on
 * /sys/fs/bpf when it is not); maps already pinned there are reused, so a
 * reloaded switch keeps its configuration and counters. NULL: no pinning.
 * flags: ICE_SW_F_*. Returns a handle the caller frees with ice_sw_close(),
 * or NULL with errno set.
 */
struct ice_sw *ice_sw_open(const char *pin_dir, unsigned int flags);

/*
 * Closes the handle. Programs stay attached and maps stay pinned; use
 * ice_sw_detach() and ice_sw_unpin() to remove them. NULL-safe.
 */
void ice_sw_close(struct ice_sw *sw);

/*
 * Attach the egress model (and, with ICE_SW_F_ECMP_MODEL, the ECMP program
 * at ingress) to ifindex, creating its clsact qdisc when missing. A port
 * without ice_sw_port_config() only counts packets (infinite rate).
 */
int ice_sw_attach(struct ice_sw *sw, int ifindex);
/* Remove our filters from ifindex (the clsact qdisc stays). */
int ice_sw_detach(struct ice_sw *sw, int ifindex);

/* Set a port's egress profile; the queue state and counters are kept. */
int ice_sw_port_config(struct ice_sw *sw, int ifindex, const struct ice_port_cfg *cfg);

/*
 * Route prefix/plen (IPv4) over n members (1 <= n <= ICE_SW_MAX_MEMBERS),
 * in the order the hash picks from; replaces an earlier group of the same
 * prefix (its member counters start again from zero). n == 0 marks the
 * prefix local: its packets go up the switch's own stack.
 */
int ice_sw_ecmp_set(struct ice_sw *sw, struct in_addr prefix, int plen,
		    const struct ice_ecmp_member *members, int n);
int ice_sw_ecmp_del(struct ice_sw *sw, struct in_addr prefix, int plen);

/* Set the switch's ECMP hash model (default: CRC32, seed 0, 5-tuple). */
int ice_sw_hash_set(struct ice_sw *sw, const struct topo_hash_cfg *cfg);

/*
 * Readers that need only the pinned maps (any process, any namespace).
 */
/* A port's counters. -ENOENT when the port is not attached. */
int ice_sw_counters(const char *pin_dir, int ifindex, struct ice_port_stats *out);
/*
 * The same for a process that reads every port many times a second: the
 * switch's maps stay open between reads (three lookups a port, no path
 * walks). ice_sw_reader_open(): NULL + errno (ENOENT: nothing pinned at
 * pin_dir); the caller frees it with ice_sw_reader_close() (NULL-safe).
 */
struct ice_sw_reader;
struct ice_sw_reader *ice_sw_reader_open(const char *pin_dir);
void ice_sw_reader_close(struct ice_sw_reader *r);
/* A port's counters as of now_ns (CLOCK_MONOTONIC, the programs' clock: the
 * queue is drained to then); -ENOENT when the port is not attached. */
int ice_sw_reader_port(struct ice_sw_reader *r, int ifindex, uint64_t now_ns,
		       struct ice_port_stats *out);
/* The kernel's id of the port state map the reader holds. */
uint32_t ice_sw_reader_id(const struct ice_sw_reader *r);
/* Are the maps at pin_dir no longer the ones held (unpinned, or pinned anew
 * by a reloaded switch: its counters start again)? One stat(). */
bool ice_sw_reader_stale(const struct ice_sw_reader *r);
/* Start a new peak window on every port of the switch: c.peak_depth counts
 * from now on (each port's restarts at its next packet; until then it reads
 * as the current depth). -ENOENT: no switch pinned there. */
int ice_sw_peak_reset(const char *pin_dir);
/*
 * Packets sent through each member of the group routing prefix/plen:
 * hits[0..n-1], n the group's size; returns n or a negative errno.
 */
int ice_sw_ecmp_hits(const char *pin_dir, struct in_addr prefix, int plen,
		     uint64_t hits[ICE_SW_MAX_MEMBERS]);
/*
 * Take the members of prefix/plen's group with bit i of down set out of use
 * (and put the others back): the ingress program moves their flows to the
 * live members (fast failover, see struct ice_ecmp_group). Returns how many
 * members changed state, or -errno (-ENOENT: no such group or switch).
 */
int ice_sw_ecmp_down(const char *pin_dir, struct in_addr prefix, int plen, uint32_t down);
/*
 * The switch's ECMP hash model, read or replaced in place (a switch reboot
 * or upgrade that changes the hash seed): packets after the update hash
 * with cfg. -ENOENT: no switch pinned there; -EINVAL: unknown algorithm.
 */
int ice_sw_hash_get(const char *pin_dir, struct topo_hash_cfg *out);
int ice_sw_hash_update(const char *pin_dir, const struct topo_hash_cfg *cfg);
/* Switch-wide ingress counters, indexed by enum ice_sw_stat. */
int ice_sw_stats(const char *pin_dir, uint64_t out[ICE_SW_ST_MAX]);
/* Unpin the maps under pin_dir and remove the directory if empty. */
int ice_sw_unpin(const char *pin_dir);

/*
 * Tests and benchmarks.
 */
/* The program fds, for bpf_prog_test_run_opts(). */
int ice_sw_egress_fd(const struct ice_sw *sw);
int ice_sw_ingress_fd(const struct ice_sw *sw);
/* Pin the programs' clock to now_ns (0 = back to the real clock). */
void ice_sw_test_clock(struct ice_sw *sw, uint64_t now_ns);
/*
 * Zero a port's counters and set its queue to depth as of last_ns; creates
 * the port's state when missing (a benchmark's port need not be attached).
 */
int ice_sw_port_reset(struct ice_sw *sw, int ifindex, uint64_t depth, uint64_t last_ns);

#endif /* ICE_SWITCH_LOADER_H */
