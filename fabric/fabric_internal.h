/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric: what its files share; not for use outside fabric/. fabric.c holds
 * the commands (up, down, exec, ...) and calls the parts:
 *   fabric_run.c    text buffers, tools in batch mode, names, paths, setns
 *   fabric_ns.c     namespaces: make (with sysctls), find, stop processes, delete,
 *                   a switch's kernel hash seed
 *   fabric_link.c   veth pairs, management network, addresses, TBF, link state
 *   fabric_route.c  static ECMP routes, FRR, failover after a link change
 *   fabric_bpf.c    the BPF switch model: attach, hash seed, counters, ECMP failover
 *   fabric_redis.c  the fabric's redis-server and the link states kept there
 *   fabric_export.c the switch telemetry exporter (records: fabric_telem.c)
 */
#ifndef FABRIC_INTERNAL_H
#define FABRIC_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fabric.h"

extern uint32_t fabric_log_sub; /* ICE_LOG=...,debug=fabric */
#define FAB_SUB fabric_log_sub

#define FAB_MGMT_NET "10.253" /* 10.253.<fabric byte>.0/24 */

/* ---- fabric_run.c ---------------------------------------------------------------- */

/* A growable text buffer for batch files; aborts when out of memory. */
struct fab_buf {
	char *p;
	size_t len, cap;
};

void fab_bprintf(struct fab_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fab_buf_free(struct fab_buf *b);
/* Run argv with `in` on its stdin; its stdout goes to out (when not NULL),
 * its stderr to err. Returns the exit status, or -errno. */
int fab_run(char *const argv[], const char *in, struct fab_buf *out, char *err, size_t errlen);
/* `TOOL [-n NS] -batch -` over text (NULL or empty: nothing); prints what failed. */
int fab_batch(const char *tool, const char *ns, const char *text);
int fab_rm_tree(const char *path);
/* Run fn(arg) inside namespace ns, then come back; fn's result or -errno. */
int fab_in_netns(const char *ns, int (*fn)(void *arg), void *arg);

/* The management network's names and subnet byte, from a hash of the name. */
void fab_mgmt_bridge(const char *fabric, char *buf, size_t len);
void fab_mgmt_root_veth(const char *fabric, uint32_t i, char *buf, size_t len);
unsigned int fab_mgmt_byte(const char *fabric);
/* FAB_STATE_DIR/<fabric>[/file] and FAB_PIN_DIR/ice<fabric>[/node]. */
void fab_state_path(const char *fabric, const char *file, char *buf, size_t len);
void fab_pin_path(const char *fabric, const char *node, char *buf, size_t len);
/* buf has INET_ADDRSTRLEN bytes; returns buf. */
char *fab_addr_str(struct in_addr a, char *buf);
bool fab_dir_exists(const char *path);

/* ---- fabric_ns.c ----------------------------------------------------------------- */

int fab_ns_create(const struct topo *t);
/* Does any namespace ice<fabric>-* exist? */
bool fab_ns_exist(const char *fabric);
int fab_ns_stop_processes(const char *name);
/* Set switch n's net.ipv4.fib_multipath_hash_seed; the one it had in *old. */
int fab_ns_hash_seed(const struct topo *t, const struct topo_node *n, uint32_t seed, uint32_t *old);
/* Delete the namespaces ice<name>-*; returns how many there were. */
int fab_ns_delete(const char *name);

/* ---- fabric_link.c --------------------------------------------------------------- */

int fab_mgmt_free(const char *fabric);
int fab_links_create(const struct topo *t);
int fab_nodes_configure(const struct topo *t, enum topo_routing routing);
/* Delete the management links in the root namespace; 1 if there were any. */
int fab_mgmt_delete(const char *name);
/* Which links are down now (their first end), t->nlinks + 1 flags for
 * topo_nexthops_down(); the caller frees it. NULL when out of memory. */
bool *fab_links_down(const struct topo *t);

/* ---- fabric_route.c -------------------------------------------------------------- */

void fab_static_routes(const struct topo *t, const struct topo_node *n, const bool *down,
		       struct fab_buf *b);
int fab_frr_start(const struct topo *t);
int fab_frr_wait_converged(const struct topo *t, bool quiet);
int fab_failover(const struct topo *t);

/* ---- fabric_bpf.c ---------------------------------------------------------------- */

int fab_bpf_setup(const struct topo *t);
/* Mark the model switches' ECMP members out of use by down; first error. */
int fab_bpf_failover(const struct topo *t, const bool *down);
/* Replace the seed of model switch n's hash (its pinned map); the one it
 * had in *old. -ENOENT: no BPF switch there. */
int fab_bpf_hash_seed(const struct topo *t, const struct topo_node *n, uint32_t seed,
		      uint32_t *old);

/* ---- fabric_redis.c -------------------------------------------------------------- */

/* With acl: redis-server --aclfile FAB_STATE_DIR/<fabric>/acl/users.acl
 * (fab_redis_acl_render first). */
int fab_redis_start(const char *fabric, unsigned int port, bool acl);
/* Redis users of t's fabric (ice_redis_acl_render: the roles and one user
 * per host) into FAB_STATE_DIR/<name>/acl; 0 or -errno, said. */
int fab_redis_acl_render(const struct topo *t);
/* Does the fabric's Redis have users (up --redis-acl)? Then user's auth
 * file ("ice-exporter", "ice-host-h1") into path. */
bool fab_redis_acl(const char *fabric, const char *user, char *path, size_t len);
/* The fabric's own writers (link records, the exporter) authenticate as
 * ice-exporter: sets ICE_REDIS_AUTH when the fabric's Redis has users. */
void fab_redis_auth_exporter(const char *fabric);
/* The port of the fabric's Redis into port; false (port "") when it has none. */
bool fab_redis_port(const char *fabric, char port[16]);
void fab_redis_link_record(const char *name, const char *link, bool up);

/* ---- fabric_export.c ------------------------------------------------------------- */

/* Start `ice-fabric export NAME` (this program, /proc/self/exe) in the
 * background, output in FAB_STATE_DIR/<name>/export.log; returns once its
 * pid file names it (0), or -errno with its output logged. */
int fab_export_start(const char *name, uint64_t interval_ns);
/* The pid of the fabric's running exporter (its pid file is locked), or 0. */
pid_t fab_export_pid(const char *name);

#endif /* FABRIC_INTERNAL_H */
