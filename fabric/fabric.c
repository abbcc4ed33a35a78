// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: see fabric.h. Namespaces, links, addresses, routes and qdiscs are
 * made with iproute2 in batch mode (one `ip -n NS -batch -` per namespace),
 * sysctls by writing /proc/sys after setns(), BPF through ebpf/'s loader.
 */
#include "fabric.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_switch_loader.h"
#include "ice_time.h"

#define MGMT_NET       "10.253" /* 10.253.<fabric byte>.0/24 */
#define FRR_DIR	       "/usr/lib/frr"
#define FRR_CONVERGE_S 30 /* FRR must install every ECMP route within this */

/* ---- small helpers ------------------------------------------------------------ */

/* A growable text buffer for batch files. */
struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p != NULL && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);

		if (np == NULL)
			abort();
		b->p = np;
		b->cap = cap;
	}
}

static void bfree(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Run argv with `in` on its stdin; its stderr (and stdout when out is
 * NULL) is kept in err. Returns the exit status, or -errno. */
static int run(char *const argv[], const char *in, struct buf *out, char *err, size_t errlen)
{
	int pin[2], pout[2], perr[2], status;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (in != NULL) {
		size_t left = strlen(in);

		while (left > 0) {
			ssize_t n = write(pin[1], in, left);

			if (n <= 0)
				break;
			in += n;
			left -= (size_t)n;
		}
	}
	close(pin[1]);
	{
		char tmp[4096];
		size_t elen = 0;
		ssize_t n;

		while ((n = read(pout[0], tmp, sizeof(tmp))) > 0)
			if (out != NULL)
				bprintf(out, "%.*s", (int)n, tmp);
		while ((n = read(perr[0], tmp, sizeof(tmp))) > 0) {
			size_t c = (size_t)n;

			if (err != NULL && elen + 1 < errlen) {
				if (c > errlen - 1 - elen)
					c = errlen - 1 - elen;
				memcpy(err + elen, tmp, c);
				elen += c;
			}
		}
		if (err != NULL && errlen > 0)
			err[elen] = '\0';
	}
	close(pout[0]);
	close(perr[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `TOOL [-n NS] -batch -` over text; prints what failed. */
static int batch(const char *tool, const char *ns, const char *text)
{
	char *argv[8], err[2048];
	int i = 0, ret;

	if (text == NULL || *text == '\0')
		return 0;
	argv[i++] = (char *)tool;
	if (ns != NULL) {
		argv[i++] = "-n";
		argv[i++] = (char *)ns;
	}
	argv[i++] = "-batch";
	argv[i++] = "-";
	argv[i] = NULL;
	ret = run(argv, text, NULL, err, sizeof(err));
	if (ret != 0) {
		ice_err(ICE_SUB_COMMON, "%s -batch in %s failed (%d): %s", tool,
			ns ? ns : "the root namespace", ret, err);
		return -EIO;
	}
	return 0;
}

static uint32_t fab_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}

void fab_ns_name(const struct topo *t, const struct topo_node *n, char *buf, size_t len)
{
	snprintf(buf, len, "ice%s-%s", t->name, n->name);
}

static void mgmt_bridge(const char *fabric, char *buf, size_t len)
{
	snprintf(buf, len, "ice%04xbr", fab_hash(fabric) & 0xffff);
}

static void mgmt_root_veth(const char *fabric, uint32_t i, char *buf, size_t len)
{
	snprintf(buf, len, "ice%04xm%u", fab_hash(fabric) & 0xffff, i);
}

static unsigned int mgmt_byte(const char *fabric)
{
	return (fab_hash(fabric) >> 16) % 250 + 1;
}

static void state_path(const char *fabric, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, FAB_STATE_DIR "/%s%s%s", fabric, file ? "/" : "", file ? file : "");
}

static void pin_path(const char *fabric, const char *node, char *buf, size_t len)
{
	snprintf(buf, len, FAB_PIN_DIR "/ice%s%s%s", fabric, node ? "/" : "", node ? node : "");
}

/* Run fn(arg) inside namespace ns, then come back. */
static int in_netns(const char *ns, int (*fn)(void *arg), void *arg)
{
	char path[256];
	int self, fd, ret;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || fd < 0) {
		ret = -errno;
		ice_err(ICE_SUB_COMMON, "namespace %s: %s", ns, strerror(-ret));
		goto out;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		ret = -errno;
		ice_err(ICE_SUB_COMMON, "cannot enter %s: %s", ns, strerror(-ret));
		goto out;
	}
	ret = fn(arg);
	if (setns(self, CLONE_NEWNET) < 0) {
		ice_err(ICE_SUB_COMMON, "cannot return from %s: %s", ns, strerror(errno));
		abort(); /* we would configure the wrong namespace from here on */
	}
out:
	if (fd >= 0)
		close(fd);
	if (self >= 0)
		close(self);
	return ret;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

struct sysctl_arg {
	const struct topo *t;
	const struct topo_node *n;
};

static int set_sysctls(void *arg)
{
	const struct sysctl_arg *a = arg;
	char seed[32];
	const struct {
		const char *path, *val;
	} tab[] = {
		{"/proc/sys/net/ipv4/ip_forward", a->n->kind == TOPO_SWITCH ? "1" : "0"},
		/* the 5-tuple decides the path, for connected sockets too
		 * (MACHINE-FACTS: policy 1 reuses the socket's hash) */
		{"/proc/sys/net/ipv4/fib_multipath_hash_policy", "3"},
		{"/proc/sys/net/ipv4/fib_multipath_hash_fields", "0x0037"},
		{"/proc/sys/net/ipv4/fib_multipath_hash_seed", seed},
		{"/proc/sys/net/ipv4/conf/all/rp_filter", "0"},
		{"/proc/sys/net/ipv4/conf/default/rp_filter", "0"},
		{"/proc/sys/net/ipv4/conf/all/ignore_routes_with_linkdown", "1"},
		{"/proc/sys/net/ipv4/conf/default/ignore_routes_with_linkdown", "1"},
		{"/proc/sys/net/ipv4/icmp_ratelimit", "0"},
		{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "1"},
		{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"},
	};

	snprintf(seed, sizeof(seed), "%u", a->t->kernel_hash_seed);
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		int ret = write_file(tab[i].path, tab[i].val);

		if (ret < 0 && strstr(tab[i].path, "ipv6") == NULL) {
			ice_err(ICE_SUB_COMMON, "sysctl %s = %s: %s", tab[i].path, tab[i].val,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static char *addr_str(struct in_addr a, char *buf)
{
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

/* ---- routes ----------------------------------------------------------------------- */

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
static void static_routes(const struct topo *t, const struct topo_node *n, const bool *down,
			  struct buf *b)
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
			bprintf(b, "route replace %s/32 via %s dev %s src %s\n",
				addr_str(d->addr, a1), addr_str(t->ports[s->peer].addr, a2),
				s->ifname, addr_str(s->addr, a3));
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
			bprintf(b, "route replace unreachable %s/32\n", addr_str(d->addr, a1));
			continue;
		}
		bprintf(b, "route replace %s/32", addr_str(d->addr, a1));
		for (int j = 0; j < k; j++) {
			const struct topo_port *e = &t->ports[nh[j]];

			if (j < 32 && (out >> j) & 1)
				continue;
			bprintf(b, " nexthop via %s dev %s", addr_str(t->ports[e->peer].addr, a2),
				e->ifname);
		}
		bprintf(b, "\n");
	}
}

/* ---- BPF switch model ------------------------------------------------------------- */

struct bpf_arg {
	const struct topo *t;
	const struct topo_node *n;
	const char *pin;
};

static int setup_switch_bpf(void *arg)
{
	const struct bpf_arg *a = arg;
	const struct topo *t = a->t;
	const struct topo_node *n = a->n;
	bool model = t->ecmp == TOPO_ECMP_MODEL;
	struct ice_sw *sw;
	int ret = 0;

	sw = ice_sw_open(a->pin, model ? ICE_SW_F_ECMP_MODEL : 0);
	if (sw == NULL) {
		ret = -errno;
		ice_err(ICE_SUB_COMMON, "switch %s: cannot load the BPF port model: %s", n->name,
			strerror(-ret));
		return ret;
	}
	for (uint32_t i = 0; i < n->nports && ret == 0; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];
		const struct topo_link *l = &t->links[p->link];
		struct ice_port_cfg cfg = {
			.rate_bps = l->rate_bps,
			.buffer = l->buffer_bytes,
			.kmin = l->ecn.kmin_bytes,
			.kmax = l->ecn.kmax_bytes,
			.pmax = (uint32_t)(l->ecn.pmax * 1e6),
			.loss_ppm = l->loss_ppm,
		};
		int ifindex = (int)if_nametoindex(p->ifname);

		if (ifindex == 0) {
			ret = -ENODEV;
			break;
		}
		ret = ice_sw_attach(sw, ifindex);
		if (ret == 0)
			ret = ice_sw_port_config(sw, ifindex, &cfg);
	}
	if (ret == 0 && model) {
		ret = ice_sw_hash_set(sw, &n->hash);
		for (uint32_t i = 0; i < topo_nic_count(t) && ret == 0; i++) {
			const struct topo_port *d = topo_nic(t, i);
			struct ice_ecmp_member m[ICE_SW_MAX_MEMBERS];
			uint32_t nh[ICE_SW_MAX_MEMBERS];
			int k = topo_nexthops(t, n->id, d->id, nh, ICE_SW_MAX_MEMBERS);

			if (k < 2)
				continue; /* one way only: the kernel's route does it */
			if (k > ICE_SW_MAX_MEMBERS) {
				ice_err(ICE_SUB_COMMON,
					"switch %s: %d equal-cost next hops to %s: the BPF model "
					"takes at most %d (use ecmp: kernel)",
					n->name, k, d->ifname, ICE_SW_MAX_MEMBERS);
				ret = -E2BIG;
				break;
			}
			for (int j = 0; j < k; j++) {
				const struct topo_port *e = &t->ports[nh[j]];

				m[j] = (struct ice_ecmp_member){
					.ifindex = if_nametoindex(e->ifname),
					.nh = t->ports[e->peer].addr.s_addr};
			}
			ret = ice_sw_ecmp_set(sw, d->addr, 32, m, k);
		}
	}
	if (ret < 0)
		ice_err(ICE_SUB_COMMON, "switch %s: BPF setup failed: %s", n->name, strerror(-ret));
	ice_sw_close(sw); /* the tc attachments and pinned maps stay */
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
		ice_err(ICE_SUB_COMMON, "cannot write the FRR configuration in %s: %s", dir,
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
		ice_err(ICE_SUB_COMMON, "%s in %s did not start (%s %d); see %s/%s.log", daemon, ns,
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
static int frr_start(const struct topo *t)
{
	char dir[512], path[600], ns[64];
	struct passwd *pw = getpwnam("frr");
	int ret;

	if (pw == NULL) {
		ice_err(ICE_SUB_COMMON, "routing frr: there is no user 'frr' (is FRR installed?)");
		return -ENOENT;
	}
	if (access(FRR_DIR "/zebra", X_OK) < 0 || access(FRR_DIR "/bgpd", X_OK) < 0) {
		ice_err(ICE_SUB_COMMON,
			"routing frr: " FRR_DIR "/zebra and bgpd are needed (FRR 8)");
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
					ice_err(ICE_SUB_COMMON, "cannot make %s for frr: %s", dir,
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
					ice_err(ICE_SUB_COMMON, "zebra of %s does not serve %s",
						n->name, path);
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
static bool routes_converged(const struct topo *t, struct buf *missing, uint32_t *nroutes)
{
	bool ok = true;

	*nroutes = 0;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		char ns[64], pfx[64], a1[INET_ADDRSTRLEN];
		char *argv[] = {"ip", "-n", ns, "-j", "route", "show", NULL};
		struct buf out = {0};
		json_t *routes = NULL;
		uint32_t nh[64];

		if (n->kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		if (run(argv, NULL, &out, NULL, 0) == 0 && out.p != NULL)
			routes = json_loads(out.p, 0, NULL);
		bfree(&out);
		for (uint32_t j = 0; j < topo_nic_count(t); j++) {
			const struct topo_port *d = topo_nic(t, j);
			int k = topo_nexthops(t, n->id, d->id, nh, 64), have;
			uint32_t mask = d->plen == 0 ? 0 : ~0u << (32 - d->plen);
			struct in_addr a = {.s_addr = htonl(ntohl(d->addr.s_addr) & mask)};

			if (k <= 0 || (k == 1 && t->ports[nh[0]].peer == d->id))
				continue;
			snprintf(pfx, sizeof(pfx), "%s/%u", addr_str(a, a1), d->plen);
			have = routes != NULL ? route_nexthops(routes, pfx) : 0;
			if (have == k) {
				(*nroutes)++;
				continue;
			}
			ok = false;
			if (missing != NULL)
				bprintf(missing, "\n  %s: %s has %d of %d next hops", n->name, pfx,
					have, k);
		}
		json_decref(routes);
	}
	return ok;
}

static int frr_wait_converged(const struct topo *t, bool quiet)
{
	uint64_t t0 = ice_now_ns(), end = t0 + FRR_CONVERGE_S * ICE_NSEC_PER_SEC;
	struct buf missing = {0};
	uint32_t nroutes;

	while (!routes_converged(t, NULL, &nroutes)) {
		if (ice_now_ns() > end) {
			routes_converged(t, &missing, &nroutes);
			ice_err(ICE_SUB_COMMON,
				"FRR did not converge within %d s; missing ECMP routes:%s "
				"(logs: " FAB_STATE_DIR "/%s/frr/<switch>/*.log)",
				FRR_CONVERGE_S, missing.p ? missing.p : "", t->name);
			bfree(&missing);
			return -ETIMEDOUT;
		}
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	if (!quiet)
		printf("ice-fabric: %s: FRR converged in %.2f s (%u ECMP routes checked)\n",
		       t->name, (double)(ice_now_ns() - t0) * 1e-9, nroutes);
	return 0;
}

/* ---- up ------------------------------------------------------------------------------ */

static bool dir_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Does any namespace ice<fabric>-* exist? */
static bool fabric_ns_exist(const char *fabric)
{
	char prefix[64];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir("/run/netns");

	if (d == NULL)
		return false;
	snprintf(prefix, sizeof(prefix), "ice%s-", fabric);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			found = true;
	closedir(d);
	return found;
}

static void tbf_line(struct buf *b, const char *ifname, uint64_t rate_bps, uint32_t mtu,
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
	bprintf(b, "qdisc replace dev %s root tbf rate %llubit burst %llu limit %llu\n", ifname,
		(unsigned long long)rate_bps, (unsigned long long)burst, (unsigned long long)limit);
}

/* Can something listen on addr:port (TCP)? 0 or -errno (EADDRINUSE). */
static int port_free(const char *addr, unsigned int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The management bridge's name and subnet come from a hash of the fabric
 * name: refuse a fabric whose hash meets another one's (or anything else
 * using those names or that subnet) rather than share or delete them. */
static int mgmt_free(const char *fabric)
{
	char br[32], want[32], have[INET_ADDRSTRLEN];
	struct if_nameindex *ifs = if_nameindex();
	struct ifaddrs *ia = NULL;
	int ret = 0;

	mgmt_bridge(fabric, br, sizeof(br));
	for (struct if_nameindex *i = ifs; i != NULL && i->if_index != 0 && ret == 0; i++)
		if (strncmp(i->if_name, br, 7) == 0) {
			ice_err(ICE_SUB_COMMON,
				"fabric '%s': root link %s already exists, and this fabric's root "
				"links are named %.7s*; another fabric whose name hashes alike is "
				"up: "
				"choose another name",
				fabric, i->if_name, br);
			ret = -EEXIST;
		}
	if (ifs != NULL)
		if_freenameindex(ifs);
	snprintf(want, sizeof(want), MGMT_NET ".%u.", mgmt_byte(fabric));
	if (ret == 0 && getifaddrs(&ia) == 0) {
		for (struct ifaddrs *a = ia; a != NULL && ret == 0; a = a->ifa_next) {
			if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET)
				continue;
			addr_str(((struct sockaddr_in *)a->ifa_addr)->sin_addr, have);
			if (strncmp(have, want, strlen(want)) == 0) {
				ice_err(ICE_SUB_COMMON,
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

static int start_redis(const char *fabric, unsigned int port)
{
	char portstr[16], bind[32], pid[300], dir[256], err[1024];
	char *argv[] = {"redis-server",
			"--port",
			portstr,
			"--bind",
			bind,
			"--protected-mode",
			"no",
			"--daemonize",
			"yes",
			"--pidfile",
			pid,
			"--dir",
			dir,
			"--save",
			"",
			"--appendonly",
			"no",
			NULL};
	int ret;

	snprintf(portstr, sizeof(portstr), "%u", port);
	snprintf(bind, sizeof(bind), MGMT_NET ".%u.1", mgmt_byte(fabric));
	ret = port_free(bind, port);
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "--redis %u: cannot listen on %s:%u: %s", port, bind, port,
			strerror(-ret));
		return ret;
	}
	state_path(fabric, "redis.pid", pid, sizeof(pid));
	state_path(fabric, NULL, dir, sizeof(dir));
	ret = run(argv, NULL, NULL, err, sizeof(err));
	if (ret != 0) {
		ice_err(ICE_SUB_COMMON, "redis-server on %s:%u did not start: %s", bind, port, err);
		return -EIO;
	}
	for (int i = 0; i < 150; i++) { /* the pid file appears once it serves */
		if (access(pid, F_OK) == 0)
			return 0;
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	}
	ice_err(ICE_SUB_COMMON, "redis-server on %s:%u did not come up within 3 s", bind, port);
	return -ETIMEDOUT;
}

int fab_up(const struct topo *t, const struct fab_opts *o)
{
	char path[512], ns[64], ns2[64], br[32], rv[32], a1[INET_ADDRSTRLEN];
	struct buf root = {0}, b = {0};
	uint64_t t0 = ice_now_ns();
	uint32_t hosts = 0;
	FILE *f;
	int ret = 0;

	enum topo_routing routing = o->routing >= 0 ? (enum topo_routing)o->routing : t->routing;

	if (geteuid() != 0) {
		ice_err(ICE_SUB_COMMON, "ice-fabric up needs root (namespaces, qdiscs, BPF)");
		return -EPERM;
	}
	state_path(t->name, NULL, path, sizeof(path));
	if (dir_exists(path) || fabric_ns_exist(t->name)) {
		ice_err(ICE_SUB_COMMON,
			"fabric '%s' is already up (or was left half-made): run "
			"`ice-fabric down %s` first",
			t->name, t->name);
		return -EEXIST;
	}
	ret = mgmt_free(t->name);
	if (ret < 0)
		return ret;
	mkdir(FAB_STATE_DIR, 0755);
	if (mkdir(path, 0755) < 0) {
		ret = -errno;
		ice_err(ICE_SUB_COMMON, "cannot create %s: %s", path, strerror(-ret));
		return ret;
	}
	state_path(t->name, "topo.yaml", path, sizeof(path));
	f = fopen(path, "w");
	if (f == NULL || topo_write_yaml(t, f) < 0) {
		ret = -EIO;
		if (f != NULL)
			fclose(f);
		ice_err(ICE_SUB_COMMON, "cannot write %s", path);
		goto err;
	}
	fclose(f);
	state_path(t->name, "routing", path, sizeof(path));
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "%s\n", routing == TOPO_ROUTING_FRR ? "frr" : "static");
		fclose(f);
	}
	if (o->redis_port != 0) {
		state_path(t->name, "redis.port", path, sizeof(path));
		f = fopen(path, "w");
		if (f != NULL) {
			fprintf(f, "%u\n", o->redis_port);
			fclose(f);
		}
	}

	/* namespaces, then their sysctls (before links, so 'default' applies) */
	for (uint32_t i = 0; i < t->nnodes; i++) {
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		bprintf(&root, "netns add %s\n", ns);
	}
	ret = batch("ip", NULL, root.p);
	bfree(&root);
	for (uint32_t i = 0; i < t->nnodes && ret == 0; i++) {
		struct sysctl_arg sa = {.t = t, .n = &t->nodes[i]};

		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		ret = in_netns(ns, set_sysctls, &sa);
	}
	if (ret < 0)
		goto err;

	/* links, straight into their namespaces; the management network */
	for (uint32_t i = 0; i < t->nlinks; i++) {
		const struct topo_port *pa = &t->ports[t->links[i].a],
				       *pb = &t->ports[t->links[i].b];

		fab_ns_name(t, &t->nodes[pa->node], ns, sizeof(ns));
		fab_ns_name(t, &t->nodes[pb->node], ns2, sizeof(ns2));
		bprintf(&root,
			"link add name %s netns %s mtu %u type veth peer name %s netns %s mtu %u\n",
			pa->ifname, ns, t->mtu, pb->ifname, ns2, t->mtu);
	}
	mgmt_bridge(t->name, br, sizeof(br));
	bprintf(&root, "link add name %s type bridge\n", br);
	bprintf(&root, "addr add " MGMT_NET ".%u.1/24 dev %s\n", mgmt_byte(t->name), br);
	bprintf(&root, "link set %s up\n", br);
	for (uint32_t i = 0; i < t->nnodes; i++) {
		if (t->nodes[i].kind != TOPO_HOST)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		mgmt_root_veth(t->name, hosts, rv, sizeof(rv));
		bprintf(&root, "link add name %s type veth peer name mgmt0 netns %s\n", rv, ns);
		bprintf(&root, "link set %s master %s\n", rv, br);
		bprintf(&root, "link set %s up\n", rv);
		hosts++;
	}
	ret = batch("ip", NULL, root.p);
	bfree(&root);
	if (ret < 0)
		goto err;

	/* per namespace: addresses, links up, routes, then qdiscs */
	hosts = 0;
	for (uint32_t i = 0; i < t->nnodes && ret == 0; i++) {
		const struct topo_node *n = &t->nodes[i];

		fab_ns_name(t, n, ns, sizeof(ns));
		bprintf(&b, "link set lo up\n");
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];

			bprintf(&b, "addr add %s/%u dev %s\n", addr_str(p->addr, a1), p->plen,
				p->ifname);
			bprintf(&b, "link set %s up\n", p->ifname);
		}
		if (n->kind == TOPO_SWITCH) {
			bprintf(&b, "addr add %s/32 dev lo\n", addr_str(n->loopback, a1));
		} else {
			bprintf(&b, "addr add " MGMT_NET ".%u.%u/24 dev mgmt0\n",
				mgmt_byte(t->name), hosts + 2);
			bprintf(&b, "link set mgmt0 up\n");
			hosts++;
		}
		if (routing == TOPO_ROUTING_STATIC || n->kind == TOPO_HOST)
			static_routes(t, n, NULL, &b);
		ret = batch("ip", ns, b.p);
		bfree(&b);
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &t->ports[n->ports[j]];
			const struct topo_link *l = &t->links[p->link];

			tbf_line(&b, p->ifname, l->rate_bps, t->mtu, l->buffer_bytes);
		}
		if (ret == 0)
			ret = batch("tc", ns, b.p);
		bfree(&b);
	}
	if (ret < 0)
		goto err;

	/* the switch ports' egress model (and the ECMP model) */
	for (uint32_t i = 0; i < t->nnodes && ret == 0 && !o->no_bpf; i++) {
		const struct topo_node *n = &t->nodes[i];
		struct bpf_arg ba = {.t = t, .n = n, .pin = path};

		if (n->kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		pin_path(t->name, n->name, path, sizeof(path));
		ret = in_netns(ns, setup_switch_bpf, &ba);
	}
	if (ret < 0)
		goto err;
	if (o->redis_port != 0) {
		ret = start_redis(t->name, o->redis_port);
		if (ret < 0)
			goto err;
	}
	if (routing == TOPO_ROUTING_FRR) {
		ret = frr_start(t);
		if (ret == 0)
			ret = frr_wait_converged(t, o->quiet);
		if (ret < 0)
			goto err;
	}
	if (!o->quiet)
		printf("ice-fabric: %s up: %u nodes, %u links, %s routing, ECMP %s, in %.2f s\n",
		       t->name, t->nnodes, t->nlinks,
		       routing == TOPO_ROUTING_STATIC ? "static" : "FRR",
		       t->ecmp == TOPO_ECMP_KERNEL ? "by the kernel" : "by the hash model (BPF)",
		       (double)(ice_now_ns() - t0) * 1e-9);
	return 0;
err:
	bfree(&root);
	bfree(&b);
	ice_err(ICE_SUB_COMMON, "fabric %s: bringing it up failed; removing what was made",
		t->name);
	fab_down(t->name);
	return ret;
}

/* ---- down ---------------------------------------------------------------------------- */

/* pids to stop, collected then signalled together */
struct pidset {
	pid_t pid[1024];
	int n;
};

static void pidset_add(struct pidset *ps, pid_t pid)
{
	if (pid <= 1 || pid == getpid())
		return;
	for (int i = 0; i < ps->n; i++)
		if (ps->pid[i] == pid)
			return;
	if (ps->n < (int)(sizeof(ps->pid) / sizeof(ps->pid[0])))
		ps->pid[ps->n++] = pid;
}

static void pidset_add_file(struct pidset *ps, const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = 0;

	if (f == NULL)
		return;
	if (fscanf(f, "%d", &pid) == 1)
		pidset_add(ps, pid);
	fclose(f);
}

/* Every process whose network namespace is the named one (as `ip netns
 * pids`): a namespace with processes in it outlives its name. */
static void pidset_add_netns(struct pidset *ps, const char *ns)
{
	char path[300];
	struct stat want, st;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if (stat(path, &want) < 0)
		return;
	d = opendir("/proc");
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end != '\0' || pid <= 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		if (stat(path, &st) == 0 && st.st_ino == want.st_ino && st.st_dev == want.st_dev)
			pidset_add(ps, (pid_t)pid);
	}
	closedir(d);
}

/* SIGTERM all, wait up to 0.5 s, SIGKILL what is left (FRR takes 1-2 s
 * to withdraw routes from a namespace that is about to go anyway). */
static void pidset_stop(struct pidset *ps)
{
	int alive = ps->n;

	for (int i = 0; i < ps->n; i++)
		kill(ps->pid[i], SIGTERM);
	for (int k = 0; k < 50 && alive > 0; k++) {
		ice_sleep_ns(10 * ICE_NSEC_PER_MSEC);
		alive = 0;
		for (int i = 0; i < ps->n; i++) {
			waitpid(ps->pid[i], NULL, WNOHANG); /* our own children */
			alive += kill(ps->pid[i], 0) == 0;
		}
	}
	for (int i = 0; i < ps->n && alive > 0; i++)
		if (kill(ps->pid[i], SIGKILL) == 0)
			waitpid(ps->pid[i], NULL, WNOHANG);
}

static int rm_tree(const char *path)
{
	char *argv[] = {"rm", "-rf", "--one-file-system", (char *)path, NULL};

	return run(argv, NULL, NULL, NULL, 0);
}

/* ice-agent leaves its lock file (/run/ice/agent-<addr>.lock) on purpose:
 * unlinking it would race a successor. The fabric's agents are gone with
 * its namespaces, so their lock files go too -- only those nobody holds. */
static void agent_locks_remove(const char *name)
{
	struct ice_cfg_err err;
	char path[512];
	struct topo *t;

	state_path(name, "topo.yaml", path, sizeof(path));
	if (access(path, R_OK) < 0 || (t = topo_load(path, &err)) == NULL)
		return;
	for (uint32_t i = 0; i < topo_nic_count(t); i++) {
		char a[INET_ADDRSTRLEN];
		int fd;

		inet_ntop(AF_INET, &topo_nic(t, i)->addr, a, sizeof(a));
		snprintf(path, sizeof(path), FAB_STATE_DIR "/agent-%s.lock", a);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlink(path);
		close(fd);
	}
	topo_free(t);
}

int fab_down(const char *name)
{
	char path[512], prefix[64], br[32];
	struct buf root = {0};
	struct if_nameindex *ifs;
	struct pidset *ps;
	struct dirent *de;
	DIR *d;
	int removed = 0;

	/* processes first: a namespace with processes in it outlives its name */
	ps = calloc(1, sizeof(*ps));
	if (ps == NULL)
		return -ENOMEM;
	state_path(name, "redis.pid", path, sizeof(path));
	pidset_add_file(ps, path);
	state_path(name, "frr", path, sizeof(path));
	d = opendir(path);
	if (d != NULL) {
		while ((de = readdir(d)) != NULL) {
			char pf[1024];

			if (de->d_name[0] == '.')
				continue;
			snprintf(pf, sizeof(pf), "%s/%s/bgpd.pid", path, de->d_name);
			pidset_add_file(ps, pf);
			snprintf(pf, sizeof(pf), "%s/%s/zebra.pid", path, de->d_name);
			pidset_add_file(ps, pf);
		}
		closedir(d);
	}
	snprintf(prefix, sizeof(prefix), "ice%s-", name);
	d = opendir("/run/netns");
	if (d != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
				pidset_add_netns(ps, de->d_name);
		closedir(d);
	}
	pidset_stop(ps);
	free(ps);
	agent_locks_remove(name);
	/* management links in the root namespace */
	mgmt_bridge(name, br, sizeof(br));
	ifs = if_nameindex();
	for (struct if_nameindex *i = ifs; i != NULL && i->if_index != 0; i++)
		if (strncmp(i->if_name, br, 7) == 0) /* ice<hash4>: bridge and veths */
			bprintf(&root, "link del %s\n", i->if_name);
	if (ifs != NULL)
		if_freenameindex(ifs);
	if (root.p != NULL) {
		batch("ip", NULL, root.p);
		removed++;
	}
	bfree(&root);
	/* namespaces (their veths go with them) */
	snprintf(prefix, sizeof(prefix), "ice%s-", name);
	d = opendir("/run/netns");
	if (d != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
				bprintf(&root, "netns del %s\n", de->d_name);
				removed++;
			}
		closedir(d);
	}
	if (root.p != NULL)
		batch("ip", NULL, root.p);
	bfree(&root);
	for (int i = 0; i < 2; i++) {
		if (i == 0)
			pin_path(name, NULL, path, sizeof(path));
		else
			state_path(name, NULL, path, sizeof(path));
		if (dir_exists(path)) {
			rm_tree(path);
			removed++;
		}
	}
	return removed > 0 ? 0 : -ENOENT; /* -ENOENT: there was nothing to remove */
}

/* ---- status, stats, exec, link ----------------------------------------------------------- */

struct topo *fab_topo(const char *name)
{
	char path[512];
	struct ice_cfg_err err;
	struct topo *t;
	FILE *f;

	state_path(name, "topo.yaml", path, sizeof(path));
	if (access(path, R_OK) < 0) {
		ice_err(ICE_SUB_COMMON, "fabric '%s' is not up (no %s)", name, path);
		errno = ENOENT;
		return NULL;
	}
	t = topo_load(path, &err);
	if (t == NULL) {
		char buf[640];

		ice_err(ICE_SUB_COMMON, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return NULL;
	}
	/* `up --routing` may have overridden the file */
	state_path(name, "routing", path, sizeof(path));
	f = fopen(path, "r");
	if (f != NULL) {
		char r[16] = "";

		if (fscanf(f, "%15s", r) == 1)
			t->routing = strcmp(r, "frr") == 0 ? TOPO_ROUTING_FRR : TOPO_ROUTING_STATIC;
		fclose(f);
	}
	return t;
}

int fab_list(FILE *out)
{
	struct dirent *de;
	DIR *d = opendir(FAB_STATE_DIR);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char p[512];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), FAB_STATE_DIR "/%s/topo.yaml", de->d_name);
		if (access(p, R_OK) == 0) {
			if (out != NULL)
				fprintf(out, "%s\n", de->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* operstate of every interface of a namespace: "IF STATE" lines */
static int link_states(const char *ns, struct buf *out)
{
	char *argv[] = {"ip", "-n", (char *)ns, "-br", "link", NULL};

	return run(argv, NULL, out, NULL, 0);
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

int fab_status(const char *name, FILE *out)
{
	struct topo *t = fab_topo(name);
	char ns[64], port[16], sa[16], sb[16], lname[64];
	struct buf *tab;
	uint32_t down = 0;
	FILE *f;

	if (t == NULL)
		return -ENOENT;
	tab = calloc(t->nnodes, sizeof(*tab));
	for (uint32_t i = 0; i < t->nnodes; i++) {
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		link_states(ns, &tab[i]);
	}
	{
		char p[512];

		state_path(name, "redis.port", p, sizeof(p));
		f = fopen(p, "r");
		port[0] = '\0';
		if (f != NULL) {
			if (fscanf(f, "%15s", port) != 1)
				port[0] = '\0';
			fclose(f);
		}
	}
	fprintf(out, "fabric %s: %u nodes, %u links, MTU %u, %s routing, ECMP %s\n", t->name,
		t->nnodes, t->nlinks, t->mtu, t->routing == TOPO_ROUTING_STATIC ? "static" : "FRR",
		t->ecmp == TOPO_ECMP_KERNEL ? "kernel" : "model");
	fprintf(out, "management: " MGMT_NET ".%u.0/24 on %s", mgmt_byte(name), "ice bridge");
	if (port[0])
		fprintf(out, ", redis at " MGMT_NET ".%u.1:%s", mgmt_byte(name), port);
	fprintf(out, "\n");
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
		bfree(&tab[i]);
	free(tab);
	topo_free(t);
	return 0;
}

struct stats_arg {
	const struct topo *t;
	const struct topo_node *n;
	json_t *ports;
	FILE *out;
	bool json, new_peak;
};

static int switch_stats(void *arg)
{
	struct stats_arg *a = arg;
	char pin[512];

	pin_path(a->t->name, a->n->name, pin, sizeof(pin));
	for (uint32_t j = 0; j < a->n->nports; j++) {
		const struct topo_port *p = &a->t->ports[a->n->ports[j]];
		const struct topo_node *peer = &a->t->nodes[a->t->ports[p->peer].node];
		struct ice_port_stats st;
		int ifindex = (int)if_nametoindex(p->ifname);

		if (ifindex == 0 || ice_sw_counters(pin, ifindex, &st) < 0)
			continue;
		if (a->json) {
			json_array_append_new(
				a->ports,
				json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
					  "switch", a->n->name, "port", p->ifname, "to", peer->name,
					  "bytes", (json_int_t)st.c.bytes, "packets",
					  (json_int_t)st.c.packets, "ce_marked",
					  (json_int_t)st.c.ce_marked, "drops",
					  (json_int_t)(st.c.drops + st.c.wred_drops),
					  "injected_drops", (json_int_t)st.c.injected_drops,
					  "depth", (json_int_t)st.depth_now, "peak_depth",
					  (json_int_t)st.c.peak_depth, "depth_area_bns",
					  (json_int_t)st.c.depth_area));
		} else {
			fprintf(a->out,
				"  %-8s %-6s -> %-8s %12llu %10llu %9llu %8llu %8llu %9llu %9llu\n",
				a->n->name, p->ifname, peer->name, (unsigned long long)st.c.bytes,
				(unsigned long long)st.c.packets,
				(unsigned long long)st.c.ce_marked,
				(unsigned long long)(st.c.drops + st.c.wred_drops),
				(unsigned long long)st.c.injected_drops,
				(unsigned long long)st.depth_now,
				(unsigned long long)st.c.peak_depth);
		}
	}
	if (a->new_peak) /* after the reads: the window that ends is the one shown */
		ice_sw_peak_reset(pin);
	return 0;
}

int fab_stats(const char *name, bool json, bool new_peak, FILE *out)
{
	struct topo *t = fab_topo(name);
	json_t *ports = json ? json_array() : NULL;
	char ns[64];

	if (t == NULL)
		return -ENOENT;
	if (!json)
		fprintf(out, "  %-8s %-6s    %-8s %12s %10s %9s %8s %8s %9s %9s\n", "switch",
			"port", "to", "bytes", "packets", "ce", "drops", "injected", "depth",
			"peak");
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct stats_arg sa = {.t = t,
				       .n = &t->nodes[i],
				       .ports = ports,
				       .out = out,
				       .json = json,
				       .new_peak = new_peak};

		if (t->nodes[i].kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		in_netns(ns, switch_stats, &sa);
	}
	if (json) {
		json_t *root = json_pack("{s:s, s:o}", "fabric", t->name, "ports", ports);

		json_dumpf(root, out, JSON_INDENT(1));
		fprintf(out, "\n");
		json_decref(root);
	}
	topo_free(t);
	return 0;
}

int fab_exec(const char *name, const char *node, char **argv)
{
	struct topo *t = fab_topo(name);
	const struct topo_node *n;
	char ns[64], path[300], env[64], port[16] = "";
	int fd;
	FILE *f;

	if (t == NULL)
		return -ENOENT;
	n = topo_node_by_name(t, node);
	if (n == NULL) {
		ice_err(ICE_SUB_COMMON, "fabric %s has no node '%s'", name, node);
		topo_free(t);
		return -ENOENT;
	}
	fab_ns_name(t, n, ns, sizeof(ns));
	topo_free(t);
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		ice_err(ICE_SUB_COMMON, "cannot enter %s: %s", ns, strerror(errno));
		return -errno;
	}
	setenv("ICE_FABRIC", name, 1);
	state_path(name, "redis.port", path, sizeof(path));
	f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%15s", port) == 1) {
			snprintf(env, sizeof(env), MGMT_NET ".%u.1:%s", mgmt_byte(name), port);
			setenv("ICE_REDIS", env, 1);
		}
		fclose(f);
	}
	execvp(argv[0], argv);
	ice_err(ICE_SUB_COMMON, "cannot run %s in %s: %s", argv[0], ns, strerror(errno));
	return -errno;
}

/* With a fabric Redis (up --redis): record a link's state where the
 * controller reads it (docs/redis-schema.md, "Fabric"): HSET ice:<F>:links
 * <link> {"state","ts_ms"} and PUBLISH ice:<F>:links <link>. Best effort:
 * a failure is logged, the link change stands. */
static void link_record(const char *name, const char *link, bool up)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct timeval tv = {.tv_sec = 1};
	char path[512], port[16] = "", ip[32], val[96], key[128], cmd[768], rep[256];
	int fd, n, len = 0;
	FILE *f;

	state_path(name, "redis.port", path, sizeof(path));
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fscanf(f, "%15s", port) != 1)
		port[0] = '\0';
	fclose(f);
	if (port[0] == '\0')
		return;
	snprintf(ip, sizeof(ip), MGMT_NET ".%u.1", mgmt_byte(name));
	sa.sin_port = htons((uint16_t)atoi(port));
	inet_pton(AF_INET, ip, &sa.sin_addr);
	snprintf(val, sizeof(val), "{\"state\":\"%s\",\"ts_ms\":%llu}", up ? "up" : "down",
		 (unsigned long long)ice_wall_ms());
	snprintf(key, sizeof(key), "ice:%s:links", name);
	len += snprintf(cmd + len, sizeof(cmd) - (size_t)len,
			"*4\r\n$4\r\nHSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
			strlen(key), key, strlen(link), link, strlen(val), val);
	len += snprintf(cmd + len, sizeof(cmd) - (size_t)len,
			"*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(key), key,
			strlen(link), link);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, cmd, (size_t)len) != len || (n = (int)read(fd, rep, sizeof(rep) - 1)) <= 0 ||
	    rep[0] == '-')
		ice_warn(ICE_SUB_COMMON, "link %s: cannot record its state in redis at %s:%s", link,
			 ip, port);
	close(fd);
}

/* ---- link state: failover in the BPF switches ------------------------------------------ */

struct failover_arg {
	const struct topo *t;
	const struct topo_node *n;
	const bool *down;
	int changed;
};

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

/* One switch: every ECMP group's members as the converged routes use them. */
static int failover_switch(void *arg)
{
	struct failover_arg *a = arg;
	char pin[512];

	pin_path(a->t->name, a->n->name, pin, sizeof(pin));
	if (access(pin, F_OK) != 0)
		return 0; /* no BPF switch here (`up --no-bpf`) */
	for (uint32_t i = 0; i < topo_nic_count(a->t); i++) {
		const struct topo_port *d = topo_nic(a->t, i);
		uint32_t mask, nh[ICE_SW_MAX_MEMBERS];
		int k = topo_nexthops_down(a->t, a->n->id, d->id, a->down, nh, ICE_SW_MAX_MEMBERS,
					   &mask),
		    ret;

		if (k < 2)
			continue; /* no group there (see setup_switch_bpf) */
		ret = ice_sw_ecmp_down(pin, d->addr, 32, mask);
		if (ret < 0)
			return ret;
		a->changed += ret;
	}
	return 0;
}

/* After a link change, the fabric does what its routing would do once
 * converged: next hops whose link is down, or whose next switch lost its
 * shortest path to the destination, are out of use. Static routes are
 * rewritten without them (and put back, the kernel having deleted those
 * whose only next hop went down); the model switches' flows on such members
 * move to the group's live members (resilient: the others stay). FRR
 * converges by itself: only the hosts' routes are put back. */
static int fab_failover(const struct topo *t)
{
	bool *down = calloc(t->nlinks + 1, sizeof(bool));
	char ns[64];
	int ret = 0;

	if (down == NULL)
		return -ENOMEM;
	for (uint32_t l = 0; l < t->nlinks; l++) {
		const struct topo_port *p = &t->ports[t->links[l].a];

		fab_ns_name(t, &t->nodes[p->node], ns, sizeof(ns));
		down[l] = in_netns(ns, port_is_up, (void *)p->ifname) == 0;
	}
	/* the model switches first: they carry the traffic, and take no time */
	for (uint32_t i = 0; i < t->nnodes && t->ecmp == TOPO_ECMP_MODEL; i++) {
		struct failover_arg fa = {.t = t, .n = &t->nodes[i], .down = down};
		int r;

		if (t->nodes[i].kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		r = in_netns(ns, failover_switch, &fa);
		if (r < 0)
			ice_err(ICE_SUB_COMMON, "switch %s: ECMP failover: %s", t->nodes[i].name,
				strerror(-r));
		else if (fa.changed > 0)
			ice_info(ICE_SUB_COMMON, "switch %s: %d ECMP members changed state",
				 t->nodes[i].name, fa.changed);
		if (r < 0 && ret == 0)
			ret = r;
	}
	/* every node, whatever one of them said: the first error is returned */
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		struct buf rb = {0};
		int r;

		if (t->routing != TOPO_ROUTING_STATIC && n->kind != TOPO_HOST)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		static_routes(t, n, down, &rb);
		r = batch("ip", ns, rb.p);
		bfree(&rb);
		if (r < 0 && ret == 0)
			ret = r;
	}
	free(down);
	return ret;
}

int fab_link(const char *name, const char *dev, bool up)
{
	struct topo *t = fab_topo(name);
	char a[64], *b, ns[64], cmd[512];
	int link = -1, ret = 0, lock;

	if (t == NULL)
		return -ENOENT;
	snprintf(a, sizeof(a), "%s", dev);
	b = strchr(a, ':');
	if (b == NULL) {
		ice_err(ICE_SUB_COMMON, "link '%s': expected NODE:NODE or NODE:IFNAME", dev);
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
		ice_err(ICE_SUB_COMMON, "fabric %s has no link '%s'", name, dev);
		topo_free(t);
		return -ENOENT;
	}
	/* one link change at a time: each converges from the link states it
	 * sees, and a later one must not be overwritten by an earlier one */
	state_path(t->name, "link.lock", cmd, sizeof(cmd));
	lock = open(cmd, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock >= 0)
		flock(lock, LOCK_EX);
	for (int end = 0; end < 2 && ret == 0; end++) {
		const struct topo_port *p = &t->ports[end ? t->links[link].b : t->links[link].a];

		fab_ns_name(t, &t->nodes[p->node], ns, sizeof(ns));
		snprintf(cmd, sizeof(cmd), "link set %s %s\n", p->ifname, up ? "up" : "down");
		ret = batch("ip", ns, cmd);
	}
	if (ret == 0) {
		char lname[64];

		/* the link changed: converge and say so, whatever converging says */
		ret = fab_failover(t);
		link_record(t->name, topo_link_name(t, (uint32_t)link, lname, sizeof(lname)), up);
	}
	if (lock >= 0)
		close(lock); /* and the lock with it */
	topo_free(t);
	return ret;
}
