// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the links. veth pairs straight into their namespaces, the
 * management network (a root bridge and a mgmt0 veth per host), every
 * port's address and TBF, the links' state (status), and taking a link down
 * or up (fault injection).
 */
#include "fabric_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <libgen.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ice_log.h"

/* ---- making them ------------------------------------------------------------- */

static void tbf_line(struct fab_buf *b, const char *ifname, uint64_t rate_bps, uint32_t mtu,
		     uint32_t buffer)
{
	/* burst: 1 ms at the rate, at least a few frames; the limit is large
	 * so that the BPF model, not TBF, decides drops */
	uint64_t burst = rate_bps / 8 / 1000;
	uint64_t limit = (uint64_t)buffer * 4 + 4 * (mtu + 14);

	if (burst < 4 * (uint64_t)(mtu + 14))
		burst = 4 * (uint64_t)(mtu + 14);
	if (limit < 1u << 20)
		limit = 1u << 20;
	fab_bprintf(b, "qdisc replace dev %s root tbf rate %llubit burst %llu limit %llu\n", ifname,
		    (unsigned long long)rate_bps, (unsigned long long)burst,
		    (unsigned long long)limit);
}

/* The management bridge's name and subnet come from a hash of the fabric
 * name: refuse a fabric whose hash meets another one's (or anything else
 * using those names or that subnet) rather than share or delete them. */
int fab_mgmt_free(const char *fabric)
{
	char br[32], want[32], have[INET_ADDRSTRLEN];
	struct if_nameindex *ifs = if_nameindex();
	struct ifaddrs *ia = NULL;
	int ret = 0;

	fab_mgmt_bridge(fabric, br, sizeof(br));
	for (struct if_nameindex *i = ifs; i != NULL && i->if_index != 0 && ret == 0; i++)
		if (strncmp(i->if_name, br, 7) == 0) {
			ice_err(FAB_SUB,
				"fabric '%s': root link %s already exists, and this fabric's root "
				"links are named %.7s*; another fabric whose name hashes alike is "
				"up: "
				"choose another name",
				fabric, i->if_name, br);
			ret = -EEXIST;
		}
	if (ifs != NULL)
		if_freenameindex(ifs);
	snprintf(want, sizeof(want), FAB_MGMT_NET ".%u.", fab_mgmt_byte(fabric));
	if (ret == 0 && getifaddrs(&ia) == 0) {
		for (struct ifaddrs *a = ia; a != NULL && ret == 0; a = a->ifa_next) {
			if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET)
				continue;
			fab_addr_str(((struct sockaddr_in *)a->ifa_addr)->sin_addr, have);
			if (strncmp(have, want, strlen(want)) == 0) {
				ice_err(FAB_SUB,
					"fabric '%s': its management subnet %s0/24 is in use (%s "
					"on "
					"%s): choose another fabric name",
					fabric, want, have, a->ifa_name);
				ret = -EEXIST;
			}
		}
		freeifaddrs(ia);
	}
	return ret;
}

/* The links, straight into their namespaces; the management network. */
int fab_links_create(const struct topo *t)
{
	char ns[64], ns2[64], br[32], rv[32];
	struct fab_buf root = {0};
	uint32_t hosts = 0;
	int ret;

	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_port *pa = &t->ports[t->links[i].a],
				       *pb = &t->ports[t->links[i].b];

		fab_ns_name(t, &t->nodes[pa->node], ns, sizeof(ns));
		fab_ns_name(t, &t->nodes[pb->node], ns2, sizeof(ns2));
		fab_bprintf(
			&root,
			"link add name %s netns %s mtu %u type veth peer name %s netns %s mtu %u\n",
			pa->ifname, ns, t->mtu, pb->ifname, ns2, t->mtu);
	}
	fab_mgmt_bridge(t->name, br, sizeof(br));
	fab_bprintf(&root, "link add name %s type bridge\n", br);
	fab_bprintf(&root, "addr add " FAB_MGMT_NET ".%u.1/24 dev %s\n", fab_mgmt_byte(t->name),
		    br);
	fab_bprintf(&root, "link set %s up\n", br);
	for (uint32_t i = 0; i < t->nnodes; i++) {
		if (t->nodes[i].kind != TOPO_HOST)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		fab_mgmt_root_veth(t->name, hosts, rv, sizeof(rv));
		fab_bprintf(&root, "link add name %s type veth peer name mgmt0 netns %s\n", rv, ns);
		fab_bprintf(&root, "link set %s master %s\n", rv, br);
		fab_bprintf(&root, "link set %s up\n", rv);
		hosts++;
	}
	ret = fab_batch("ip", NULL, root.p);
	fab_buf_free(&root);
	return ret;
}

/* Per namespace: addresses, links up, routes (static routing, and hosts
 * always), then qdiscs. */
int fab_nodes_configure(const struct topo *t, enum topo_routing routing)
{
	char ns[64], a1[INET_ADDRSTRLEN];
	struct fab_buf b = {0};
	uint32_t hosts = 0;
	int ret = 0;

	for (uint32_t i = 0; i < t->nnodes && ret == 0; i++) {
		const struct topo_node *n = &t->nodes[i];

		fab_ns_name(t, n, ns, sizeof(ns));
		fab_bprintf(&b, "link set lo up\n");
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];

			fab_bprintf(&b, "addr add %s/%u dev %s\n", fab_addr_str(p->addr, a1),
				    p->plen, p->ifname);
			fab_bprintf(&b, "link set %s up\n", p->ifname);
		}
		if (n->kind == TOPO_SWITCH) {
			fab_bprintf(&b, "addr add %s/32 dev lo\n", fab_addr_str(n->loopback, a1));
		} else {
			fab_bprintf(&b, "addr add " FAB_MGMT_NET ".%u.%u/24 dev mgmt0\n",
				    fab_mgmt_byte(t->name), hosts + 2);
			fab_bprintf(&b, "link set mgmt0 up\n");
			hosts++;
		}
		if (routing == TOPO_ROUTING_STATIC || n->kind == TOPO_HOST)
			fab_static_routes(t, n, NULL, &b);
		ret = fab_batch("ip", ns, b.p);
		fab_buf_free(&b);
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];
			const struct topo_link *l = &t->links[p->link];

			tbf_line(&b, p->ifname, l->rate_bps, t->mtu, l->buffer_bytes);
		}
		if (ret == 0)
			ret = fab_batch("tc", ns, b.p);
		fab_buf_free(&b);
	}
	return ret;
}

/* ---- deleting them ----------------------------------------------------------- */

int fab_mgmt_delete(const char *name)
{
	struct fab_buf root = {0};
	struct if_nameindex *ifs;
	char br[32];
	int removed = 0;

	fab_mgmt_bridge(name, br, sizeof(br));
	ifs = if_nameindex();
	for (struct if_nameindex *i = ifs; i != NULL && i->if_index != 0; i++)
		if (strncmp(i->if_name, br, 7) == 0) /* ice<hash4>: bridge and veths */
			fab_bprintf(&root, "link del %s\n", i->if_name);
	if (ifs != NULL)
		if_freenameindex(ifs);
	if (root.p != NULL) {
		fab_batch("ip", NULL, root.p);
		removed++;
	}
	fab_buf_free(&root);
	return removed;
}

/* ---- their state ------------------------------------------------------------- */

/* operstate of every interface of a namespace: "IF STATE" lines */
static int link_states(const char *ns, struct fab_buf *out)
{
	char *argv[] = {"ip", "-n", (char *)ns, "-br", "link", NULL};

	return fab_run(argv, NULL, out, NULL, 0);
}

static const char *state_of(const char *table, const char *ifname, char *buf, size_t len)
{
	const char *p = table;
	size_t n = strlen(ifname);

	while (p != NULL && *p) {
		if (strncmp(p, ifname, n) == 0 && (p[n] == ' ' || p[n] == '@')) {
			const char *s = p + n;

			while (*s && *s != ' ')
				s++;
			while (*s == ' ')
				s++;
			size_t k = strcspn(s, " \n");

			snprintf(buf, len, "%.*s", (int)k, s);
			return buf;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return "absent";
}

/* The switches' ECMP hash: the topology's, then the first switches that
 * differ (their own in the file, or changed by `ice-fabric hash`). */
static void hash_status(const struct topo *t, FILE *out)
{
	bool model = t->ecmp == TOPO_ECMP_MODEL;
	uint32_t n_diff = 0;

	if (model)
		fprintf(out, "ECMP hash: %s seed 0x%x", topo_hash_alg_name(t->hash.alg),
			t->hash.seed);
	else
		fprintf(out, "ECMP hash: kernel, seed %u", t->kernel_hash_seed);
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		bool h = model && (n->hash.alg != t->hash.alg || n->hash.seed != t->hash.seed);
		bool k = topo_kernel_hash_seed(t, n) != t->kernel_hash_seed;

		if (n->kind != TOPO_SWITCH || (!h && !k) || n_diff++ >= 8)
			continue;
		fprintf(out, "%s %s", n_diff == 1 ? "; differing:" : ",", n->name);
		if (h)
			fprintf(out, " %s seed 0x%x", topo_hash_alg_name(n->hash.alg),
				n->hash.seed);
		if (k)
			fprintf(out, " kernel seed %u", topo_kernel_hash_seed(t, n));
	}
	if (n_diff > 8)
		fprintf(out, " and %u more", n_diff - 8);
	fprintf(out, "\n");
}

int fab_status(const char *name, FILE *out)
{
	struct topo *t = fab_topo(name);
	char ns[64], port[16], sa[16], sb[16], lname[64], auth[512];
	struct fab_buf *tab;
	uint32_t down = 0;

	if (t == NULL)
		return -ENOENT;
	tab = calloc(t->nnodes, sizeof(*tab));
	for (uint32_t i = 0; i < t->nnodes; i++) {
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		link_states(ns, &tab[i]);
	}
	fab_redis_port(name, port);
	fprintf(out, "fabric %s: %u nodes, %u links, MTU %u, %s routing, ECMP %s\n", t->name,
		t->nnodes, t->nlinks, t->mtu, t->routing == TOPO_ROUTING_STATIC ? "static" : "FRR",
		t->ecmp == TOPO_ECMP_KERNEL ? "kernel" : "model");
	fprintf(out, "management: " FAB_MGMT_NET ".%u.0/24 on %s", fab_mgmt_byte(name),
		"ice bridge");
	if (port[0])
		fprintf(out, ", redis at " FAB_MGMT_NET ".%u.1:%s", fab_mgmt_byte(name), port);
	fprintf(out, "\n");
	if (fab_redis_acl(name, "ice-controller", auth, sizeof(auth)))
		fprintf(out,
			"redis users: %s (users.acl; redis-<role>.auth for ICE_REDIS_AUTH: "
			"controller, exporter, operator, reader, host-<H>; exec on a host uses "
			"its own)\n",
			dirname(auth));
	hash_status(t, out);
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_port *pa = &t->ports[t->links[i].a],
				       *pb = &t->ports[t->links[i].b];
		const char *s1 = state_of(tab[pa->node].p, pa->ifname, sa, sizeof(sa));
		const char *s2 = state_of(tab[pb->node].p, pb->ifname, sb, sizeof(sb));

		if (strcmp(s1, "UP") != 0 || strcmp(s2, "UP") != 0)
			down++;
		fprintf(out, "  link %-24s %6.0f Mbit/s  %s:%s %s  %s:%s %s\n",
			topo_link_name(t, i, lname, sizeof(lname)), t->links[i].rate_bps / 1e6,
			t->nodes[pa->node].name, pa->ifname, s1, t->nodes[pb->node].name,
			pb->ifname, s2);
	}
	fprintf(out, "%u of %u links up\n", t->nlinks - down, t->nlinks);
	for (uint32_t i = 0; i < t->nnodes; i++)
		fab_buf_free(&tab[i]);
	free(tab);
	topo_free(t);
	return 0;
}

static int port_is_up(void *arg)
{
	const char *ifname = arg;
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), up;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	up = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 ? !!(ifr.ifr_flags & IFF_UP) : -errno;
	close(fd);
	return up;
}

bool *fab_links_down(const struct topo *t)
{
	bool *down = calloc(t->nlinks + 1, sizeof(bool));
	char ns[64];

	if (down == NULL)
		return NULL;
	for (uint32_t l = 0; l < t->nlinks; l++) {
		const struct topo_port *p = &t->ports[t->links[l].a];

		fab_ns_name(t, &t->nodes[p->node], ns, sizeof(ns));
		down[l] = fab_in_netns(ns, port_is_up, (void *)p->ifname) == 0;
	}
	return down;
}

/* ---- fault injection --------------------------------------------------------- */

int fab_link(const char *name, const char *dev, bool up, bool record)
{
	struct topo *t = fab_topo(name);
	char a[64], *b, ns[64], cmd[512];
	int link = -1, ret = 0, lock;

	if (t == NULL)
		return -ENOENT;
	snprintf(a, sizeof(a), "%s", dev);
	b = strchr(a, ':');
	if (b == NULL) {
		ice_err(FAB_SUB, "link '%s': expected NODE:NODE or NODE:IFNAME", dev);
		topo_free(t);
		return -EINVAL;
	}
	*b++ = '\0';
	for (uint32_t i = 0; i < t->nlinks && link < 0; i++) {
		const struct topo_port *pa = &t->ports[t->links[i].a],
				       *pb = &t->ports[t->links[i].b];
		const char *na = t->nodes[pa->node].name, *nb = t->nodes[pb->node].name;

		if ((strcmp(na, a) == 0 && (strcmp(nb, b) == 0 || strcmp(pa->ifname, b) == 0)) ||
		    (strcmp(nb, a) == 0 && (strcmp(na, b) == 0 || strcmp(pb->ifname, b) == 0)))
			link = (int)i;
	}
	if (link < 0) {
		ice_err(FAB_SUB, "fabric %s has no link '%s'", name, dev);
		topo_free(t);
		return -ENOENT;
	}
	/* one link change at a time: each converges from the link states it
	 * sees, and a later one must not be overwritten by an earlier one */
	fab_state_path(t->name, "link.lock", cmd, sizeof(cmd));
	lock = open(cmd, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock >= 0)
		flock(lock, LOCK_EX);
	for (int end = 0; end < 2 && ret == 0; end++) {
		const struct topo_port *p = &t->ports[end ? t->links[link].b : t->links[link].a];

		fab_ns_name(t, &t->nodes[p->node], ns, sizeof(ns));
		snprintf(cmd, sizeof(cmd), "link set %s %s\n", p->ifname, up ? "up" : "down");
		ret = fab_batch("ip", ns, cmd);
	}
	if (ret == 0) {
		char lname[64];

		/* the link changed: converge and say so, whatever converging says */
		ret = fab_failover(t);
		if (record)
			fab_redis_link_record(
				t->name, topo_link_name(t, (uint32_t)link, lname, sizeof(lname)),
				up);
	}
	if (lock >= 0)
		close(lock); /* and the lock with it */
	topo_free(t);
	return ret;
}
