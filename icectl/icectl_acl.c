// SPDX-License-Identifier: Apache-2.0
/*
 * icectl acl: Redis users for a fabric (docs/security.md). From the
 * topology, one user per role and one per host (its name and its NIC
 * addresses, which ice-probe uses as the host's name by default); random
 * passwords; DIR/users.acl for redis-server and DIR/redis-<role>.auth for
 * ICE_REDIS_AUTH, all 0600 (ice_redis_acl_render, which ice-fabric up
 * --redis-acl uses too). Redis is not touched: loading the file is the
 * operator's step (printed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icectl.h"
#include "topo.h"

#define MAX_ADDRS 8 /* NIC addresses per host */

struct acl_host {
	char addr[MAX_ADDRS][INET_ADDRSTRLEN];
	const char *addrs[MAX_ADDRS];
};

int ictl_acl(struct ictl *x)
{
	struct ice_cfg_err err = {0};
	struct ice_redis_acl_user *us = NULL;
	struct acl_host *as = NULL;
	size_t n = 0;
	struct topo *t;
	char why[PATH_MAX + 64] = "";
	int ret = ICTL_EXIT_BAD, users;

	t = topo_load(x->topology, &err);
	if (t == NULL) {
		fprintf(stderr, "icectl acl: %s\n", err.msg);
		return ICTL_EXIT_BAD;
	}
	us = calloc(t->nnodes, sizeof(*us));
	as = calloc(t->nnodes, sizeof(*as));
	if (us == NULL || as == NULL) {
		fprintf(stderr, "icectl acl: %s\n", strerror(ENOMEM));
		goto out;
	}
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *h = &t->nodes[i];

		if (h->kind != TOPO_HOST)
			continue;
		us[n].host = h->name;
		for (uint32_t p = 0; p < h->nports && us[n].naddrs < MAX_ADDRS; p++) {
			size_t k = us[n].naddrs++;

			inet_ntop(AF_INET, &t->ports[h->ports[p]].addr, as[n].addr[k],
				  sizeof(as[n].addr[k]));
			as[n].addrs[k] = as[n].addr[k];
		}
		us[n].addrs = as[n].addrs;
		n++;
	}
	users = ice_redis_acl_render(x->out, x->fabric, us, n, why, sizeof(why));
	if (users < 0) {
		fprintf(stderr, "icectl acl: %s: %s\n", x->topology,
			why[0] != '\0' ? why : strerror(-users));
		goto out;
	}
	printf("icectl acl: %d Redis users of fabric '%s' (%s): %s/users.acl, "
	       "%s/redis-<role>.auth\n",
	       users, x->fabric, x->topology, x->out, x->out);
	printf("  load:    redis-server --aclfile %s/users.acl (the file readable by Redis's "
	       "user),\n"
	       "           or copy it to the server's aclfile and run ACL LOAD\n"
	       "  clients: ICE_REDIS_AUTH=/etc/ice/redis-<role>.auth (0600, the service's user);\n"
	       "           the systemd units read /etc/ice/redis-controller.auth (controller)\n"
	       "           and /etc/ice/redis-host.auth (agent, probe: that host's file)\n",
	       x->out);
	ret = 0;
out:
	free(us);
	free(as);
	topo_free(t);
	return ret;
}
