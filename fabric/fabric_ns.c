// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the namespaces, ice<fabric>-<node>. Made with their sysctls,
 * found by their prefix, emptied of their processes and deleted; a
 * switch's kernel ECMP hash seed changed live.
 */
#include "fabric_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

/* ---- making them ------------------------------------------------------------- */

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

	snprintf(seed, sizeof(seed), "%u", topo_kernel_hash_seed(a->t, a->n));
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		int ret = write_file(tab[i].path, tab[i].val);

		if (ret < 0 && strstr(tab[i].path, "ipv6") == NULL) {
			ice_err(FAB_SUB, "sysctl %s = %s: %s", tab[i].path, tab[i].val,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Every node's namespace, then its sysctls (before links, so 'default'
 * applies). */
int fab_ns_create(const struct topo *t)
{
	struct fab_buf root = {0};
	char ns[64];
	int ret;

	for (uint32_t i = 0; i < t->nnodes; i++) {
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		fab_bprintf(&root, "netns add %s\n", ns);
	}
	ret = fab_batch("ip", NULL, root.p);
	fab_buf_free(&root);
	for (uint32_t i = 0; i < t->nnodes && ret == 0; i++) {
		struct sysctl_arg sa = {.t = t, .n = &t->nodes[i]};

		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		ret = fab_in_netns(ns, set_sysctls, &sa);
	}
	return ret;
}

/* ---- a switch's kernel hash seed --------------------------------------------- */

struct seed_arg {
	uint32_t seed, old;
};

static int swap_seed(void *arg)
{
	static const char path[] = "/proc/sys/net/ipv4/fib_multipath_hash_seed";
	struct seed_arg *a = arg;
	char buf[32] = "";
	FILE *f = fopen(path, "r");
	int ret;

	if (f == NULL || fgets(buf, sizeof(buf), f) == NULL) {
		ret = f == NULL ? -errno : -EIO;
		if (f != NULL)
			fclose(f);
		ice_err(FAB_SUB, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	fclose(f);
	a->old = (uint32_t)strtoul(buf, NULL, 10);
	snprintf(buf, sizeof(buf), "%u", a->seed);
	ret = write_file(path, buf);
	if (ret < 0)
		ice_err(FAB_SUB, "sysctl %s = %s: %s", path, buf, strerror(-ret));
	return ret;
}

int fab_ns_hash_seed(const struct topo *t, const struct topo_node *n, uint32_t seed, uint32_t *old)
{
	struct seed_arg a = {.seed = seed};
	char ns[64];
	int ret;

	fab_ns_name(t, n, ns, sizeof(ns));
	ret = fab_in_netns(ns, swap_seed, &a);
	if (ret == 0)
		*old = a.old;
	return ret;
}

/* ---- finding them ------------------------------------------------------------ */

/* fn(ns, arg) for every namespace ice<fabric>-* (fn may be NULL); how many. */
static int ns_each(const char *fabric, void (*fn)(const char *ns, void *arg), void *arg)
{
	char prefix[64];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/run/netns");

	if (d == NULL)
		return 0;
	snprintf(prefix, sizeof(prefix), "ice%s-", fabric);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
			if (fn != NULL)
				fn(de->d_name, arg);
			n++;
		}
	closedir(d);
	return n;
}

bool fab_ns_exist(const char *fabric)
{
	return ns_each(fabric, NULL, NULL) > 0;
}

/* ---- their processes --------------------------------------------------------- */

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
static void pidset_add_netns(const char *ns, void *arg)
{
	struct pidset *ps = arg;
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

/* Runs, and is not a zombie (daemons are reparented; their reaper may be
 * slow, and a zombie holds nothing). */
static bool pid_running(pid_t pid)
{
	char path[64], st[256];
	ssize_t n;
	int fd;

	if (kill(pid, 0) != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		return false;
	st[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	{
		char *p = strrchr(st, ')');

		return p == NULL || p[1] == '\0' || p[2] != 'Z';
	}
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
			alive += pid_running(ps->pid[i]);
		}
	}
	for (int i = 0; i < ps->n && alive > 0; i++)
		if (pid_running(ps->pid[i]) && kill(ps->pid[i], SIGKILL) == 0)
			waitpid(ps->pid[i], NULL, WNOHANG);
}

/* Stop the fabric's processes: Redis, the exporter, FRR, and anything else
 * running in its namespaces (a namespace with processes in it outlives its name). */
int fab_ns_stop_processes(const char *name)
{
	char path[512];
	struct pidset *ps;
	struct dirent *de;
	DIR *d;

	ps = calloc(1, sizeof(*ps));
	if (ps == NULL)
		return -ENOMEM;
	fab_state_path(name, "redis.pid", path, sizeof(path));
	pidset_add_file(ps, path);
	pidset_add(ps, fab_export_pid(name)); /* 0 (none running) is skipped */
	fab_state_path(name, "frr", path, sizeof(path));
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
	ns_each(name, pidset_add_netns, ps);
	pidset_stop(ps);
	free(ps);
	return 0;
}

/* ---- deleting them ----------------------------------------------------------- */

static void ns_del_line(const char *ns, void *arg)
{
	fab_bprintf(arg, "netns del %s\n", ns);
}

int fab_ns_delete(const char *name)
{
	struct fab_buf root = {0};
	int n = ns_each(name, ns_del_line, &root);

	if (root.p != NULL)
		fab_batch("ip", NULL, root.p);
	fab_buf_free(&root);
	return n;
}
