// SPDX-License-Identifier: Apache-2.0
/*
 * ice_switch_loader: open, load, pin, attach and configure the switch port
 * programs; read their counters back from the pins. See ice_switch_loader.h.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_switch_loader.h"
#include "ice_bpf_util.h"
#include "ice_switch.skel.h"

#define SW_SUB bpf_log_sub

struct ice_sw {
	struct ice_switch_bpf *skel;
	unsigned int flags;
	__u32 next_gid; /* where the search for a free group starts */
};

static const char *const sw_pinned_maps[] = {
	ICE_SW_MAP_PORT_CFG,  ICE_SW_MAP_PORT_STATE, ICE_SW_MAP_ECMP_LPM, ICE_SW_MAP_ECMP_GRP,
	ICE_SW_MAP_ECMP_HITS, ICE_SW_MAP_HASH,	     ICE_SW_MAP_STATS,	  ICE_SW_MAP_PEAK,
};

struct ice_sw *ice_sw_open(const char *pin_dir, unsigned int flags)
{
	struct topo_hash_cfg hc;
	struct ice_sw *sw;
	__u32 zero = 0;
	int err;

	ice_bpf_log_init();
	sw = calloc(1, sizeof(*sw));
	if (sw == NULL)
		return NULL;
	sw->flags = flags;
	sw->next_gid = 1;

	sw->skel = ice_switch_bpf__open();
	if (sw->skel == NULL) {
		err = -errno;
		ice_err(SW_SUB, "opening the switch BPF object failed: %s", strerror(-err));
		goto err_free;
	}
	if (pin_dir != NULL) {
		err = ice_bpf_pin_dir_create(pin_dir);
		if (err)
			goto err_destroy;
		err = ice_bpf_pin_maps(sw->skel->obj, pin_dir);
		if (err)
			goto err_destroy;
	}
	err = ice_switch_bpf__load(sw->skel);
	if (err) {
		ice_err(SW_SUB,
			"loading the switch BPF programs failed: %s (the verifier log is above; "
			"stale pins in %s? remove them with ice_sw_unpin)",
			strerror(-err), pin_dir ? pin_dir : "-");
		goto err_destroy;
	}

	/* A fresh switch hashes the 5-tuple with CRC32; a reused one keeps its model. */
	err = bpf_map_lookup_elem(bpf_map__fd(sw->skel->maps.ice_sw_hash), &zero, &hc);
	if (err == 0 && hc.fields == 0) {
		hc = (struct topo_hash_cfg){.alg = TOPO_HASH_CRC32, .fields = TOPO_HF_5TUPLE};
		err = ice_sw_hash_set(sw, &hc);
		if (err)
			goto err_destroy;
	}
	return sw;

err_destroy:
	ice_switch_bpf__destroy(sw->skel);
err_free:
	free(sw);
	errno = -err;
	return NULL;
}

void ice_sw_close(struct ice_sw *sw)
{
	if (sw == NULL)
		return;
	ice_switch_bpf__destroy(sw->skel);
	free(sw);
}

static int sw_tc_attach(int ifindex, enum bpf_tc_attach_point where, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ICE_SW_TC_HANDLE,
			    .priority = ICE_SW_TC_PRIO, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	const char *dir = where == BPF_TC_INGRESS ? "ingress" : "egress";
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		ice_err(SW_SUB, "ifindex %d: creating the clsact qdisc failed: %s", ifindex,
			strerror(-err));
		return err;
	}
	err = bpf_tc_attach(&hook, &opts);
	if (err) {
		ice_err(SW_SUB, "ifindex %d: attaching the %s program failed: %s", ifindex, dir,
			strerror(-err));
		return err;
	}
	return 0;
}

static int sw_tc_detach(int ifindex, enum bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ICE_SW_TC_HANDLE,
			    .priority = ICE_SW_TC_PRIO);
	int err = bpf_tc_detach(&hook, &opts);

	if (err && err != -ENOENT) {
		ice_err(SW_SUB, "ifindex %d: detaching from %s failed: %s", ifindex,
			where == BPF_TC_INGRESS ? "ingress" : "egress", strerror(-err));
		return err;
	}
	return 0;
}

int ice_sw_attach(struct ice_sw *sw, int ifindex)
{
	struct ice_port_state st = {0};
	struct ice_port_cfg cfg = {0};
	__u32 key = ifindex;
	int err;

	if (ifindex <= 0) {
		ice_err(SW_SUB, "attach: ifindex %d: expected a positive interface index", ifindex);
		return -EINVAL;
	}
	/* The port's entries first, so the first packet finds them. */
	err = bpf_map_update_elem(bpf_map__fd(sw->skel->maps.ice_port_cfg), &key, &cfg,
				  BPF_NOEXIST);
	if (err && err != -EEXIST)
		goto err_map;
	err = bpf_map_update_elem(bpf_map__fd(sw->skel->maps.ice_port_state), &key, &st,
				  BPF_NOEXIST);
	if (err && err != -EEXIST)
		goto err_map;

	err = sw_tc_attach(ifindex, BPF_TC_EGRESS, bpf_program__fd(sw->skel->progs.ice_sw_egress));
	if (err)
		return err;
	if (sw->flags & ICE_SW_F_ECMP_MODEL) {
		err = sw_tc_attach(ifindex, BPF_TC_INGRESS,
				   bpf_program__fd(sw->skel->progs.ice_sw_ingress));
		if (err)
			goto err_egress;
	}
	return 0;

err_egress:
	sw_tc_detach(ifindex, BPF_TC_EGRESS);
	return err;
err_map:
	ice_err(SW_SUB,
		"ifindex %d: creating the port's map entries failed: %s (more than %d ports?)",
		ifindex, strerror(-err), ICE_SW_MAX_PORTS);
	return err;
}

int ice_sw_detach(struct ice_sw *sw, int ifindex)
{
	int err = sw_tc_detach(ifindex, BPF_TC_EGRESS);
	int err2 = sw_tc_detach(ifindex, BPF_TC_INGRESS);

	return err ? err : err2;
}

int ice_sw_port_config(struct ice_sw *sw, int ifindex, const struct ice_port_cfg *cfg)
{
	__u32 key = ifindex;
	int err;

	if (cfg->kmax && cfg->kmin > cfg->kmax) {
		ice_err(SW_SUB, "ifindex %d: ECN kmin %u > kmax %u: expected kmin <= kmax", ifindex,
			cfg->kmin, cfg->kmax);
		return -EINVAL;
	}
	if (cfg->rate_bps > ICE_SW_MAX_RATE_BPS) {
		ice_err(SW_SUB, "ifindex %d: rate %llu bit/s: expected at most %llu", ifindex,
			(unsigned long long)cfg->rate_bps, (unsigned long long)ICE_SW_MAX_RATE_BPS);
		return -EINVAL;
	}
	if (cfg->pmax > ICE_SW_PPM || cfg->loss_ppm > ICE_SW_PPM) {
		ice_err(SW_SUB,
			"ifindex %d: pmax %u / loss_ppm %u: expected at most %u (per million)",
			ifindex, cfg->pmax, cfg->loss_ppm, ICE_SW_PPM);
		return -EINVAL;
	}
	err = bpf_map_update_elem(bpf_map__fd(sw->skel->maps.ice_port_cfg), &key, cfg, BPF_ANY);
	if (err)
		ice_err(SW_SUB, "ifindex %d: writing the port profile failed: %s", ifindex,
			strerror(-err));
	return err;
}

int ice_sw_hash_set(struct ice_sw *sw, const struct topo_hash_cfg *cfg)
{
	__u32 zero = 0;
	int err;

	if (cfg->alg >= TOPO_HASH_ALG_MAX) {
		ice_err(SW_SUB, "hash algorithm %u: expected 0..%d (enum topo_hash_alg)", cfg->alg,
			TOPO_HASH_ALG_MAX - 1);
		return -EINVAL;
	}
	err = bpf_map_update_elem(bpf_map__fd(sw->skel->maps.ice_sw_hash), &zero, cfg, BPF_ANY);
	if (err)
		ice_err(SW_SUB, "writing the hash model failed: %s", strerror(-err));
	return err;
}

static int sw_check_prefix(struct in_addr prefix, int plen)
{
	if (plen < 0 || plen > 32) {
		ice_err(SW_SUB, "prefix length %d: expected 0..32", plen);
		return -EINVAL;
	}
	return 0;
}

static __u32 sw_mask(__u32 addr_be, int plen)
{
	return plen == 0 ? 0 : addr_be & htonl(~0u << (32 - plen));
}

/* The group that exactly owns prefix/plen, or 0. */
static __u32 sw_group_of(int lpm_fd, int grp_fd, __u32 addr, int plen)
{
	struct ice_lpm4_key key = {.prefixlen = plen, .addr = addr};
	struct ice_ecmp_group g;
	__u32 gid;

	if (bpf_map_lookup_elem(lpm_fd, &key, &gid) != 0)
		return 0;
	if (bpf_map_lookup_elem(grp_fd, &gid, &g) != 0)
		return 0;
	if (!(g.flags & ICE_GRP_F_USED) || g.prefix != addr || g.prefixlen != (__u32)plen)
		return 0;
	return gid;
}

static int sw_group_free(struct ice_sw *sw, __u32 gid)
{
	int grp_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_grp);
	struct ice_ecmp_group g = {0};

	return bpf_map_update_elem(grp_fd, &gid, &g, BPF_ANY);
}

int ice_sw_ecmp_set(struct ice_sw *sw, struct in_addr prefix, int plen,
		    const struct ice_ecmp_member *members, int n)
{
	int lpm_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_lpm);
	int grp_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_grp);
	struct ice_ecmp_group g = {0};
	struct ice_lpm4_key key;
	__u32 addr, old, gid = 0;
	int err;

	err = sw_check_prefix(prefix, plen);
	if (err)
		return err;
	if (n < 0 || n > ICE_SW_MAX_MEMBERS) {
		ice_err(SW_SUB, "ECMP group of %d members: expected 0..%d", n, ICE_SW_MAX_MEMBERS);
		return -EINVAL;
	}
	addr = sw_mask(prefix.s_addr, plen);
	old = sw_group_of(lpm_fd, grp_fd, addr, plen);

	/* A free group id: the old group stays in use until the prefix moves. */
	for (__u32 i = 0; i < ICE_SW_MAX_GROUPS - 1; i++) {
		__u32 cand = 1 + (sw->next_gid - 1 + i) % (ICE_SW_MAX_GROUPS - 1);

		if (bpf_map_lookup_elem(grp_fd, &cand, &g) == 0 && !(g.flags & ICE_GRP_F_USED)) {
			gid = cand;
			break;
		}
	}
	if (gid == 0) {
		ice_err(SW_SUB, "no free ECMP group for %s/%d: all %d in use", inet_ntoa(prefix),
			plen, ICE_SW_MAX_GROUPS - 1);
		return -ENOSPC;
	}
	sw->next_gid = gid % (ICE_SW_MAX_GROUPS - 1) + 1;

	memset(&g, 0, sizeof(g));
	g.n = n;
	g.flags = ICE_GRP_F_USED;
	g.prefix = addr;
	g.prefixlen = plen;
	for (int i = 0; i < n; i++)
		g.m[i] = members[i];
	err = bpf_map_update_elem(grp_fd, &gid, &g, BPF_ANY);
	if (err)
		goto err_log;

	/* Zero the new group's member counters (per CPU). */
	{
		int hits_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_hits);
		int ncpu = libbpf_num_possible_cpus();
		__u64 *zero = calloc(ncpu > 0 ? ncpu : 1, sizeof(*zero));

		if (zero == NULL) {
			err = -ENOMEM;
			goto err_group;
		}
		for (__u32 i = 0; i < ICE_SW_MAX_MEMBERS; i++) {
			__u32 slot = gid * ICE_SW_MAX_MEMBERS + i;

			bpf_map_update_elem(hits_fd, &slot, zero, BPF_ANY);
		}
		free(zero);
	}

	key.prefixlen = plen;
	key.addr = addr;
	err = bpf_map_update_elem(lpm_fd, &key, &gid, BPF_ANY);
	if (err)
		goto err_group;
	if (old)
		sw_group_free(sw, old);
	return 0;

err_group:
	sw_group_free(sw, gid);
err_log:
	ice_err(SW_SUB, "ECMP route %s/%d: writing the maps failed: %s", inet_ntoa(prefix), plen,
		strerror(-err));
	return err;
}

int ice_sw_ecmp_del(struct ice_sw *sw, struct in_addr prefix, int plen)
{
	int lpm_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_lpm);
	int grp_fd = bpf_map__fd(sw->skel->maps.ice_ecmp_grp);
	struct ice_lpm4_key key;
	__u32 gid;
	int err;

	err = sw_check_prefix(prefix, plen);
	if (err)
		return err;
	key.prefixlen = plen;
	key.addr = sw_mask(prefix.s_addr, plen);
	gid = sw_group_of(lpm_fd, grp_fd, key.addr, plen);
	if (gid == 0)
		return -ENOENT;
	err = bpf_map_delete_elem(lpm_fd, &key);
	if (err) {
		ice_err(SW_SUB, "ECMP route %s/%d: delete failed: %s", inet_ntoa(prefix), plen,
			strerror(-err));
		return err;
	}
	return sw_group_free(sw, gid);
}

/* Open a pinned map of pin_dir; returns an fd or a negative errno. */
static int sw_pinned_fd(const char *pin_dir, const char *name)
{
	char path[PATH_MAX];
	int fd, err;

	err = ice_bpf_path(path, sizeof(path), pin_dir, name);
	if (err)
		return err;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		ice_err(SW_SUB, "opening pinned map %s failed: %s (is the switch loaded?)", path,
			strerror(-err));
		return err;
	}
	return fd;
}

/* A switch's counter maps, open. */
struct ice_sw_reader {
	char pin_dir[PATH_MAX];
	int st_fd, cfg_fd, peak_fd;
	uint32_t id; /* the port state map's id */
	dev_t dev;   /* its pin's inode: a new one is a new map */
	ino_t ino;
};

struct ice_sw_reader *ice_sw_reader_open(const char *pin_dir)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);
	struct ice_sw_reader *r;
	char path[PATH_MAX];
	struct stat sb;
	int err;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->st_fd = r->cfg_fd = r->peak_fd = -1;
	snprintf(r->pin_dir, sizeof(r->pin_dir), "%s", pin_dir);
	err = ice_bpf_path(path, sizeof(path), pin_dir, ICE_SW_MAP_PORT_STATE);
	if (err)
		goto err_free;
	/* the inode first: a map pinned anew after this reads as stale */
	if (stat(path, &sb) != 0) {
		err = -errno;
		ice_dbg(SW_SUB, "%s: no switch pinned there: %s", pin_dir, strerror(-err));
		goto err_free;
	}
	r->dev = sb.st_dev;
	r->ino = sb.st_ino;
	r->st_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_PORT_STATE);
	if (r->st_fd < 0) {
		err = r->st_fd;
		goto err_free;
	}
	r->cfg_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_PORT_CFG);
	if (r->cfg_fd < 0) {
		err = r->cfg_fd;
		goto err_st;
	}
	r->peak_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_PEAK); /* optional: -1 reads as gen 0 */
	if (bpf_obj_get_info_by_fd(r->st_fd, &info, &len) == 0)
		r->id = info.id;
	return r;

err_st:
	close(r->st_fd);
err_free:
	free(r);
	errno = -err;
	return NULL;
}

void ice_sw_reader_close(struct ice_sw_reader *r)
{
	if (r == NULL)
		return;
	if (r->peak_fd >= 0)
		close(r->peak_fd);
	close(r->cfg_fd);
	close(r->st_fd);
	free(r);
}

uint32_t ice_sw_reader_id(const struct ice_sw_reader *r)
{
	return r->id;
}

bool ice_sw_reader_stale(const struct ice_sw_reader *r)
{
	char path[PATH_MAX];
	struct stat sb;

	if (ice_bpf_path(path, sizeof(path), r->pin_dir, ICE_SW_MAP_PORT_STATE) != 0 ||
	    stat(path, &sb) != 0)
		return true;
	return sb.st_ino != r->ino || sb.st_dev != r->dev;
}

int ice_sw_reader_port(struct ice_sw_reader *r, int ifindex, uint64_t now,
		       struct ice_port_stats *out)
{
	struct ice_port_state st;
	struct ice_port_cfg cfg;
	__u32 key = ifindex, zero = 0, gen = 0;
	int err;

	err = bpf_map_lookup_elem_flags(r->st_fd, &key, &st, BPF_F_LOCK);
	if (err == 0)
		err = bpf_map_lookup_elem(r->cfg_fd, &key, &cfg);
	if (err) {
		if (err == -ENOENT)
			ice_dbg(SW_SUB, "%s: ifindex %d is not a port of this switch", r->pin_dir,
				ifindex);
		else
			ice_err(SW_SUB, "%s: reading ifindex %d's counters failed: %s", r->pin_dir,
				ifindex, strerror(-err));
		return err;
	}

	memset(out, 0, sizeof(*out));
	out->c = st.c;
	out->depth_now = st.c.depth;
	if ((cfg.rate_bps >> 3) != 0 && now > st.last_ns) {
		__u64 dt = now - st.last_ns;
		/* dt in us * bytes per us, in 128 bits to be safe at any rate. */
		unsigned __int128 drained =
			(unsigned __int128)dt * (cfg.rate_bps >> 3) / 1000000000u;

		__u64 q = st.c.depth;

		out->depth_now = drained >= q ? 0 : q - (__u64)drained;
		/* the area of the drain since the last packet, as the program
		 * would add it at the next one */
		out->c.depth_area += ice_sw_drain_area(q, drained >= q ? q : (__u64)drained, dt,
						       cfg.rate_bps >> 3);
	}
	if (r->peak_fd >= 0)
		bpf_map_lookup_elem(r->peak_fd, &zero, &gen);
	if (st.peak_gen != gen) /* no packet since ice_sw_peak_reset */
		out->c.peak_depth = out->depth_now;
	return 0;
}

int ice_sw_counters(const char *pin_dir, int ifindex, struct ice_port_stats *out)
{
	struct ice_sw_reader *r = ice_sw_reader_open(pin_dir);
	int err;

	if (r == NULL)
		return -errno;
	err = ice_sw_reader_port(r, ifindex, ice_now_ns() /* bpf_ktime_get_ns()'s clock */, out);
	ice_sw_reader_close(r);
	return err;
}

int ice_sw_peak_reset(const char *pin_dir)
{
	int fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_PEAK), err = 0;
	__u32 zero = 0, gen = 0;

	if (fd < 0)
		return fd;
	/* one writer at a time is all this read-modify-write needs (two
	 * racing still both move the generation) */
	if (bpf_map_lookup_elem(fd, &zero, &gen) != 0) {
		err = -errno;
	} else {
		gen++;
		if (bpf_map_update_elem(fd, &zero, &gen, BPF_EXIST) != 0)
			err = -errno;
	}
	if (err)
		ice_err(SW_SUB, "%s: starting a new peak window failed: %s", pin_dir,
			strerror(-err));
	close(fd);
	return err;
}

/* Sum of a per-CPU u64 slot. */
static int sw_percpu_sum(int fd, __u32 key, uint64_t *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v;
	int err;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	err = bpf_map_lookup_elem(fd, &key, v);
	if (err == 0) {
		*sum = 0;
		for (int i = 0; i < ncpu; i++)
			*sum += v[i];
	}
	free(v);
	return err;
}

/* The pinned group of prefix/plen: *g and *gid; returns the group map's fd
 * (the caller closes it) or -errno (-ENOENT: no such group). */
static int sw_pinned_group(const char *pin_dir, struct in_addr prefix, int plen, __u32 *gid,
			   struct ice_ecmp_group *g)
{
	int lpm_fd, grp_fd, err = sw_check_prefix(prefix, plen);

	if (err)
		return err;
	lpm_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_ECMP_LPM);
	if (lpm_fd < 0)
		return lpm_fd;
	grp_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_ECMP_GRP);
	if (grp_fd >= 0) {
		*gid = sw_group_of(lpm_fd, grp_fd, sw_mask(prefix.s_addr, plen), plen);
		if (*gid == 0 || bpf_map_lookup_elem(grp_fd, gid, g) != 0) {
			close(grp_fd);
			grp_fd = -ENOENT;
		}
	}
	close(lpm_fd);
	return grp_fd;
}

int ice_sw_ecmp_hits(const char *pin_dir, struct in_addr prefix, int plen,
		     uint64_t hits[ICE_SW_MAX_MEMBERS])
{
	struct ice_ecmp_group g;
	int grp_fd, hits_fd, err = 0;
	__u32 gid;

	grp_fd = sw_pinned_group(pin_dir, prefix, plen, &gid, &g);
	if (grp_fd < 0)
		return grp_fd;
	hits_fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_ECMP_HITS);
	if (hits_fd < 0) {
		close(grp_fd);
		return hits_fd;
	}
	for (__u32 i = 0; i < ICE_SW_MAX_MEMBERS && err == 0; i++) {
		hits[i] = 0;
		if (i < g.n)
			err = sw_percpu_sum(hits_fd, gid * ICE_SW_MAX_MEMBERS + i, &hits[i]);
	}
	close(hits_fd);
	close(grp_fd);
	return err ? err : (int)g.n;
}

int ice_sw_ecmp_down(const char *pin_dir, struct in_addr prefix, int plen, uint32_t down)
{
	struct ice_ecmp_group g;
	int grp_fd, changed = 0;
	__u32 gid;

	grp_fd = sw_pinned_group(pin_dir, prefix, plen, &gid, &g);
	if (grp_fd < 0)
		return grp_fd;
	for (__u32 i = 0; i < g.n && i < ICE_SW_MAX_MEMBERS; i++) {
		__u32 want = (down >> i) & 1 ? g.m[i].flags | ICE_MEMBER_F_DOWN
					     : g.m[i].flags & ~ICE_MEMBER_F_DOWN;

		changed += g.m[i].flags != want;
		g.m[i].flags = want;
	}
	/* only flag words change: a packet racing the update sees each member
	 * either way, both valid */
	if (changed > 0 && bpf_map_update_elem(grp_fd, &gid, &g, BPF_EXIST) != 0) {
		changed = -errno;
		ice_err(SW_SUB, "ECMP group of %s/%d: cannot set member states: %s",
			inet_ntoa(prefix), plen, strerror(errno));
	}
	close(grp_fd);
	return changed;
}

int ice_sw_hash_get(const char *pin_dir, struct topo_hash_cfg *out)
{
	int fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_HASH), err = 0;
	__u32 zero = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, out) != 0) {
		err = -errno;
		ice_err(SW_SUB, "%s: reading the hash model failed: %s", pin_dir, strerror(-err));
	}
	close(fd);
	return err;
}

int ice_sw_hash_update(const char *pin_dir, const struct topo_hash_cfg *cfg)
{
	__u32 zero = 0;
	int fd, err = 0;

	if (cfg->alg >= TOPO_HASH_ALG_MAX) {
		ice_err(SW_SUB, "hash algorithm %u: expected 0..%d (enum topo_hash_alg)", cfg->alg,
			TOPO_HASH_ALG_MAX - 1);
		return -EINVAL;
	}
	fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_HASH);
	if (fd < 0)
		return fd;
	/* an array element is written in place: only a packet racing the
	 * write can see it half-done (one packet on another member) */
	if (bpf_map_update_elem(fd, &zero, cfg, BPF_EXIST) != 0) {
		err = -errno;
		ice_err(SW_SUB, "%s: writing the hash model failed: %s", pin_dir, strerror(-err));
	}
	close(fd);
	return err;
}

int ice_sw_stats(const char *pin_dir, uint64_t out[ICE_SW_ST_MAX])
{
	int fd = sw_pinned_fd(pin_dir, ICE_SW_MAP_STATS), err = 0;

	if (fd < 0)
		return fd;
	for (__u32 i = 0; i < ICE_SW_ST_MAX && err == 0; i++)
		err = sw_percpu_sum(fd, i, &out[i]);
	close(fd);
	return err;
}

int ice_sw_unpin(const char *pin_dir)
{
	char path[PATH_MAX];
	int err = 0;

	for (size_t i = 0; i < sizeof(sw_pinned_maps) / sizeof(sw_pinned_maps[0]); i++) {
		int e = ice_bpf_path(path, sizeof(path), pin_dir, sw_pinned_maps[i]);

		if (e == 0 && unlink(path) != 0 && errno != ENOENT)
			e = -errno;
		if (e && err == 0) {
			err = e;
			ice_err(SW_SUB, "unpinning %s failed: %s", path, strerror(-e));
		}
	}
	if (rmdir(pin_dir) != 0 && errno != ENOENT && errno != ENOTEMPTY && err == 0) {
		err = -errno;
		ice_err(SW_SUB, "removing %s failed: %s", pin_dir, strerror(-err));
	}
	return err;
}

int ice_sw_egress_fd(const struct ice_sw *sw)
{
	return bpf_program__fd(sw->skel->progs.ice_sw_egress);
}

int ice_sw_ingress_fd(const struct ice_sw *sw)
{
	return bpf_program__fd(sw->skel->progs.ice_sw_ingress);
}

void ice_sw_test_clock(struct ice_sw *sw, uint64_t now_ns)
{
	sw->skel->bss->ice_test_now_ns = now_ns;
}

int ice_sw_port_reset(struct ice_sw *sw, int ifindex, uint64_t depth, uint64_t last_ns)
{
	struct ice_port_state st = {0};
	__u32 key = ifindex, zero = 0;
	int err;

	st.last_ns = last_ns;
	st.c.depth = depth;
	st.c.peak_depth = depth;
	/* in the current peak window */
	bpf_map_lookup_elem(bpf_map__fd(sw->skel->maps.ice_sw_peak), &zero, &st.peak_gen);
	err = bpf_map_update_elem(bpf_map__fd(sw->skel->maps.ice_port_state), &key, &st,
				  BPF_F_LOCK);
	if (err)
		ice_err(SW_SUB, "ifindex %d: resetting the port state failed: %s", ifindex,
			strerror(-err));
	return err;
}
