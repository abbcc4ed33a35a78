// SPDX-License-Identifier: Apache-2.0
/* agent_config: the agent's options, one table for the YAML file and flags. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "ice_ipc.h"
#include "ice_redis.h"
#include "ice_time.h"

#define F(k, t, m, lo, hi, u, h)                                                                   \
	{                                                                                          \
		.key = k, .type = t, .offset = offsetof(struct agent_cfg, m),                      \
		.size = sizeof(((struct agent_cfg *)0)->m), .min = lo, .max = hi, .unit = u,       \
		.help = h                                                                          \
	}

const struct ice_cfg_field agent_cfg_fields[] = {
	F("nic", ICE_CFG_STRING, nic, 0, 0, 0, "network interface to watch (required)"),
	F("addr", ICE_CFG_STRING, addr, 0, 0, 0, "IPv4 address of the NIC (default: its first)"),
	F("host", ICE_CFG_STRING, host, 0, 0, 0, "host name in Redis keys (default: hostname)"),
	F("fabric", ICE_CFG_STRING, fabric, 0, 0, 0, "fabric name: keys are ice:<fabric>:..."),
	F("redis", ICE_CFG_STRING, redis, 0, 0, 0,
	  "Redis: host:port, unix:/path, or a cluster: cluster:host:port[,host:port...]"),
	F("interval", ICE_CFG_DURATION, interval, 10e6, 3600e9, ICE_NSEC_PER_SEC,
	  "sampling interval (bare numbers in s)"),
	F("stream_cap", ICE_CFG_U32, stream_cap, 10, 10000000, 0,
	  "entries kept per stream (XADD MAXLEN ~)"),
	F("buffer", ICE_CFG_U32, buffer, 1, 1000000, 0, "intervals kept while Redis is down"),
	F("metrics_port", ICE_CFG_U32, metrics_port, 0, 65535, 0,
	  "HTTP port of /metrics (0 = off)"),
	F("metrics_qps", ICE_CFG_U32, metrics_qps, 0, 100000, 0,
	  "per-QP series on /metrics: the busiest N QPs by bytes (64; bounds the labels)"),
	F("pin_dir", ICE_CFG_STRING, pin_dir, 0, 0, 0,
	  "bpffs directory of the pins (default /sys/fs/bpf/ice-agent-<addr>)"),
	F("run_dir", ICE_CFG_STRING, run_dir, 0, 0, 0, "directory of the lock and event socket"),
	F("redis_timeout", ICE_CFG_DURATION, redis_timeout, 1e6, 10e9, ICE_NSEC_PER_MSEC,
	  "Redis connect/reply timeout (bare numbers in ms)"),
	F("no_bpf", ICE_CFG_BOOL, no_bpf, 0, 0, 0, "do not load the BPF programs"),
	F("plan_pubkeys", ICE_CFG_STRING, plan_pubkeys, 0, 0, 0,
	  "the controller's Ed25519 public keys (PEM, up to 4 in one file, re-read when it "
	  "changes): verify its signed plans and apply them (default: none)"),
	F("epoch_file", ICE_CFG_STRING, epoch_file, 0, 0, 0,
	  "the highest accepted plan epoch, kept across restarts (default "
	  "<run_dir>/<fabric>/agent-<host>-<nic>.epoch; none: memory only)"),
	F("group", ICE_CFG_STRING, group, 0, 0, 0,
	  "group that may send events and be steered: event socket and control block "
	  "root:<group> 0660 (default ICE_GROUP, else ice; a missing group: root only, 0600)"),
	F("backend", ICE_CFG_STRING, backend, 0, 0, 0,
	  "transport (included transport + BPF) or mlx5 (RoCE in the NIC: device counters, "
	  "DCQCN through the driver, QPs by RDMA netlink)"),
	F("sysroot", ICE_CFG_STRING, sysroot, 0, 0, 0,
	  "root of sys/ for the NIC backend (default /; a fixture tree in tests)"),
	F("rdma_dev", ICE_CFG_STRING, rdma_dev, 0, 0, 0,
	  "RDMA device of the NIC (default: the one under sys/class/net/<nic>/device/infiniband)"),
	F("pci", ICE_CFG_STRING, pci, 0, 0, 0,
	  "PCI address of the NIC for debugfs mlx5/<pci>/ (default: from sysfs)"),
	F("dcqcn_iface", ICE_CFG_STRING, dcqcn_iface, 0, 0, 0,
	  "where DCQCN is set: auto, debugfs (upstream mlx5 cc_params), ecn (out-of-tree "
	  "sys/class/net/<nic>/ecn), none"),
	F("dcqcn_prio", ICE_CFG_U32, dcqcn_prio, 0, 7, 0,
	  "priority whose DCQCN the ecn interface sets (the RoCE traffic's)"),
	F("tclass", ICE_CFG_STRING, tclass, 0, 0, 0,
	  "traffic class (0-255: DSCP << 2) the verbs hook gives new QPs, the one whose "
	  "priority carries the NIC's DCQCN profile (default: the application's)"),
	F("nic_io", ICE_CFG_STRING, nic_io, 0, 0, 0,
	  "kernel (ioctl, RDMA netlink) or replay (recorded replies under "
	  "<sysroot>/ice-replay/: tests)"),
};

const size_t agent_cfg_nfields = sizeof(agent_cfg_fields) / sizeof(agent_cfg_fields[0]);

void agent_cfg_defaults(struct agent_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->fabric, sizeof(c->fabric), "default");
	snprintf(c->redis, sizeof(c->redis), "127.0.0.1:6379");
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", AGENT_RUN_DIR);
	snprintf(c->group, sizeof(c->group), "%s", ice_ipc_group_default());
	snprintf(c->backend, sizeof(c->backend), "transport");
	snprintf(c->sysroot, sizeof(c->sysroot), "/");
	snprintf(c->dcqcn_iface, sizeof(c->dcqcn_iface), "auto");
	snprintf(c->nic_io, sizeof(c->nic_io), "kernel");
	c->dcqcn_prio = 3;
	c->interval = ICE_NSEC_PER_SEC;
	c->stream_cap = 1000;
	c->buffer = 300;
	c->metrics_qps = 64;
	c->redis_timeout = 200 * ICE_NSEC_PER_MSEC;
}

int agent_cfg_load_file(struct agent_cfg *c, const char *path, struct ice_cfg_err *err)
{
	return ice_cfg_load_file(path, agent_cfg_fields, agent_cfg_nfields, c, err);
}

int agent_cfg_set_flag(struct agent_cfg *c, const char *flag, const char *value,
		       struct ice_cfg_err *err)
{
	return ice_cfg_set_flag(agent_cfg_fields, agent_cfg_nfields, c, flag, value, err);
}

static int nic_first_addr(const char *nic, char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	int ret = -ENOENT;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, nic) != 0)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, len);
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

int agent_cfg_finish(struct agent_cfg *c, const char *path, struct ice_cfg_err *err)
{
	struct in_addr in;

	if (c->nic[0] == '\0')
		return ice_cfg_fail(err, path, "nic",
				    "missing: expected the name of the network interface to watch");
	if (strcmp(c->backend, "transport") != 0 && strcmp(c->backend, "mlx5") != 0)
		return ice_cfg_fail(err, path, "backend", "expected transport or mlx5, got '%s'",
				    c->backend);
	if (strcmp(c->dcqcn_iface, "auto") != 0 && strcmp(c->dcqcn_iface, "debugfs") != 0 &&
	    strcmp(c->dcqcn_iface, "ecn") != 0 && strcmp(c->dcqcn_iface, "none") != 0)
		return ice_cfg_fail(err, path, "dcqcn_iface",
				    "expected auto, debugfs, ecn or none, got '%s'",
				    c->dcqcn_iface);
	if (strcmp(c->nic_io, "kernel") != 0 && strcmp(c->nic_io, "replay") != 0)
		return ice_cfg_fail(err, path, "nic_io", "expected kernel or replay, got '%s'",
				    c->nic_io);
	if (c->tclass[0] != '\0') {
		char *end;
		unsigned long v = strtoul(c->tclass, &end, 10);

		if (*end != '\0' || end == c->tclass || v > 255)
			return ice_cfg_fail(err, path, "tclass",
					    "expected an integer in 0-255, got '%s'", c->tclass);
	}
	if (c->sysroot[0] != '/')
		return ice_cfg_fail(err, path, "sysroot", "expected an absolute path, got '%s'",
				    c->sysroot);
	/* RoCE in the NIC bypasses tc: the host BPF programs would see nothing */
	if (strcmp(c->backend, "mlx5") == 0)
		c->no_bpf = true;
	c->ifindex = (int)if_nametoindex(c->nic);
	/* on a fixture tree the NIC is the tree's, not this host's: its
	 * address must then be given */
	if (c->ifindex == 0 && !(strcmp(c->backend, "mlx5") == 0 && strcmp(c->sysroot, "/") != 0 &&
				 c->addr[0] != '\0'))
		return ice_cfg_fail(err, path, "nic",
				    "expected an existing network interface, got '%s'", c->nic);
	if (c->addr[0] == '\0' && nic_first_addr(c->nic, c->addr, sizeof(c->addr)) < 0)
		return ice_cfg_fail(err, path, "nic",
				    "interface '%s' has no IPv4 address; set 'addr' to the address "
				    "its QPs use",
				    c->nic);
	if (inet_pton(AF_INET, c->addr, &in) != 1)
		return ice_cfg_fail(err, path, "addr", "expected an IPv4 address, got '%s'",
				    c->addr);
	c->addr_be = in.s_addr;
	if (c->host[0] == '\0') {
		if (gethostname(c->host, sizeof(c->host)) < 0)
			snprintf(c->host, sizeof(c->host), "localhost");
		c->host[sizeof(c->host) - 1] = '\0';
		/* the short name; dots would still be fine, braces not */
		for (char *p = c->host; *p != '\0'; p++)
			if (!ice_cfg_name_char(*p))
				*p = '-';
	}
	if (!ice_cfg_name_ok(c->host))
		return ice_cfg_fail(err, path, "host",
				    "expected letters, digits, '.', '-' or '_', got '%s'", c->host);
	if (!ice_cfg_name_ok(c->fabric))
		return ice_cfg_fail(err, path, "fabric",
				    "expected letters, digits, '.', '-' or '_', got '%s'",
				    c->fabric);
	if (!ice_redis_addr_ok(c->redis))
		return ice_cfg_fail(err, path, "redis",
				    "expected host:port (port 1-65535), unix:/path or "
				    "cluster:host:port[,host:port...], got '%s'",
				    c->redis);
	if (c->pin_dir[0] == '\0')
		snprintf(c->pin_dir, sizeof(c->pin_dir), "/sys/fs/bpf/ice-agent-%s", c->addr);
	if (c->run_dir[0] == '\0')
		return ice_cfg_fail(err, path, "run_dir", "expected a directory, got ''");
	return 0;
}
