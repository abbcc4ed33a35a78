// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: routing. Static ECMP routes per host NIC (rewritten as converged
 * routing would after a link change), or FRR zebra + bgpd per switch, and
 * the check that the kernel routes are all there.
 */
#include "fabric_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

#define FRR_DIR	       "/usr/lib/frr"
#define FRR_CONVERGE_S 30 /* FRR must install every ECMP route within this */

/* ---- static routes ----------------------------------------------------------- */

/* The host port of node h that reaches NIC d in the fewest hops. */
static const struct topo_port *host_src_port(const struct topo *t, const struct topo_node *h,
					     uint32_t d)
{
	const struct topo_port *best = NULL;
	uint32_t best_hops = UINT32_MAX;
	struct topo_path p;

	for (uint32_t i = 0; i < h->nports; i++) {
		const struct topo_port *s = &t->ports[h->ports[i]];

		if (topo_paths(t, s->id, d, &p, 1) >= 1 && p.nhops < best_hops) {
			best_hops = p.nhops;
			best = s;
		}
	}
	return best;
}

/* Static routes of node n into b: hosts route each NIC via the right
 * local NIC, switches have an ECMP route per host NIC, without the next hops
 * that down (NULL: none) takes out of use, as converged routing would
 * (topo_nexthops_down). `replace`, so that a link change can rewrite them
 * (the kernel also deletes an IPv4 route whose only next hop went down). */
void fab_static_routes(const struct topo *t, const struct topo_node *n, const bool *down,
		       struct fab_buf *b)
{
	uint32_t nh[64];
	char a1[INET_ADDRSTRLEN], a2[INET_ADDRSTRLEN], a3[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < topo_nic_count(t); i++) {
		const struct topo_port *d = topo_nic(t, i);

		if (d->node == n->id)
			continue;
		if (n->kind == TOPO_HOST) {
			const struct topo_port *s = host_src_port(t, n, d->id);

			if (s == NULL || (down != NULL && down[s->link]))
				continue;
			fab_bprintf(b, "route replace %s/32 via %s dev %s src %s\n",
				    fab_addr_str(d->addr, a1),
				    fab_addr_str(t->ports[s->peer].addr, a2), s->ifname,
				    fab_addr_str(s->addr, a3));
			continue;
		}
		uint32_t out;
		int k = topo_nexthops_down(t, n->id, d->id, down, nh, 64, &out);

		if (k <= 0)
			continue;
		if (k > 64)
			k = 64; /* a multipath route of the first 64 */
		if (k == 1 && t->ports[nh[0]].peer == d->id)
			continue; /* directly attached: the link's own prefix */
		if (k <= 32 && out == (k == 32 ? UINT32_MAX : (1u << k) - 1)) {
			/* no way left: say so (ICMP unreachable) rather than keep a
			 * route into a switch that lost the destination */
			fab_bprintf(b, "route replace unreachable %s/32\n",
				    fab_addr_str(d->addr, a1));
			continue;
		}
		fab_bprintf(b, "route replace %s/32", fab_addr_str(d->addr, a1));
		for (int j = 0; j < k; j++) {
			const struct topo_port *e = &t->ports[nh[j]];

			if (j < 32 && (out >> j) & 1)
				continue;
			fab_bprintf(b, " nexthop via %s dev %s",
				    fab_addr_str(t->ports[e->peer].addr, a2), e->ifname);
		}
		fab_bprintf(b, "\n");
	}
}

/* After a link change, the fabric does what its routing would do once
 * converged: next hops whose link is down, or whose next switch lost its
 * shortest path to the destination, are out of use. Static routes are
 * rewritten without them (and put back, the kernel having deleted those
 * whose only next hop went down); the model switches' flows on such members
 * move to the group's live members (resilient: the others stay). FRR
 * converges by itself: only the hosts' routes are put back. */
int fab_failover(const struct topo *t)
{
	bool *down = fab_links_down(t);
	char ns[64];
	int ret;

	if (down == NULL)
		return -ENOMEM;
	/* the model switches first: they carry the traffic, and take no time */
	ret = t->ecmp == TOPO_ECMP_MODEL ? fab_bpf_failover(t, down) : 0;
	/* every node, whatever one of them said: the first error is returned */
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		struct fab_buf rb = {0};
		int r;

		if (t->routing != TOPO_ROUTING_STATIC && n->kind != TOPO_HOST)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		fab_static_routes(t, n, down, &rb);
		r = fab_batch("ip", ns, rb.p);
		fab_buf_free(&rb);
		if (r < 0 && ret == 0)
			ret = r;
	}
	free(down);
	return ret;
}

/* ---- FRR ------------------------------------------------------------------------------ */

/* Split topo_frr_config()'s integrated configuration: zebra gets the global
 * and interface part, bgpd the header lines and the router bgp block. */
static int frr_write_configs(const struct topo *t, const struct topo_node *n, const char *dir,
			     uid_t uid, gid_t gid)
{
	char *text = NULL, path[600];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len), *fz = NULL, *fb = NULL;
	bool bgp = false;
	int ret;

	if (f == NULL)
		return -errno;
	ret = topo_frr_config(t, n->id, f);
	fclose(f);
	if (ret < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/zebra.conf", dir);
	fz = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/bgpd.conf", dir);
	fb = fopen(path, "w");
	if (fz == NULL || fb == NULL) {
		ret = -errno;
		ice_err(FAB_SUB, "cannot write the FRR configuration in %s: %s", dir,
			strerror(-ret));
		goto out;
	}
	for (char *line = text, *nl; line != NULL && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl++ = '\0';
		if (strncmp(line, "router bgp", 10) == 0)
			bgp = true;
		if (strncmp(line, "frr ", 4) == 0 || strncmp(line, "hostname", 8) == 0) {
			fprintf(fz, "%s\n", line);
			fprintf(fb, "%s\n", line);
		} else {
			fprintf(bgp ? fb : fz, "%s\n", line);
		}
	}
	ret = ferror(fz) || ferror(fb) ? -EIO : 0;
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s.conf", dir, i ? "bgpd" : "zebra");
		if (chown(path, uid, gid) < 0 && ret == 0)
			ret = -errno;
	}
out:
	if (fz != NULL)
		fclose(fz);
	if (fb != NULL)
		fclose(fb);
	free(text);
	return ret;
}

/* Start FRR daemon `daemon` (zebra, bgpd) in namespace ns with everything
 * under dir; it daemonizes, so this returns once it forked off. */
static int frr_spawn(const char *ns, const char *dir, const char *daemon)
{
	char bin[300], conf[600], pid[600], zs[600], log[600], nspath[300];
	char *argv[] = {bin,	     "-d", "-f", conf,	  "-i", pid, "-z", zs, "--vty_socket",
			(char *)dir, "-P", "0",	 "--log", log,	NULL};
	int status;
	pid_t child;

	snprintf(bin, sizeof(bin), FRR_DIR "/%s", daemon);
	snprintf(conf, sizeof(conf), "%s/%s.conf", dir, daemon);
	snprintf(pid, sizeof(pid), "%s/%s.pid", dir, daemon);
	snprintf(zs, sizeof(zs), "%s/zserv.api", dir);
	snprintf(log, sizeof(log), "file:%s/%s.log", dir, daemon);
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", ns);
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		int fd = open(nspath, O_RDONLY | O_CLOEXEC);
		int null = open("/dev/null", O_RDWR);

		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
			_exit(126);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execv(bin, argv);
		_exit(127);
	}
	if (waitpid(child, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		ice_err(FAB_SUB, "%s in %s did not start (%s %d); see %s/%s.log", daemon, ns,
			WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), dir, daemon);
		return -EIO;
	}
	return 0;
}

static void frr_dir(const char *fabric, const char *node, char *buf, size_t len)
{
	snprintf(buf, len, FAB_STATE_DIR "/%s/frr%s%s", fabric, node ? "/" : "", node ? node : "");
}

static int wait_for_file(const char *path, uint64_t timeout_ns)
{
	uint64_t end = ice_now_ns() + timeout_ns;

	while (access(path, F_OK) < 0) {
		if (ice_now_ns() > end)
			return -ETIMEDOUT;
		ice_sleep_ns(10 * ICE_NSEC_PER_MSEC);
	}
	return 0;
}

/* zebra everywhere first, bgpd once its zebra serves (bgpd retries a
 * missing zserv socket only slowly). */
int fab_frr_start(const struct topo *t)
{
	char dir[512], path[600], ns[64];
	struct passwd *pw = getpwnam("frr");
	int ret;

	if (pw == NULL) {
		ice_err(FAB_SUB, "routing frr: there is no user 'frr' (is FRR installed?)");
		return -ENOENT;
	}
	if (access(FRR_DIR "/zebra", X_OK) < 0 || access(FRR_DIR "/bgpd", X_OK) < 0) {
		ice_err(FAB_SUB, "routing frr: " FRR_DIR "/zebra and bgpd are needed (FRR 8)");
		return -ENOENT;
	}
	frr_dir(t->name, NULL, dir, sizeof(dir));
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	for (int step = 0; step < 2; step++) {
		for (uint32_t i = 0; i < t->nnodes; i++) {
			const struct topo_node *n = &t->nodes[i];

			if (n->kind != TOPO_SWITCH)
				continue;
			fab_ns_name(t, n, ns, sizeof(ns));
			frr_dir(t->name, n->name, dir, sizeof(dir));
			if (step == 0) {
				if (mkdir(dir, 0755) < 0 ||
				    chown(dir, pw->pw_uid, pw->pw_gid) < 0) {
					ret = -errno;
					ice_err(FAB_SUB, "cannot make %s for frr: %s", dir,
						strerror(-ret));
					return ret;
				}
				ret = frr_write_configs(t, n, dir, pw->pw_uid, pw->pw_gid);
				if (ret == 0)
					ret = frr_spawn(ns, dir, "zebra");
			} else {
				snprintf(path, sizeof(path), "%s/zserv.api", dir);
				ret = wait_for_file(path, 10 * ICE_NSEC_PER_SEC);
				if (ret < 0)
					ice_err(FAB_SUB, "zebra of %s does not serve %s", n->name,
						path);
				else
					ret = frr_spawn(ns, dir, "bgpd");
			}
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* Next hops of the kernel route for dst (exact prefix) in a JSON route
 * dump: 0 when absent. */
static int route_nexthops(json_t *routes, const char *dst)
{
	size_t i;
	json_t *r;

	json_array_foreach(routes, i, r)
	{
		const char *d = json_string_value(json_object_get(r, "dst"));
		json_t *nhs = json_object_get(r, "nexthops");

		if (d == NULL || strcmp(d, dst) != 0)
			continue;
		if (json_is_array(nhs))
			return (int)json_array_size(nhs);
		return json_object_get(r, "gateway") != NULL ? 1 : 0;
	}
	return 0;
}

/* Does every switch have, for every host NIC prefix not attached to it, a
 * kernel route with as many next hops as the topology has equal-cost ones?
 * What is missing goes to `missing` (when not NULL). */
static bool routes_converged(const struct topo *t, struct fab_buf *missing, uint32_t *nroutes)
{
	bool ok = true;

	*nroutes = 0;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		char ns[64], pfx[64], a1[INET_ADDRSTRLEN];
		char *argv[] = {"ip", "-n", ns, "-j", "route", "show", NULL};
		struct fab_buf out = {0};
		json_t *routes = NULL;
		uint32_t nh[64];

		if (n->kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		if (fab_run(argv, NULL, &out, NULL, 0) == 0 && out.p != NULL)
			routes = json_loads(out.p, 0, NULL);
		fab_buf_free(&out);
		for (uint32_t j = 0; j < topo_nic_count(t); j++) {
			const struct topo_port *d = topo_nic(t, j);
			int k = topo_nexthops(t, n->id, d->id, nh, 64), have;
			uint32_t mask = d->plen == 0 ? 0 : ~0u << (32 - d->plen);
			struct in_addr a = {.s_addr = htonl(ntohl(d->addr.s_addr) & mask)};

			if (k <= 0 || (k == 1 && t->ports[nh[0]].peer == d->id))
				continue;
			snprintf(pfx, sizeof(pfx), "%s/%u", fab_addr_str(a, a1), d->plen);
			have = routes != NULL ? route_nexthops(routes, pfx) : 0;
			if (have == k) {
				(*nroutes)++;
				continue;
			}
			ok = false;
			if (missing != NULL)
				fab_bprintf(missing, "\n  %s: %s has %d of %d next hops", n->name,
					    pfx, have, k);
		}
		json_decref(routes);
	}
	return ok;
}

int fab_frr_wait_converged(const struct topo *t, bool quiet)
{
	uint64_t t0 = ice_now_ns(), end = t0 + FRR_CONVERGE_S * ICE_NSEC_PER_SEC;
	struct fab_buf missing = {0};
	uint32_t nroutes;

	while (!routes_converged(t, NULL, &nroutes)) {
		if (ice_now_ns() > end) {
			routes_converged(t, &missing, &nroutes);
			ice_err(FAB_SUB,
				"FRR did not converge within %d s; missing ECMP routes:%s "
				"(logs: " FAB_STATE_DIR "/%s/frr/<switch>/*.log)",
				FRR_CONVERGE_S, missing.p ? missing.p : "", t->name);
			fab_buf_free(&missing);
			return -ETIMEDOUT;
		}
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	if (!quiet)
		printf("ice-fabric: %s: FRR converged in %.2f s (%u ECMP routes checked)\n",
		       t->name, (double)(ice_now_ns() - t0) * 1e-9, nroutes);
	return 0;
}
