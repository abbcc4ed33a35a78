/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_pmap: the port -> path maps ice-probe learns (docs/redis-schema.md,
 * "Probe"). Where ICE cannot model the switches' hash (any vendor fabric,
 * the kernel ECMP of the test bed), the controller steers a flow by giving
 * it a source port the probe saw take the planned path: the maps as a port
 * -> path provider, ctl_pathmap_probe_init().
 */
#ifndef CTL_PMAP_H
#define CTL_PMAP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"

struct ctl_pmap_path {
	char name[128]; /* switches crossed, "leaf1>spine1>leaf2" */
	uint16_t *ports;
	uint32_t nports;
};

struct ctl_pmap {
	struct in_addr src, dst;
	uint64_t ts_ms; /* when the map was learned */
	struct ctl_pmap_path *paths;
	uint32_t npaths;
};

/* Parse a map's JSON (the "json" field of ice:<F>:{<H>}:probe:map:<P>).
 * 0, or -EINVAL (not a map) / -ENOMEM; m is then empty. */
int ctl_pmap_parse(const char *json, struct ctl_pmap *m);
void ctl_pmap_fini(struct ctl_pmap *m); /* NULL-safe */
/* The path a source port was seen to take, or -1. */
int ctl_pmap_path_of(const struct ctl_pmap *m, uint16_t sport);
/* The path named name, or -1. */
int ctl_pmap_find(const struct ctl_pmap *m, const char *name);
/* Does map b of a pair contradict map a: another set of paths, or a port
 * both saw on different paths (a switch rehashed, a link changed)? Ports
 * only one of them saw are no evidence. */
bool ctl_pmap_differs(const struct ctl_pmap *a, const struct ctl_pmap *b);

struct topo;
/* Tomography over ice-probe's path states (its health records): a link is
 * down when a dead path crosses it and no live path does (either way).
 * Paths are named by topology node names, "leaf1>spine2>leaf2"; a name
 * with a node or hop the topology does not have is skipped. down[] (one
 * per topology link) is set; returns the number of paths used. A link only
 * dead paths cross is taken down with the one that failed: on two leaves,
 * spine2:leaf2 with leaf1:spine2 (no path can use it anyway); a third
 * leaf's live path through it clears it. */
uint32_t ctl_pmap_dead_links(const struct topo *t, const char *const *name, const bool *dead,
			     uint32_t n, bool *down);
/* The same over directed links with the probe's queueing delay: a direction
 * that paths with a standing queue (hot[i]) cross and no path without one
 * does is set in hot_dl[] (one per directed link, 2 * link + 0 for a->b). */
uint32_t ctl_pmap_hot_dlinks(const struct topo *t, const char *const *name, const bool *hot,
			     uint32_t n, bool *hot_dl);
/* The directed links of a path named by node names ("leaf1>spine2>leaf2"),
 * at most max: their number, or -EINVAL / -ENOENT (a node or hop the
 * topology does not have, or more than max hops). */
int ctl_pmap_path_dlinks(const struct topo *t, const char *name, uint32_t *dl, uint32_t max);

/*
 * The port -> path provider over a set of maps (struct ctl_pathmap, ctl.h),
 * the newest map of a NIC pair counting:
 *   route_of: the route of the path the probe saw the port take (-ENOENT:
 *             no map of the pair, or the map never saw the port);
 *   sports:   the hash models' ports first (ctl_pathmap_model), then each
 *             flow a port the probe saw take its planned path (its own when
 *             it is one of them, else the path's ports in turn). A flow with
 *             no map, or planned on a path the probe never saw, is unsteered:
 *             it keeps its current port and the route the map knows for it
 *             (a new flow keeps the model's port).
 * Embedded, nothing to free; maps stay the caller's and must outlive its use.
 */
struct ctl_pathmap_probe {
	struct ctl_pathmap pm; /* first: the provider */
	const struct ctl_pmap *maps;
	uint32_t nmaps;
};

struct ctl_pathmap *ctl_pathmap_probe_init(struct ctl_pathmap_probe *pp, struct ctl_planner *p,
					   const struct ctl_pmap *maps, uint32_t nmaps);

#endif /* CTL_PMAP_H */
