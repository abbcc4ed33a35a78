// SPDX-License-Identifier: Apache-2.0
/*
 * ice_host_loader: load the host NIC programs (ice_host.bpf.c), attach them
 * with TCX links (clsact filters where the kernel has no TCX), pin links and
 * maps for a successor, and read flows, events and parser counters. See
 * ice_host_loader.h.
 *
 * TCX: libbpf 1.1 has no API for it and Debian's uapi headers lack the enum,
 * so links are made with bpf_link_create(prog, ifindex, 46/47) and their
 * info is read through the union slot that struct bpf_link_info gives TCX in
 * newer headers (ifindex first, like xdp's).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "ice_host_loader.h"
#include "ice_bpf_util.h"
#include "ice_host.skel.h"
#include "ice_log.h"
#include "ice_roce.h"

#define HOST_SUB	   bpf_log_sub
#define HOST_TCX_INGRESS   46 /* BPF_TCX_INGRESS */
#define HOST_TCX_EGRESS	   47 /* BPF_TCX_EGRESS */
#define HOST_LINK_TYPE_TCX 11 /* BPF_LINK_TYPE_TCX */
#define HOST_MAX_IFS	   64
#define HOST_PROG_PREFIX   "ice_host_"
#define ENOTSUPP_	   524 /* the kernel's ENOTSUPP, not in libc */

enum { HOST_IN = 0, HOST_EG = 1 };

static const char *const host_dir_name[2] = {"ingress", "egress"};
static const int host_tcx_type[2] = {HOST_TCX_INGRESS, HOST_TCX_EGRESS};
static const enum bpf_tc_attach_point host_tc_point[2] = {BPF_TC_INGRESS, BPF_TC_EGRESS};

static const char *const host_pinned_maps[] = {
	ICE_HOST_MAP_FLOWS,
	ICE_HOST_MAP_EVENTS,
	ICE_HOST_MAP_STATS,
	"ice_host_sample_ctr",
};

/* One interface this handle attached to. */
struct host_if {
	int ifindex;
	bool tcx;
	int link_fd[2]; /* TCX links, -1 with clsact */
};

struct ice_host {
	struct ice_host_bpf *skel;
	char pin_dir[PATH_MAX]; /* "" = nothing pinned */
	struct ice_host_opts opts;
	bool tcx; /* how the last attach went */
	struct host_if ifs[HOST_MAX_IFS];
	int nifs;
	struct ring_buffer *rb;
	void (*ev_cb)(const struct ice_flow_event *ev, void *arg);
	void *ev_arg;
	int ev_seen;
};

static int host_link_path(char *buf, size_t size, const char *dir, int ifindex, int d)
{
	char name[64];

	snprintf(name, sizeof(name), "link_%d_%s", ifindex, host_dir_name[d]);
	return ice_bpf_path(buf, size, dir, name);
}

struct ice_host *ice_host_open(const char *pin_dir, const struct ice_host_opts *o)
{
	struct ice_host *h;
	int err;

	ice_bpf_log_init();
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	if (o != NULL)
		h->opts = *o;
	if (h->opts.roce_port == 0)
		h->opts.roce_port = ICE_ROCE_UDP_PORT;
	if (pin_dir != NULL &&
	    snprintf(h->pin_dir, sizeof(h->pin_dir), "%s", pin_dir) >= (int)sizeof(h->pin_dir)) {
		ice_err(HOST_SUB, "pin directory '%s': expected at most %zu characters", pin_dir,
			sizeof(h->pin_dir) - 1);
		err = -ENAMETOOLONG;
		goto err_free;
	}

	h->skel = ice_host_bpf__open();
	if (h->skel == NULL) {
		err = -errno;
		ice_err(HOST_SUB, "opening the host BPF object failed: %s", strerror(-err));
		goto err_free;
	}
	h->skel->rodata->roce_port = h->opts.roce_port;
	h->skel->rodata->sample = h->opts.sample;
	if (h->pin_dir[0]) {
		err = ice_bpf_pin_dir_create(h->pin_dir);
		if (err)
			goto err_destroy;
		err = ice_bpf_pin_maps(h->skel->obj, h->pin_dir);
		if (err)
			goto err_destroy;
	}
	err = ice_host_bpf__load(h->skel);
	if (err) {
		ice_err(HOST_SUB,
			"loading the host BPF programs failed: %s (the verifier log is above; "
			"stale pins in %s? remove them with ice_host_unpin)",
			strerror(-err), h->pin_dir[0] ? h->pin_dir : "-");
		goto err_destroy;
	}
	return h;

err_destroy:
	ice_host_bpf__destroy(h->skel);
err_free:
	free(h);
	errno = -err;
	return NULL;
}

static int host_prog_fd(const struct ice_host *h, int d)
{
	return bpf_program__fd(d == HOST_IN ? h->skel->progs.ice_host_ingress
					    : h->skel->progs.ice_host_egress);
}

static struct host_if *host_if_find(struct ice_host *h, int ifindex)
{
	for (int i = 0; i < h->nifs; i++)
		if (h->ifs[i].ifindex == ifindex)
			return &h->ifs[i];
	return NULL;
}

static void host_if_drop(struct ice_host *h, struct host_if *hi)
{
	for (int d = 0; d < 2; d++)
		if (hi->link_fd[d] >= 0)
			close(hi->link_fd[d]);
	*hi = h->ifs[--h->nifs];
}

/*
 * One TCX link: take over our pinned one (bpf_link_update to this handle's
 * program), else create and pin one. Returns the link fd or a negative errno.
 */
static int host_tcx_link(struct ice_host *h, int ifindex, int d)
{
	int prog_fd = host_prog_fd(h, d), fd, err;
	char path[PATH_MAX] = "";

	if (h->pin_dir[0]) {
		err = host_link_path(path, sizeof(path), h->pin_dir, ifindex, d);
		if (err)
			return err;
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			err = bpf_link_update(fd, prog_fd, NULL);
			if (err == 0) {
				ice_info(HOST_SUB,
					 "ifindex %d %s: took over the pinned TCX link %s", ifindex,
					 host_dir_name[d], path);
				return fd;
			}
			/* Its device is gone (ENOLINK) or it is not a link: start anew. */
			ice_warn(HOST_SUB, "ifindex %d %s: stale pin %s (%s): replacing it",
				 ifindex, host_dir_name[d], path, strerror(-err));
			close(fd);
			unlink(path);
		}
	}
	fd = bpf_link_create(prog_fd, ifindex, (enum bpf_attach_type)host_tcx_type[d], NULL);
	if (fd < 0)
		return fd < -1 ? fd : -errno;
	if (path[0] && bpf_obj_pin(fd, path) != 0) {
		err = -errno;
		ice_err(HOST_SUB, "ifindex %d %s: pinning the TCX link at %s failed: %s", ifindex,
			host_dir_name[d], path, strerror(-err));
		bpf_link_detach(fd);
		close(fd);
		return err;
	}
	return fd;
}

/* Remove one TCX link (fd, or the pinned one when fd < 0) and its pin. */
static int host_tcx_unlink(const char *pin_dir, int ifindex, int d, int fd)
{
	char path[PATH_MAX] = "";
	int own = 0, err = 0;

	if (pin_dir[0] && host_link_path(path, sizeof(path), pin_dir, ifindex, d) != 0)
		path[0] = '\0';
	if (path[0] && fd < 0) {
		fd = bpf_obj_get(path);
		own = fd >= 0;
	}
	if (fd >= 0 && bpf_link_detach(fd) != 0 && errno != ENOLINK) {
		err = -errno;
		ice_err(HOST_SUB, "ifindex %d %s: detaching the TCX link failed: %s", ifindex,
			host_dir_name[d], strerror(-err));
	}
	if (own)
		close(fd);
	if (path[0] && unlink(path) != 0 && errno != ENOENT && err == 0)
		err = -errno;
	return err;
}

static int host_tc_attach(int ifindex, int d, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = host_tc_point[d]);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ICE_HOST_TC_HANDLE,
			    .priority = ICE_HOST_TC_PRIO, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST) {
		ice_err(HOST_SUB, "ifindex %d: creating the clsact qdisc failed: %s", ifindex,
			strerror(-err));
		return err;
	}
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		ice_err(HOST_SUB, "ifindex %d: attaching the %s filter failed: %s", ifindex,
			host_dir_name[d], strerror(-err));
	return err;
}

static int host_tc_detach(int ifindex, int d)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = host_tc_point[d]);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ICE_HOST_TC_HANDLE,
			    .priority = ICE_HOST_TC_PRIO);
	int err = bpf_tc_detach(&hook, &opts);

	/* No clsact qdisc (EINVAL) or no such filter (ENOENT): nothing of ours there. */
	if (err == -ENOENT || err == -EINVAL)
		return 0;
	if (err)
		ice_err(HOST_SUB, "ifindex %d: detaching the %s filter failed: %s", ifindex,
			host_dir_name[d], strerror(-err));
	return err;
}

static bool host_tcx_unsupported(int err)
{
	return err == -EINVAL || err == -EOPNOTSUPP || err == -ENOTSUPP_;
}

int ice_host_attach(struct ice_host *h, int ifindex)
{
	struct host_if *hi;
	int err = 0, d;

	if (ifindex <= 0) {
		ice_err(HOST_SUB, "attach: ifindex %d: expected a positive interface index",
			ifindex);
		return -EINVAL;
	}
	hi = host_if_find(h, ifindex);
	if (hi == NULL) {
		if (h->nifs == HOST_MAX_IFS) {
			ice_err(HOST_SUB,
				"attach: ifindex %d: this handle has %d interfaces already",
				ifindex, HOST_MAX_IFS);
			return -ENOSPC;
		}
		hi = &h->ifs[h->nifs++];
		*hi = (struct host_if){.ifindex = ifindex, .link_fd = {-1, -1}};
	}

	if (!h->opts.force_clsact) {
		for (d = 0; d < 2; d++) {
			int fd = host_tcx_link(h, ifindex, d);

			if (fd < 0) {
				err = fd;
				break;
			}
			if (hi->link_fd[d] >= 0 && hi->link_fd[d] != fd)
				close(hi->link_fd[d]);
			hi->link_fd[d] = fd;
		}
		if (err == 0) {
			/* A clsact filter from an earlier fallback would count twice. */
			host_tc_detach(ifindex, HOST_IN);
			host_tc_detach(ifindex, HOST_EG);
			hi->tcx = h->tcx = true;
			return 0;
		}
		for (d = 0; d < 2; d++) {
			if (hi->link_fd[d] < 0)
				continue;
			host_tcx_unlink(h->pin_dir, ifindex, d, hi->link_fd[d]);
			close(hi->link_fd[d]);
			hi->link_fd[d] = -1;
		}
		if (!host_tcx_unsupported(err)) {
			ice_err(HOST_SUB, "ifindex %d: TCX attach failed: %s", ifindex,
				strerror(-err));
			goto err_drop;
		}
		ice_info(HOST_SUB, "ifindex %d: no TCX here (%s): using clsact filters", ifindex,
			 strerror(-err));
	}

	for (d = 0; d < 2; d++) {
		err = host_tc_attach(ifindex, d, host_prog_fd(h, d));
		if (err)
			goto err_tc;
	}
	hi->tcx = h->tcx = false;
	return 0;

err_tc:
	while (--d >= 0)
		host_tc_detach(ifindex, d);
err_drop:
	host_if_drop(h, hi);
	return err;
}

int ice_host_detach(struct ice_host *h, int ifindex)
{
	struct host_if *hi = host_if_find(h, ifindex);
	int err = 0;

	for (int d = 0; d < 2; d++) {
		int fd = hi != NULL ? hi->link_fd[d] : -1;
		int e = host_tcx_unlink(h->pin_dir, ifindex, d, fd);

		if (e == 0)
			e = host_tc_detach(ifindex, d);
		if (e && err == 0)
			err = e;
	}
	if (hi != NULL)
		host_if_drop(h, hi);
	return err;
}

void ice_host_close(struct ice_host *h)
{
	if (h == NULL)
		return;
	ring_buffer__free(h->rb);
	/* Pinned links live on; unpinned ones (no pin_dir) go with their last fd. */
	while (h->nifs > 0)
		host_if_drop(h, &h->ifs[0]);
	ice_host_bpf__destroy(h->skel);
	free(h);
}

/* A program's name by id; 0 or a negative errno. */
static int host_prog_name(uint32_t id, char name[16])
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id), err;

	if (fd < 0)
		return -errno;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (err == 0)
		snprintf(name, 16, "%s", info.name);
	close(fd);
	return err;
}

static bool host_is_ours(const char *name)
{
	return strncmp(name, HOST_PROG_PREFIX, strlen(HOST_PROG_PREFIX)) == 0;
}

int ice_host_query(const char *pin_dir, int ifindex, struct ice_host_attachment out[2])
{
	int found = 0;

	ice_bpf_log_init();
	for (int d = 0; d < 2; d++) {
		struct ice_host_attachment *a = &out[d];
		char path[PATH_MAX];
		__u32 ids[16], n = 16;
		DECLARE_LIBBPF_OPTS(bpf_prog_query_opts, q, .prog_ids = ids, .prog_cnt = n);
		DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
				    .attach_point = host_tc_point[d]);
		DECLARE_LIBBPF_OPTS(bpf_tc_opts, tco, .handle = ICE_HOST_TC_HANDLE,
				    .priority = ICE_HOST_TC_PRIO);

		memset(a, 0, sizeof(*a));
		/* TCX: any of our programs in the chain, pinned here or not. */
		if (bpf_prog_query_opts(ifindex, (enum bpf_attach_type)host_tcx_type[d], &q) == 0) {
			for (__u32 i = 0; i < q.prog_cnt && i < n; i++) {
				char name[16];

				if (host_prog_name(ids[i], name) == 0 && host_is_ours(name)) {
					a->present = a->tcx = true;
					a->prog_id = ids[i];
					memcpy(a->prog_name, name, sizeof(name));
					break;
				}
			}
		}
		/* Our pinned link, which says which program it runs. */
		if (pin_dir != NULL &&
		    host_link_path(path, sizeof(path), pin_dir, ifindex, d) == 0) {
			int fd = bpf_obj_get(path);

			if (fd >= 0) {
				struct bpf_link_info li = {0};
				__u32 len = sizeof(li);

				if (bpf_obj_get_info_by_fd(fd, &li, &len) == 0 &&
				    li.type == HOST_LINK_TYPE_TCX &&
				    li.xdp.ifindex == (__u32)ifindex) {
					a->pinned = true;
					a->link_id = li.id;
					a->prog_id = li.prog_id;
					a->present = a->tcx = true;
					host_prog_name(li.prog_id, a->prog_name);
				}
				close(fd);
			}
		}
		/* The clsact fallback's filter. */
		if (!a->present && bpf_tc_query(&hook, &tco) == 0) {
			char name[16];

			if (host_prog_name(tco.prog_id, name) == 0 && host_is_ours(name)) {
				a->present = true;
				a->prog_id = tco.prog_id;
				memcpy(a->prog_name, name, sizeof(name));
			}
		}
		found += a->present;
	}
	return found;
}

int ice_host_prog_ids(const struct ice_host *h, uint32_t ids[2])
{
	for (int d = 0; d < 2; d++) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int err = bpf_obj_get_info_by_fd(host_prog_fd(h, d), &info, &len);

		if (err)
			return err;
		ids[d] = info.id;
	}
	return 0;
}

/* Our clsact filters on every interface of the caller's netns. */
static int host_tc_detach_all(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int err = 0;

	if (ifs == NULL)
		return -errno;
	for (i = ifs; i->if_index != 0; i++) {
		for (int d = 0; d < 2; d++) {
			DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = i->if_index,
					    .attach_point = host_tc_point[d]);
			DECLARE_LIBBPF_OPTS(bpf_tc_opts, tco, .handle = ICE_HOST_TC_HANDLE,
					    .priority = ICE_HOST_TC_PRIO);
			char name[16];

			if (bpf_tc_query(&hook, &tco) != 0 ||
			    host_prog_name(tco.prog_id, name) != 0 || !host_is_ours(name))
				continue;
			int e = host_tc_detach(i->if_index, d);

			if (e && err == 0)
				err = e;
		}
	}
	if_freenameindex(ifs);
	return err;
}

int ice_host_unpin(const char *pin_dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	int err = 0, e;
	DIR *dir;

	ice_bpf_log_init();
	dir = opendir(pin_dir);
	if (dir != NULL) {
		while ((de = readdir(dir)) != NULL) {
			int ifindex;
			char d[16];

			if (sscanf(de->d_name, "link_%d_%15s", &ifindex, d) != 2)
				continue;
			e = host_tcx_unlink(pin_dir, ifindex,
					    strcmp(d, "ingress") ? HOST_EG : HOST_IN, -1);
			if (e && err == 0)
				err = e;
		}
		closedir(dir);
	}
	for (size_t i = 0; i < sizeof(host_pinned_maps) / sizeof(host_pinned_maps[0]); i++) {
		e = ice_bpf_path(path, sizeof(path), pin_dir, host_pinned_maps[i]);
		if (e == 0 && unlink(path) != 0 && errno != ENOENT)
			e = -errno;
		if (e && err == 0) {
			err = e;
			ice_err(HOST_SUB, "unpinning %s failed: %s", path, strerror(-e));
		}
	}
	e = host_tc_detach_all();
	if (e && err == 0)
		err = e;
	if (rmdir(pin_dir) != 0 && errno != ENOENT && errno != ENOTEMPTY && err == 0) {
		err = -errno;
		ice_err(HOST_SUB, "removing %s failed: %s", pin_dir, strerror(-err));
	}
	return err;
}

/* Sum one flow's per-CPU slots: counts add up, times and PSN from the latest. */
static void host_flow_sum(const struct ice_flow_stats *v, int ncpu, struct ice_flow_stats *s)
{
	__u64 latest = 0;

	memset(s, 0, sizeof(*s));
	for (int c = 0; c < ncpu; c++) {
		const struct ice_flow_stats *p = &v[c];

		if (p->pkts == 0)
			continue;
		s->pkts += p->pkts;
		s->bytes += p->bytes;
		s->data_pkts += p->data_pkts;
		s->data_bytes += p->data_bytes;
		s->ce += p->ce;
		s->cnp += p->cnp;
		s->acks += p->acks;
		s->naks += p->naks;
		s->rnr_naks += p->rnr_naks;
		s->psn_back += p->psn_back;
		s->flags |= p->flags;
		if (s->first_ns == 0 || (p->first_ns && p->first_ns < s->first_ns))
			s->first_ns = p->first_ns;
		if (p->last_ns >= latest) {
			latest = p->last_ns;
			s->last_ns = p->last_ns;
			s->udp_sport = p->udp_sport;
		}
	}
	/* The PSN of the slot whose last data packet is the latest one known. */
	latest = 0;
	for (int c = 0; c < ncpu; c++) {
		if ((v[c].flags & ICE_FLOW_F_PSN) && v[c].last_ns >= latest) {
			latest = v[c].last_ns;
			s->last_psn = v[c].last_psn;
		}
	}
}

int ice_host_foreach_flow(struct ice_host *h,
			  int (*cb)(const struct ice_flow_key *k, const struct ice_flow_stats *s,
				    void *arg),
			  void *arg)
{
	int fd = bpf_map__fd(h->skel->maps.ice_host_flows);
	int ncpu = libbpf_num_possible_cpus(), err, n = 0;
	struct ice_flow_key key, next, *prev = NULL;
	struct ice_flow_stats *vals, sum;

	_Static_assert(sizeof(struct ice_flow_stats) % 8 == 0, "per-CPU values are 8-aligned");
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (vals == NULL)
		return -ENOMEM;
	while ((err = bpf_map_get_next_key(fd, prev, &next)) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, vals) != 0)
			continue; /* evicted meanwhile */
		host_flow_sum(vals, ncpu, &sum);
		n++;
		if (cb(&key, &sum, arg) != 0)
			break;
	}
	free(vals);
	if (err && err != -ENOENT) {
		ice_err(HOST_SUB, "walking %s failed: %s", ICE_HOST_MAP_FLOWS, strerror(-err));
		return err;
	}
	return n;
}

static int host_on_event(void *ctx, void *data, size_t size)
{
	struct ice_host *h = ctx;
	struct ice_flow_event ev;

	if (size < sizeof(ev))
		return 0;
	memcpy(&ev, data, sizeof(ev));
	h->ev_seen++;
	if (h->ev_cb != NULL)
		h->ev_cb(&ev, h->ev_arg);
	return 0;
}

int ice_host_poll_events(struct ice_host *h, int timeout_ms,
			 void (*cb)(const struct ice_flow_event *ev, void *arg), void *arg)
{
	int err;

	if (h->rb == NULL) {
		h->rb = ring_buffer__new(bpf_map__fd(h->skel->maps.ice_host_events), host_on_event,
					 h, NULL);
		if (h->rb == NULL) {
			err = -errno;
			ice_err(HOST_SUB, "opening the %s ring buffer failed: %s",
				ICE_HOST_MAP_EVENTS, strerror(-err));
			return err;
		}
	}
	h->ev_cb = cb;
	h->ev_arg = arg;
	h->ev_seen = 0;
	err = ring_buffer__poll(h->rb, timeout_ms);
	if (err < 0 && err != -EINTR) {
		ice_err(HOST_SUB, "polling the %s ring buffer failed: %s", ICE_HOST_MAP_EVENTS,
			strerror(-err));
		return err;
	}
	return h->ev_seen;
}

int ice_host_stats(struct ice_host *h, uint64_t out[ICE_HS_MAX])
{
	int fd = bpf_map__fd(h->skel->maps.ice_host_stats);
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	__u64 *v;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	for (__u32 i = 0; i < ICE_HS_MAX && err == 0; i++) {
		err = bpf_map_lookup_elem(fd, &i, v);
		out[i] = 0;
		for (int c = 0; err == 0 && c < ncpu; c++)
			out[i] += v[c];
	}
	free(v);
	if (err)
		ice_err(HOST_SUB, "reading %s failed: %s", ICE_HOST_MAP_STATS, strerror(-err));
	return err;
}

int ice_host_ingress_fd(const struct ice_host *h)
{
	return host_prog_fd(h, HOST_IN);
}

int ice_host_egress_fd(const struct ice_host *h)
{
	return host_prog_fd(h, HOST_EG);
}

bool ice_host_uses_tcx(const struct ice_host *h)
{
	return h->tcx;
}
