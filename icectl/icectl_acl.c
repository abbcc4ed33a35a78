// SPDX-License-Identifier: Apache-2.0
/*
 * icectl acl: Redis users for a fabric (docs/security.md). From the
 * topology, one user per role and one per host (its name and its NIC
 * addresses, which ice-probe uses as the host's name by default); random
 * passwords; DIR/users.acl for redis-server and DIR/redis-<role>.auth for
 * ICE_REDIS_AUTH, all 0600. Redis is not touched: loading the file is the
 * operator's step (printed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "icectl.h"
#include "topo.h"

#define PASS_BYTES 32
#define MAX_ADDRS  8 /* NIC addresses per host */

struct acl_user {
	struct ice_redis_acl_user u;
	char name[ICE_REDIS_USER_MAX];
	char pass[2 * PASS_BYTES + 1];
	char addr[MAX_ADDRS][INET_ADDRSTRLEN];
	const char *addrs[MAX_ADDRS];
};

static int new_password(char *out)
{
	unsigned char b[PASS_BYTES];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	explicit_bzero(b, sizeof(b));
	return 0;
}

/* Write text to DIR/NAME, mode 0600, through a new file renamed over it */
static int write_secret(const char *dir, const char *name, const char *text, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		fprintf(stderr, "icectl acl: cannot write %s: %s\n", path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

static int load_users(struct ictl *x, const struct topo *t, struct acl_user **out, size_t *n)
{
	static const enum ice_redis_role fixed[] = {ICE_ROLE_CONTROLLER, ICE_ROLE_EXPORTER,
						    ICE_ROLE_OPERATOR, ICE_ROLE_READER};
	size_t nf = sizeof(fixed) / sizeof(fixed[0]), k = 0;
	struct acl_user *us = calloc(nf + t->nnodes, sizeof(*us));

	(void)x;
	if (us == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++)
		us[k++].u.role = fixed[i];
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *h = &t->nodes[i];
		struct acl_user *a = &us[k];

		if (h->kind != TOPO_HOST)
			continue;
		a->u.role = ICE_ROLE_HOST;
		a->u.host = h->name;
		for (uint32_t p = 0; p < h->nports && a->u.naddrs < MAX_ADDRS; p++) {
			inet_ntop(AF_INET, &t->ports[h->ports[p]].addr, a->addr[a->u.naddrs],
				  sizeof(a->addr[0]));
			a->addrs[a->u.naddrs] = a->addr[a->u.naddrs];
			a->u.naddrs++;
		}
		a->u.addrs = a->addrs;
		k++;
	}
	for (size_t i = 0; i < k; i++) {
		int ret = new_password(us[i].pass);

		if (ret < 0) {
			fprintf(stderr, "icectl acl: getrandom: %s\n", strerror(-ret));
			explicit_bzero(us, k * sizeof(*us));
			free(us);
			return ret;
		}
		us[i].u.password = us[i].pass;
		ice_redis_acl_user_name(us[i].name, sizeof(us[i].name), &us[i].u);
	}
	*out = us;
	*n = k;
	return 0;
}

int ictl_acl(struct ictl *x)
{
	struct ice_cfg_err err = {0};
	struct acl_user *us = NULL;
	char why[256], *text = NULL;
	size_t n = 0, len = 0;
	struct topo *t;
	struct stat st;
	FILE *f;
	int ret = ICTL_EXIT_BAD;

	t = topo_load(x->topology, &err);
	if (t == NULL) {
		fprintf(stderr, "icectl acl: %s\n", err.msg);
		return ICTL_EXIT_BAD;
	}
	if (mkdir(x->out, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "icectl acl: cannot create %s: %s\n", x->out, strerror(errno));
		goto out;
	}
	if (stat(x->out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "icectl acl: --out %s: expected a directory\n", x->out);
		goto out;
	}
	if (load_users(x, t, &us, &n) < 0)
		goto out;
	f = open_memstream(&text, &len);
	if (f == NULL) {
		fprintf(stderr, "icectl acl: %s\n", strerror(errno));
		goto out;
	}
	{
		struct ice_redis_acl_user *list = calloc(n, sizeof(*list));

		for (size_t i = 0; list != NULL && i < n; i++)
			list[i] = us[i].u;
		ret = list == NULL ? -ENOMEM
				   : ice_redis_acl_write(f, x->fabric, list, n, why, sizeof(why));
		free(list);
	}
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		fprintf(stderr, "icectl acl: %s: %s\n", x->topology,
			ret == -EINVAL ? why : strerror(-ret));
		ret = ICTL_EXIT_BAD;
		goto out;
	}
	ret = ICTL_EXIT_BAD;
	if (write_secret(x->out, "users.acl", text, len) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char file[ICE_REDIS_USER_MAX + 16], body[256];
		int m = snprintf(body, sizeof(body),
				 "# Redis user %s of fabric %s (icectl acl)\n%s %s\n", us[i].name,
				 x->fabric, us[i].name, us[i].pass);

		snprintf(file, sizeof(file), "redis-%s.auth", us[i].name + 4); /* no "ice-" */
		if (write_secret(x->out, file, body, (size_t)m) < 0) {
			explicit_bzero(body, sizeof(body));
			goto out;
		}
		explicit_bzero(body, sizeof(body));
	}
	printf("icectl acl: %zu Redis users of fabric '%s' (%s): %s/users.acl, "
	       "%s/redis-<role>.auth\n",
	       n, x->fabric, x->topology, x->out, x->out);
	printf("  load:    redis-server --aclfile %s/users.acl (the file readable by Redis's "
	       "user),\n"
	       "           or copy it to the server's aclfile and run ACL LOAD\n"
	       "  clients: ICE_REDIS_AUTH=/etc/ice/redis-<role>.auth (0600, the service's user);\n"
	       "           the systemd units read /etc/ice/redis-controller.auth (controller)\n"
	       "           and /etc/ice/redis-host.auth (agent, probe: that host's file)\n",
	       x->out);
	ret = 0;
out:
	if (text != NULL) {
		explicit_bzero(text, len);
		free(text);
	}
	if (us != NULL) {
		explicit_bzero(us, n * sizeof(*us));
		free(us);
	}
	topo_free(t);
	return ret;
}
