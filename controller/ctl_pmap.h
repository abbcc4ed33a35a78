/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_pmap: the port -> path maps ice-probe learns (docs/redis-schema.md,
 * "Probe"). Where ICE cannot model the switches' hash (any vendor fabric,
 * the kernel ECMP of the test bed), the controller steers a flow by giving
 * it a source port the probe saw take the planned path.
 */
#ifndef CTL_PMAP_H
#define CTL_PMAP_H

#include <netinet/in.h>
#include <stdint.h>

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

#endif /* CTL_PMAP_H */
