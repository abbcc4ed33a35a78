// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: see fabric.h. The commands: up (in the order below: namespaces,
 * links, addresses, routes and qdiscs, BPF, Redis, FRR, the telemetry
 * exporter), down, what reads a fabric that is up, and a switch's new hash
 * seed. The parts are in fabric_ns.c, fabric_link.c, fabric_route.c,
 * fabric_bpf.c, fabric_redis.c, fabric_export.c and fabric_run.c
 * (fabric_internal.h).
 */
#include "fabric_internal.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_redis.h"
#include "ice_time.h"

/* ---- the state's topology -------------------------------------------------------------- */

/* FAB_STATE_DIR/<fabric>/topo.yaml from t, whole or not at all (readers
 * never see half a file). */
static int state_topo_write(const struct topo *t)
{
	char path[512], tmp[520];
	FILE *f;
	int ret = 0;

	fab_state_path(t->name, "topo.yaml", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	if (f == NULL || topo_write_yaml(t, f) < 0)
		ret = -EIO;
	if (f != NULL && fclose(f) != 0 && ret == 0)
		ret = -EIO;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		unlink(tmp);
		ice_err(FAB_SUB, "cannot write %s: %s", path, strerror(-ret));
	}
	return ret;
}

/* ---- up ------------------------------------------------------------------------------ */

int fab_up(const struct topo *t, const struct fab_opts *o)
{
	char path[512];
	uint64_t t0 = ice_now_ns();
	FILE *f;
	int ret = 0;

	enum topo_routing routing = o->routing >= 0 ? (enum topo_routing)o->routing : t->routing;

	if (geteuid() != 0) {
		ice_err(FAB_SUB, "ice-fabric up needs root (namespaces, qdiscs, BPF)");
		return -EPERM;
	}
	fab_state_path(t->name, NULL, path, sizeof(path));
	if (fab_dir_exists(path) || fab_ns_exist(t->name)) {
		ice_err(FAB_SUB,
			"fabric '%s' is already up (or was left half-made): run "
			"`ice-fabric down %s` first",
			t->name, t->name);
		return -EEXIST;
	}
	ret = fab_mgmt_free(t->name);
	if (ret < 0)
		return ret;
	mkdir(FAB_STATE_DIR, 0755);
	if (mkdir(path, 0755) < 0) {
		ret = -errno;
		ice_err(FAB_SUB, "cannot create %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = state_topo_write(t);
	if (ret < 0)
		goto err;
	fab_state_path(t->name, "routing", path, sizeof(path));
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "%s\n", routing == TOPO_ROUTING_FRR ? "frr" : "static");
		fclose(f);
	}
	if (o->redis_port != 0) {
		fab_state_path(t->name, "redis.port", path, sizeof(path));
		f = fopen(path, "w");
		if (f != NULL) {
			fprintf(f, "%u\n", o->redis_port);
			fclose(f);
		}
	}

	ret = fab_ns_create(t);
	if (ret == 0)
		ret = fab_links_create(t);
	if (ret == 0)
		ret = fab_nodes_configure(t, routing);
	if (ret == 0 && !o->no_bpf)
		ret = fab_bpf_setup(t);
	if (ret < 0)
		goto err;
	if (o->redis_port != 0) {
		ret = o->redis_acl ? fab_redis_acl_render(t) : 0;
		if (ret == 0)
			ret = fab_redis_start(t->name, o->redis_port, o->redis_acl);
		if (ret < 0)
			goto err;
	}
	if (routing == TOPO_ROUTING_FRR) {
		ret = fab_frr_start(t);
		if (ret == 0)
			ret = fab_frr_wait_converged(t, o->quiet);
		if (ret < 0)
			goto err;
	}
	if (o->redis_port != 0 && o->export_ns != 0) {
		ret = fab_export_start(t->name, o->export_ns);
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
	ice_err(FAB_SUB, "fabric %s: bringing it up failed; removing what was made", t->name);
	fab_down(t->name);
	return ret;
}

/* ---- down ---------------------------------------------------------------------------- */

/* ice-agent leaves its lock file (/run/ice/agent-<addr>.lock) on purpose:
 * unlinking it would race a successor. The fabric's agents are gone with
 * its namespaces, so their lock files go too -- only those nobody holds. */
static void agent_locks_remove(const char *name)
{
	struct ice_cfg_err err;
	char path[512];
	struct topo *t;

	fab_state_path(name, "topo.yaml", path, sizeof(path));
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
	char path[512];
	int removed = 0, ret;

	/* processes first: a namespace with processes in it outlives its name */
	ret = fab_ns_stop_processes(name);
	if (ret < 0)
		return ret;
	agent_locks_remove(name);
	/* management links in the root namespace */
	removed += fab_mgmt_delete(name);
	/* namespaces (their veths go with them) */
	removed += fab_ns_delete(name);
	for (int i = 0; i < 2; i++) {
		if (i == 0)
			fab_pin_path(name, NULL, path, sizeof(path));
		else
			fab_state_path(name, NULL, path, sizeof(path));
		if (fab_dir_exists(path)) {
			fab_rm_tree(path);
			removed++;
		}
	}
	return removed > 0 ? 0 : -ENOENT; /* -ENOENT: there was nothing to remove */
}

/* ---- a fabric that is up ---------------------------------------------------------------- */

struct topo *fab_topo(const char *name)
{
	char path[512];
	struct ice_cfg_err err;
	struct topo *t;
	FILE *f;

	fab_state_path(name, "topo.yaml", path, sizeof(path));
	if (access(path, R_OK) < 0) {
		ice_err(FAB_SUB, "fabric '%s' is not up (no %s)", name, path);
		errno = ENOENT;
		return NULL;
	}
	t = topo_load(path, &err);
	if (t == NULL) {
		char buf[640];

		ice_err(FAB_SUB, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return NULL;
	}
	/* `up --routing` may have overridden the file */
	fab_state_path(name, "routing", path, sizeof(path));
	f = fopen(path, "r");
	if (f != NULL) {
		char r[16] = "";

		if (fscanf(f, "%15s", r) == 1)
			t->routing = strcmp(r, "frr") == 0 ? TOPO_ROUTING_FRR : TOPO_ROUTING_STATIC;
		fclose(f);
	}
	return t;
}

/* Up to 8 switch names of t, for an error that says what was expected. */
static void switch_names(const struct topo *t, char *buf, size_t len)
{
	size_t at = 0;
	uint32_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < t->nnodes && at < len; i++) {
		if (t->nodes[i].kind != TOPO_SWITCH)
			continue;
		if (n++ == 8) {
			snprintf(buf + at, len - at, ", ...");
			break;
		}
		at += (size_t)snprintf(buf + at, len - at, "%s%s", n > 1 ? ", " : "",
				       t->nodes[i].name);
	}
}

int fab_hash_seed(const char *name, const char *node, uint32_t seed, bool quiet)
{
	const struct topo_node *n;
	struct ice_cfg_err err;
	char path[512], names[160];
	bool bpf;
	struct topo *t;
	uint32_t old = 0;
	int lock, ret;

	fab_state_path(name, NULL, path, sizeof(path));
	if (!fab_dir_exists(path)) {
		ice_err(FAB_SUB, "fabric '%s' is not up (no %s)", name, path);
		return -ENOENT;
	}
	/* one read-modify-write of the state's topology at a time */
	fab_state_path(name, "topo.lock", path, sizeof(path));
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0) {
		ret = -errno;
		ice_err(FAB_SUB, "cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	flock(lock, LOCK_EX);
	fab_state_path(name, "topo.yaml", path, sizeof(path));
	/* the file as up wrote it (fab_topo() would fold in `up --routing`) */
	t = access(path, R_OK) == 0 ? topo_load(path, &err) : NULL;
	if (t == NULL) {
		ice_err(FAB_SUB, "fabric '%s' is not up (no %s)", name, path);
		ret = -ENOENT;
		goto out;
	}
	switch_names(t, names, sizeof(names));
	n = topo_node_by_name(t, node);
	if (n == NULL || n->kind != TOPO_SWITCH) {
		if (n == NULL)
			ice_err(FAB_SUB, "fabric %s has no switch '%s': expected one of %s", name,
				node, names);
		else
			ice_err(FAB_SUB, "fabric %s: %s is a host: expected a switch (%s)", name,
				node, names);
		ret = n == NULL ? -ENOENT : -EINVAL;
		goto out;
	}
	/* the hash model's switches in BPF, else (kernel ECMP, or `up --no-bpf`)
	 * the kernel's multipath hash */
	fab_pin_path(name, n->name, path, sizeof(path));
	bpf = t->ecmp == TOPO_ECMP_MODEL && access(path, F_OK) == 0;
	if (!bpf && seed == 0) {
		ice_err(FAB_SUB,
			"fabric %s: seed 0: expected 1..4294967295 for kernel ECMP (0 makes "
			"the kernel pick a random seed)",
			name);
		ret = -EINVAL;
		goto out;
	}
	ret = bpf ? fab_bpf_hash_seed(t, n, seed, &old) : fab_ns_hash_seed(t, n, seed, &old);
	if (ret < 0)
		goto out;
	/* the state says what the switch now does (for `status` and whoever
	 * reads the fabric's copy; a controller's own copy stays as it was) */
	if (bpf)
		((struct topo_node *)n)->hash.seed = seed;
	else
		((struct topo_node *)n)->kernel_hash_seed = seed;
	ret = state_topo_write(t);
	if (ret == 0 && !quiet && bpf)
		printf("ice-fabric: %s %s: hash seed 0x%x -> 0x%x (%s, BPF model)\n", name, n->name,
		       old, seed, topo_hash_alg_name(n->hash.alg));
	else if (ret == 0 && !quiet)
		printf("ice-fabric: %s %s: fib_multipath_hash_seed %u -> %u (kernel ECMP)\n", name,
		       n->name, old, seed);
out:
	topo_free(t);
	close(lock);
	return ret;
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

int fab_exec(const char *name, const char *node, char **argv)
{
	struct topo *t = fab_topo(name);
	const struct topo_node *n;
	char ns[64], path[300], env[64], port[16], user[ICE_REDIS_USER_MAX], auth[512];
	int fd;

	if (t == NULL)
		return -ENOENT;
	n = topo_node_by_name(t, node);
	if (n == NULL) {
		ice_err(FAB_SUB, "fabric %s has no node '%s'", name, node);
		topo_free(t);
		return -ENOENT;
	}
	fab_ns_name(t, n, ns, sizeof(ns));
	/* a host's commands speak to the fabric's Redis as that host's user */
	snprintf(user, sizeof(user), "ice-host-%s", n->name);
	if (n->kind == TOPO_HOST && getenv(ICE_REDIS_AUTH_ENV) == NULL &&
	    fab_redis_acl(name, user, auth, sizeof(auth)))
		setenv(ICE_REDIS_AUTH_ENV, auth, 1);
	topo_free(t);
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		ice_err(FAB_SUB, "cannot enter %s: %s", ns, strerror(errno));
		return -errno;
	}
	setenv("ICE_FABRIC", name, 1);
	if (fab_redis_port(name, port)) {
		snprintf(env, sizeof(env), FAB_MGMT_NET ".%u.1:%s", fab_mgmt_byte(name), port);
		setenv("ICE_REDIS", env, 1);
	}
	execvp(argv[0], argv);
	ice_err(FAB_SUB, "cannot run %s in %s: %s", argv[0], ns, strerror(errno));
	return -errno;
}
