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

int ictl_acl(struct ictl *x)
{
	struct ice_cfg_err err = {0};
	struct topo_acl_hosts h = {0};
	struct topo *t;
	char why[PATH_MAX + 64] = "";
	int ret = ICTL_EXIT_BAD, users;

	t = topo_load(x->topology, &err);
	if (t == NULL) {
		fprintf(stderr, "icectl acl: %s\n", err.msg);
		return ICTL_EXIT_BAD;
	}
	if (topo_acl_hosts(t, &h) < 0) {
		fprintf(stderr, "icectl acl: %s\n", strerror(ENOMEM));
		goto out;
	}
	users = ice_redis_acl_render(x->out, x->fabric, h.users, h.n, why, sizeof(why));
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
	topo_acl_hosts_free(&h);
	topo_free(t);
	return ret;
}
