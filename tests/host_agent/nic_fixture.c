// SPDX-License-Identifier: Apache-2.0
/* nic_fixture: an mlx5 NIC as a directory tree (nic_fixture.h). */
#include "nic_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* upstream mlx5_ib, Linux 5.15-6.x: ports/<p>/counters/ (ib_core's PMA
 * counters) and hw_counters/ (q counters, congestion, RoCE accelerator) */
static const char *const port_ctrs[] = {
	"port_xmit_data",
	"port_rcv_data",
	"port_xmit_packets",
	"port_rcv_packets",
	"port_xmit_discards",
	"port_rcv_errors",
	"port_xmit_wait",
	"symbol_error",
	"link_downed",
	"link_error_recovery",
	"excessive_buffer_overrun_errors",
	"local_link_integrity_errors",
	"port_rcv_remote_physical_errors",
	"port_rcv_switch_relay_errors",
	"port_xmit_constraint_errors",
	"port_rcv_constraint_errors",
	"VL15_dropped",
	"unicast_xmit_packets",
	"unicast_rcv_packets",
	"multicast_xmit_packets",
	"multicast_rcv_packets",
};

static const char *const hw_ctrs[] = {
	"duplicate_request",
	"implied_nak_seq_err",
	"local_ack_timeout_err",
	"np_cnp_sent",
	"np_ecn_marked_roce_packets",
	"out_of_buffer",
	"out_of_sequence",
	"packet_seq_err",
	"req_cqe_error",
	"req_cqe_flush_error",
	"req_remote_access_errors",
	"req_remote_invalid_request",
	"resp_cqe_error",
	"resp_cqe_flush_error",
	"resp_local_length_error",
	"resp_remote_access_errors",
	"rnr_nak_retry_err",
	"roce_adp_retrans",
	"roce_adp_retrans_to",
	"roce_slow_restart",
	"roce_slow_restart_cnps",
	"roce_slow_restart_trans",
	"rp_cnp_handled",
	"rp_cnp_ignored",
	"rx_atomic_requests",
	"rx_dct_connect",
	"rx_icrc_encapsulated",
	"rx_read_requests",
	"rx_write_requests",
};

#define NPORT_CTRS (sizeof(port_ctrs) / sizeof(port_ctrs[0]))
#define NHW_CTRS   (sizeof(hw_ctrs) / sizeof(hw_ctrs[0]))

/* upstream debugfs cc_params (mlx5_ib cong.c) with firmware-like values */
static const struct {
	const char *name;
	unsigned v;
} cc_params[] = {
	{"rp_clamp_tgt_rate", 0},
	{"rp_clamp_tgt_rate_ati", 1},
	{"rp_time_reset", 300},
	{"rp_byte_reset", 32767},
	{"rp_threshold", 1},
	{"rp_ai_rate", 5},
	{"rp_max_rate", 0},
	{"rp_hai_rate", 50},
	{"rp_min_dec_fac", 50},
	{"rp_min_rate", 1},
	{"rp_rate_to_set_on_first_cnp", 0},
	{"rp_dce_tcp_g", 1019},
	{"rp_dce_tcp_rtt", 1},
	{"rp_rate_reduce_monitor_period", 4},
	{"rp_initial_alpha_value", 1023},
	{"rp_gd", 11},
	{"np_min_time_between_cnps", 4},
	{"np_cnp_dscp", 48},
	{"np_cnp_prio_mode", 1},
	{"np_cnp_prio", 6},
};

/* MLNX_OFED ecn/roce_rp and roce_np (besides enable/<prio>) */
static const struct {
	const char *dir, *name;
	unsigned v;
} ecn_params[] = {
	{"roce_rp", "clamp_tgt_rate", 0},
	{"roce_rp", "clamp_tgt_rate_after_time_inc", 1},
	{"roce_rp", "dce_tcp_g", 1019},
	{"roce_rp", "dce_tcp_rtt", 1},
	{"roce_rp", "initial_alpha_value", 1023},
	{"roce_rp", "rate_reduce_monitor_period", 4},
	{"roce_rp", "rate_to_set_on_first_cnp", 0},
	{"roce_rp", "rpg_ai_rate", 5},
	{"roce_rp", "rpg_byte_reset", 32767},
	{"roce_rp", "rpg_gd", 11},
	{"roce_rp", "rpg_hai_rate", 50},
	{"roce_rp", "rpg_max_rate", 0},
	{"roce_rp", "rpg_min_dec_fac", 50},
	{"roce_rp", "rpg_min_rate", 1},
	{"roce_rp", "rpg_threshold", 1},
	{"roce_rp", "rpg_time_reset", 300},
	{"roce_np", "cnp_802p_prio", 6},
	{"roce_np", "cnp_dscp", 48},
	{"roce_np", "min_time_between_cnps", 4},
};

uint64_t nic_fixture_value(unsigned port, unsigned which, uint64_t t)
{
	return (uint64_t)(which + 1) * 1000 * (t + 1) + port;
}

uint64_t nic_fixture_qp_value(unsigned qp, unsigned which, uint64_t t)
{
	return (uint64_t)(which + 1) * (qp + 1) * t;
}

static int mkdirs(const char *path)
{
	char tmp[1024];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p != '\0'; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int put_abs(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, buf, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

int nic_fixture_put(const struct nic_fixture *f, const char *rel, const char *text)
{
	char path[768];

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	return put_abs(path, text, strlen(text));
}

static int putf(const struct nic_fixture *f, const char *rel, unsigned long long v)
{
	char txt[32];

	snprintf(txt, sizeof(txt), "%llu\n", v);
	return nic_fixture_put(f, rel, txt);
}

long long nic_fixture_get(const struct nic_fixture *f, const char *rel)
{
	char path[768], buf[32], *end;
	int fd;
	ssize_t r;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = '\0';
	v = strtoll(buf, &end, 10);
	return end == buf ? -1 : v;
}

/* ---- netlink replies */

struct nlb {
	uint8_t *p;
	size_t len, cap;
	size_t msg;	/* offset of the message being built */
	size_t nest[8]; /* offsets of open nests */
	int depth;
};

static void nlb_room(struct nlb *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 65536;

		while (nc < b->len + n)
			nc *= 2;
		b->p = realloc(b->p, nc);
		if (b->p == NULL)
			abort();
		b->cap = nc;
	}
}

static void nlb_msg(struct nlb *b, uint16_t cmd)
{
	struct nlmsghdr h = {.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd),
			     .nlmsg_flags = NLM_F_MULTI,
			     .nlmsg_seq = 1};

	nlb_room(b, NLMSG_HDRLEN);
	b->msg = b->len;
	memcpy(b->p + b->len, &h, sizeof(h));
	b->len += NLMSG_HDRLEN;
}

static void nlb_end_msg(struct nlb *b)
{
	((struct nlmsghdr *)(b->p + b->msg))->nlmsg_len = (uint32_t)(b->len - b->msg);
}

static void nlb_done(struct nlb *b)
{
	nlb_msg(b, 0);
	((struct nlmsghdr *)(b->p + b->msg))->nlmsg_type = NLMSG_DONE;
	nlb_room(b, 4);
	memset(b->p + b->len, 0, 4); /* the dump's final status */
	b->len += 4;
	nlb_end_msg(b);
}

static void nlb_attr(struct nlb *b, uint16_t type, const void *d, size_t n)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type};

	nlb_room(b, NLA_ALIGN(NLA_HDRLEN + n));
	memcpy(b->p + b->len, &a, sizeof(a));
	if (n) /* a nest header: d is NULL, and memcpy must not get NULL */
		memcpy(b->p + b->len + NLA_HDRLEN, d, n);
	memset(b->p + b->len + NLA_HDRLEN + n, 0, NLA_ALIGN(n) - n);
	b->len += NLA_ALIGN(NLA_HDRLEN + n);
}

static void nlb_u32(struct nlb *b, uint16_t t, uint32_t v)
{
	nlb_attr(b, t, &v, 4);
}

static void nlb_u64(struct nlb *b, uint16_t t, uint64_t v)
{
	nlb_attr(b, t, &v, 8);
}

static void nlb_u8(struct nlb *b, uint16_t t, uint8_t v)
{
	nlb_attr(b, t, &v, 1);
}

static void nlb_str(struct nlb *b, uint16_t t, const char *s)
{
	nlb_attr(b, t, s, strlen(s) + 1);
}

static void nlb_nest(struct nlb *b, uint16_t t)
{
	nlb_attr(b, t | NLA_F_NESTED, NULL, 0);
	b->nest[b->depth++] = b->len - NLA_HDRLEN;
}

static void nlb_end(struct nlb *b)
{
	size_t at = b->nest[--b->depth];

	((struct nlattr *)(b->p + at))->nla_len = (uint16_t)(b->len - at);
}

static int nlb_write(const struct nic_fixture *f, const char *name, struct nlb *b)
{
	char path[768];
	int ret;

	snprintf(path, sizeof(path), "%s/ice-replay/rdma/%s", f->root, name);
	ret = put_abs(path, b->p, b->len);
	free(b->p);
	memset(b, 0, sizeof(*b));
	return ret;
}

static void dev_handle(struct nlb *b, const struct nic_fixture *f)
{
	nlb_u32(b, RDMA_NLDEV_ATTR_DEV_INDEX, f->dev_index);
	nlb_str(b, RDMA_NLDEV_ATTR_DEV_NAME, f->dev);
}

#define QPS_PER_MSG 64

static int write_dev(const struct nic_fixture *f)
{
	struct nlb b = {0};

	/* another device first: the backend must pick ours by name */
	nlb_msg(&b, RDMA_NLDEV_CMD_GET);
	nlb_u32(&b, RDMA_NLDEV_ATTR_DEV_INDEX, f->dev_index + 7);
	nlb_str(&b, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_bond_9");
	nlb_end_msg(&b);
	nlb_msg(&b, RDMA_NLDEV_CMD_GET);
	dev_handle(&b, f);
	nlb_u32(&b, RDMA_NLDEV_ATTR_PORT_INDEX, f->nports);
	nlb_str(&b, RDMA_NLDEV_ATTR_FW_VERSION, "16.35.2000");
	nlb_u64(&b, RDMA_NLDEV_ATTR_NODE_GUID, 0x0c42a10300a1b2c3ull);
	nlb_end_msg(&b);
	nlb_done(&b);
	return nlb_write(f, "dev", &b);
}

static int write_res_qp(const struct nic_fixture *f)
{
	struct nlb b = {0};
	char name[32];

	for (unsigned i = 0; i < f->nqps + 1; i += QPS_PER_MSG) {
		nlb_msg(&b, RDMA_NLDEV_CMD_RES_QP_GET);
		dev_handle(&b, f);
		nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP);
		for (unsigned j = i; j < i + QPS_PER_MSG && j < f->nqps + 1; j++) {
			nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
			if (j == f->nqps) {
				/* QP1 (GSI), kernel-owned: not traffic */
				nlb_u32(&b, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_LQPN, 1);
				nlb_u8(&b, RDMA_NLDEV_ATTR_RES_TYPE, 1);
				nlb_u8(&b, RDMA_NLDEV_ATTR_RES_STATE, 3);
				nlb_str(&b, RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core");
			} else {
				nlb_u32(&b, RDMA_NLDEV_ATTR_PORT_INDEX, 1 + j % f->nports);
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_LQPN, NIC_FIXTURE_QPN0 + j);
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_RQPN, 0x9000 + j);
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_RQ_PSN, 0x1234);
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_SQ_PSN, 0x4321);
				nlb_u8(&b, RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0);
				nlb_u8(&b, RDMA_NLDEV_ATTR_RES_TYPE, 2);  /* RC */
				nlb_u8(&b, RDMA_NLDEV_ATTR_RES_STATE, 3); /* RTS */
				nlb_u32(&b, RDMA_NLDEV_ATTR_RES_PID, 4242);
				snprintf(name, sizeof(name), "train%u", j % 8);
				nlb_str(&b, RDMA_NLDEV_ATTR_RES_KERN_NAME, name);
			}
			nlb_end(&b);
		}
		nlb_end(&b);
		nlb_end_msg(&b);
	}
	nlb_done(&b);
	snprintf(name, sizeof(name), "%u.res_qp", f->dev_index);
	return nlb_write(f, name, &b);
}

/* QP counters: one bound counter per QP (mode auto, per QP) */
static const char *const qp_ctr_names[] = {
	"rx_write_requests", "rx_read_requests",      "out_of_sequence",
	"packet_seq_err",    "local_ack_timeout_err", "rnr_nak_retry_err",
	"cc_rx_ce_pkts",     "cc_rx_cnp_pkts",	      "cc_tx_cnp_pkts",
};

static int write_stat_qp(const struct nic_fixture *f)
{
	struct nlb b = {0};
	char name[32];

	for (unsigned i = 0; i < f->nqps; i += QPS_PER_MSG) {
		nlb_msg(&b, RDMA_NLDEV_CMD_STAT_GET);
		dev_handle(&b, f);
		nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_COUNTER);
		for (unsigned j = i; j < i + QPS_PER_MSG && j < f->nqps; j++) {
			nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);
			nlb_u32(&b, RDMA_NLDEV_ATTR_PORT_INDEX, 1 + j % f->nports);
			nlb_u32(&b, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, j + 1);
			nlb_u32(&b, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
			nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
			for (unsigned k = 0; k < sizeof(qp_ctr_names) / sizeof(qp_ctr_names[0]);
			     k++) {
				nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
				nlb_str(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
					qp_ctr_names[k]);
				nlb_u64(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
					nic_fixture_qp_value(j, k, f->qtick[j]));
				nlb_end(&b);
			}
			nlb_end(&b);
			nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP);
			nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
			nlb_u32(&b, RDMA_NLDEV_ATTR_RES_LQPN, NIC_FIXTURE_QPN0 + j);
			nlb_end(&b);
			nlb_end(&b);
			nlb_end(&b);
		}
		nlb_end(&b);
		nlb_end_msg(&b);
	}
	/* and a counter shared by the first two QPs (auto mode), last: its
	 * sum must not end up in either QP's record */
	if (f->nqps >= 2) {
		nlb_msg(&b, RDMA_NLDEV_CMD_STAT_GET);
		dev_handle(&b, f);
		nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_COUNTER);
		nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);
		nlb_u32(&b, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 99999);
		nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
		nlb_nest(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
		nlb_str(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "cc_tx_cnp_pkts");
		nlb_u64(&b, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 123456789);
		nlb_end(&b);
		nlb_end(&b);
		nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP);
		for (unsigned j = 0; j < 2; j++) {
			nlb_nest(&b, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
			nlb_u32(&b, RDMA_NLDEV_ATTR_RES_LQPN, NIC_FIXTURE_QPN0 + j);
			nlb_end(&b);
		}
		nlb_end(&b);
		nlb_end(&b);
		nlb_end(&b);
		nlb_end_msg(&b);
	}
	nlb_done(&b);
	snprintf(name, sizeof(name), "%u.stat_qp", f->dev_index);
	return nlb_write(f, name, &b);
}

/* ---- DCB: dcbnl_ieee_fill() order: IFNAME, then IEEE { ETS, PFC, ... } */

int nic_fixture_write_dcb(const struct nic_fixture *f)
{
	struct nlb b = {0};
	struct dcbmsg d = {.dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET};
	struct ieee_ets ets = {.willing = 1, .ets_cap = 8};
	struct ieee_pfc pfc = {.pfc_cap = 8, .pfc_en = f->pfc_en};
	char rel[64];

	nlb_msg(&b, 0);
	((struct nlmsghdr *)(b.p + b.msg))->nlmsg_type = RTM_GETDCB;
	((struct nlmsghdr *)(b.p + b.msg))->nlmsg_flags = 0;
	nlb_room(&b, NLMSG_ALIGN(sizeof(d)));
	memcpy(b.p + b.len, &d, sizeof(d));
	b.len += NLMSG_ALIGN(sizeof(d));
	nlb_str(&b, DCB_ATTR_IFNAME, f->ifname);
	nlb_nest(&b, DCB_ATTR_IEEE);
	nlb_attr(&b, DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
	nlb_attr(&b, DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
	nlb_end(&b);
	nlb_end_msg(&b);
	snprintf(rel, sizeof(rel), "ice-replay/dcb/%s", f->ifname);
	{
		char path[768];
		int ret;

		snprintf(path, sizeof(path), "%s/%s", f->root, rel);
		ret = put_abs(path, b.p, b.len);
		free(b.p);
		return ret;
	}
}

/* ---- ethtool */

static int write_ethtool(const struct nic_fixture *f)
{
	static const char *const per_prio[] = {"bytes", "packets", "pause", "pause_duration",
					       "pause_transition"};
	size_t cap = 16384, len = 0;
	char *txt = malloc(cap), rel[64];
	unsigned w = 0;
	int ret;

#define ADD(...) len += (size_t)snprintf(txt + len, cap - len, __VA_ARGS__)
	ADD("rx_packets %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("tx_packets %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("rx_bytes %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("tx_bytes %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	for (unsigned q = 0; q < 4; q++)
		ADD("rx%u_packets %llu\n", q,
		    (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("rx_out_of_buffer %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("rx_pause_ctrl_phy %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("tx_pause_ctrl_phy %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("rx_discards_phy %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	ADD("tx_discards_phy %llu\n", (unsigned long long)nic_fixture_value(0, w++, f->tick));
	for (unsigned p = 0; p < 8; p++)
		for (unsigned k = 0; k < 5; k++) {
			/* only priority 3 (RoCE, lossless) pauses */
			uint64_t v = p == 3 || k < 2 ? nic_fixture_value(0, w, f->tick) : 0;

			w++;
			ADD("rx_prio%u_%s %llu\n", p, per_prio[k],
			    (unsigned long long)(k == 3 && f->rx_pause_us[p] != 0
							 ? f->rx_pause_us[p]
							 : v));
			ADD("tx_prio%u_%s %llu\n", p, per_prio[k], (unsigned long long)v);
		}
#undef ADD
	snprintf(rel, sizeof(rel), "ice-replay/ethtool/%s", f->ifname);
	ret = nic_fixture_put(f, rel, txt);
	free(txt);
	return ret;
}

/* ---- sysfs */

static int write_port_counters(const struct nic_fixture *f, unsigned p)
{
	char rel[256];
	int ret = 0;

	for (unsigned i = 0; ret == 0 && i < NPORT_CTRS; i++) {
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/counters/%s", f->dev,
			 p, port_ctrs[i]);
		ret = putf(f, rel, nic_fixture_value(p, i, f->tick));
	}
	for (unsigned i = 0; ret == 0 && i < NHW_CTRS; i++) {
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/hw_counters/%s",
			 f->dev, p, hw_ctrs[i]);
		ret = putf(f, rel, nic_fixture_value(p, 100 + i, f->tick));
	}
	return ret;
}

static int link_rel(const struct nic_fixture *f, const char *target, const char *rel)
{
	char path[768];

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	return symlink(target, path) < 0 ? -errno : 0;
}

static int dir_rel(const struct nic_fixture *f, const char *rel)
{
	char path[768];

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	return mkdirs(path);
}

int nic_fixture_make(struct nic_fixture *f, const char *root, enum nic_fixture_driver drv,
		     unsigned nports, unsigned nqps)
{
	char rel[512], tgt[512];
	int ret;

	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "%s", root);
	snprintf(f->ifname, sizeof(f->ifname), "ens1f0np0");
	snprintf(f->dev, sizeof(f->dev), "mlx5_0");
	snprintf(f->pci, sizeof(f->pci), "0000:3b:00.0");
	f->dev_index = 3;
	f->driver = drv;
	f->nports = nports;
	f->nqps = nqps;
	f->qtick = calloc(nqps ? nqps : 1, sizeof(uint64_t));
	if (f->qtick == NULL)
		return -ENOMEM;
	/* devices/: the PCI function with its netdev and RDMA device */
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:3a/0000:3a:00.0/%s/net/%s", f->pci,
		 f->ifname);
	ret = dir_rel(f, rel);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:3a/0000:3a:00.0/%s/infiniband/%s/ports",
		 f->pci, f->dev);
	if (ret == 0)
		ret = dir_rel(f, rel);
	if (ret == 0)
		ret = dir_rel(f, "sys/class/net");
	if (ret == 0)
		ret = dir_rel(f, "sys/class/infiniband");
	if (ret == 0)
		ret = dir_rel(f, "ice-replay/ethtool");
	if (ret == 0)
		ret = dir_rel(f, "ice-replay/rdma");
	if (ret == 0)
		ret = dir_rel(f, "ice-replay/dcb");
	f->pfc_en = 0x08;
	if (ret == 0)
		ret = nic_fixture_write_dcb(f);
	/* class/ links as sysfs has them */
	snprintf(tgt, sizeof(tgt), "../../devices/pci0000:3a/0000:3a:00.0/%s/net/%s", f->pci,
		 f->ifname);
	snprintf(rel, sizeof(rel), "sys/class/net/%s", f->ifname);
	if (ret == 0)
		ret = link_rel(f, tgt, rel);
	snprintf(tgt, sizeof(tgt), "../../devices/pci0000:3a/0000:3a:00.0/%s/infiniband/%s", f->pci,
		 f->dev);
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s", f->dev);
	if (ret == 0)
		ret = link_rel(f, tgt, rel);
	snprintf(tgt, sizeof(tgt), "../../../%s", f->pci);
	snprintf(rel, sizeof(rel), "sys/class/net/%s/device", f->ifname);
	if (ret == 0)
		ret = link_rel(f, tgt, rel);
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/device", f->dev);
	if (ret == 0)
		ret = link_rel(f, tgt, rel);
	for (unsigned p = 1; ret == 0 && p <= nports; p++) {
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/counters", f->dev, p);
		ret = dir_rel(f, rel);
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/hw_counters", f->dev,
			 p);
		if (ret == 0)
			ret = dir_rel(f, rel);
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%u/hw_counters/lifespan",
			 f->dev, p);
		if (ret == 0)
			ret = nic_fixture_put(f, rel, "10\n");
		if (ret == 0)
			ret = write_port_counters(f, p);
	}
	if (ret == 0 && drv == NIC_FIXTURE_UPSTREAM) {
		snprintf(rel, sizeof(rel), "sys/kernel/debug/mlx5/%s/cc_params", f->pci);
		ret = dir_rel(f, rel);
		for (size_t i = 0; ret == 0 && i < sizeof(cc_params) / sizeof(cc_params[0]); i++) {
			snprintf(rel, sizeof(rel), "sys/kernel/debug/mlx5/%s/cc_params/%s", f->pci,
				 cc_params[i].name);
			ret = putf(f, rel, cc_params[i].v);
		}
	} else if (ret == 0) {
		for (int d = 0; ret == 0 && d < 2; d++) {
			snprintf(rel, sizeof(rel), "sys/class/net/%s/ecn/%s/enable", f->ifname,
				 d ? "roce_np" : "roce_rp");
			ret = dir_rel(f, rel);
			for (unsigned p = 0; ret == 0 && p < 8; p++) {
				snprintf(rel, sizeof(rel), "sys/class/net/%s/ecn/%s/enable/%u",
					 f->ifname, d ? "roce_np" : "roce_rp", p);
				ret = putf(f, rel, 0);
			}
		}
		for (size_t i = 0; ret == 0 && i < sizeof(ecn_params) / sizeof(ecn_params[0]);
		     i++) {
			snprintf(rel, sizeof(rel), "sys/class/net/%s/ecn/%s/%s", f->ifname,
				 ecn_params[i].dir, ecn_params[i].name);
			ret = putf(f, rel, ecn_params[i].v);
		}
	}
	if (ret == 0)
		ret = write_ethtool(f);
	if (ret == 0)
		ret = write_dev(f);
	if (ret == 0)
		ret = write_res_qp(f);
	if (ret == 0)
		ret = write_stat_qp(f);
	return ret;
}

int nic_fixture_tick(struct nic_fixture *f, unsigned changed)
{
	int ret = 0;

	f->tick++;
	for (unsigned p = 1; ret == 0 && p <= f->nports; p++)
		ret = write_port_counters(f, p);
	for (unsigned i = 0; i < changed && i < f->nqps; i++)
		f->qtick[i]++;
	if (ret == 0)
		ret = write_ethtool(f);
	if (ret == 0)
		ret = write_stat_qp(f);
	return ret;
}

void nic_fixture_remove(struct nic_fixture *f)
{
	char cmd[600];

	if (f->root[0] != '\0' && strstr(f->root, "ice") != NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", f->root);
	}
	free(f->qtick);
	f->qtick = NULL;
}
