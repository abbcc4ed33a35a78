// SPDX-License-Identifier: Apache-2.0
/*
 * agent_nic: the NIC backend's telemetry (agent_nic.h): counter files kept
 * open and re-read with pread() at offset 0 (sysfs regenerates a file's
 * text on each read from its start), ethtool statistics, the device's QPs
 * by RDMA netlink; what changed rendered as one HSET.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_nic.h"
#include "agent_nic_cc.h"
#include "ice_time.h"

enum nic_src {
	SRC_HW = 0, /* ports/<p>/hw_counters/ */
	SRC_PORT,   /* ports/<p>/counters/ */
	SRC_ETH,    /* ethtool statistics of the netdev */
};

/* Counters the summary is made of (agent_nic_summary) */
enum nic_known {
	K_NONE = -1,
	K_XMIT_DATA = 0,
	K_RCV_DATA,
	K_XMIT_PKTS,
	K_RCV_PKTS,
	K_CE,
	K_CNP_TX,
	K_CNP_RX,
	K_OOS,
	K_SEQ_ERR,
	K_TIMEOUT,
	K_MAX,
};

static const struct {
	enum nic_src src;
	const char *name;
} known_ctr[K_MAX] = {
	[K_XMIT_DATA] = {SRC_PORT, "port_xmit_data"},
	[K_RCV_DATA] = {SRC_PORT, "port_rcv_data"},
	[K_XMIT_PKTS] = {SRC_PORT, "port_xmit_packets"},
	[K_RCV_PKTS] = {SRC_PORT, "port_rcv_packets"},
	[K_CE] = {SRC_HW, "np_ecn_marked_roce_packets"},
	[K_CNP_TX] = {SRC_HW, "np_cnp_sent"},
	[K_CNP_RX] = {SRC_HW, "rp_cnp_handled"},
	[K_OOS] = {SRC_HW, "out_of_sequence"},
	[K_SEQ_ERR] = {SRC_HW, "packet_seq_err"},
	[K_TIMEOUT] = {SRC_HW, "local_ack_timeout_err"},
};

struct nic_ctr {
	char field[96]; /* the :dev hash's field: p<port>.<hw|port>.<name>, eth.<name> */
	uint8_t src;
	int8_t known;
	int fd;		/* sysfs file; -1 for ethtool */
	uint32_t eth_i; /* index into the ethtool values */
	uint64_t value, published;
	bool ok, sent;
};

struct agent_nic {
	struct agent_cfg cfg;
	struct agent_nic_io io;
	bool own_io;
	char root[256]; /* "" for "/" */
	char dev[64];
	uint32_t dev_index;
	bool have_index;

	struct nic_ctr *ctr;
	size_t nctr, cap;

	char *eth_names;
	size_t neth;
	uint64_t *eth_vals;
	bool eth_ok;

	char **unsup; /* "what: why", each reported once */
	size_t nunsup;
	bool unsup_changed;

	struct agent_nic_qp *qps;
	size_t nqps, qcap;
	bool nl_ok, nl_warned;

	unsigned renders;
	struct agent_nic_cc *cc;

	/* PFC: ethtool indexes of rx/tx pause frames and durations per priority */
	int32_t pfc_idx[4][8];
	uint64_t pfc_prev[4][8], pfc_prev_ns;
	bool pfc_have_prev;
	struct agent_pfc pfc;
	uint64_t reads, dcb_every;
};

static void unsupported(struct agent_nic *n, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void unsupported(struct agent_nic *n, const char *what, const char *fmt, ...)
{
	char why[200], *txt, **nu;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < n->nunsup; i++)
		if (strncmp(n->unsup[i], what, strlen(what)) == 0 &&
		    n->unsup[i][strlen(what)] == ':')
			return;
	ice_warn(AGENT_SUB, "nic %s: %s unsupported (%s); the rest goes on", n->dev, what, why);
	nu = realloc(n->unsup, (n->nunsup + 1) * sizeof(*nu));
	if (nu == NULL)
		return;
	n->unsup = nu;
	if (asprintf(&txt, "%s: %s", what, why) < 0)
		return;
	n->unsup[n->nunsup++] = txt;
	n->unsup_changed = true;
}

/* "<root><rel>" */
static void path_of(const struct agent_nic *n, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void path_of(const struct agent_nic *n, char *buf, size_t len, const char *fmt, ...)
{
	size_t r = (size_t)snprintf(buf, len, "%s", n->root);
	va_list ap;

	va_start(ap, fmt);
	if (r < len)
		vsnprintf(buf + r, len - r, fmt, ap);
	va_end(ap);
}

/* A decimal counter's text: 0, or -EINVAL for anything else. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	return errno != 0 || *end != '\0' ? -EINVAL : 0;
}

static struct nic_ctr *ctr_add(struct agent_nic *n)
{
	if (n->nctr == n->cap) {
		size_t nc = n->cap ? n->cap * 2 : 64;
		struct nic_ctr *p = realloc(n->ctr, nc * sizeof(*p));

		if (p == NULL)
			return NULL;
		n->ctr = p;
		n->cap = nc;
	}
	memset(&n->ctr[n->nctr], 0, sizeof(n->ctr[0]));
	n->ctr[n->nctr].fd = -1;
	n->ctr[n->nctr].known = K_NONE;
	return &n->ctr[n->nctr++];
}

static int8_t known_of(enum nic_src src, const char *name)
{
	for (int k = 0; k < K_MAX; k++)
		if (known_ctr[k].src == src && strcmp(known_ctr[k].name, name) == 0)
			return (int8_t)k;
	return K_NONE;
}

static void ctr_fail(struct agent_nic *n, struct nic_ctr *c, const char *why)
{
	unsupported(n, c->field, "%s", why);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->ok = false;
}

static void ctr_read(struct agent_nic *n, struct nic_ctr *c)
{
	char buf[40], why[96];
	ssize_t r;

	if (c->fd < 0)
		return;
	r = pread(c->fd, buf, sizeof(buf) - 1, 0);
	if (r < 0) {
		snprintf(why, sizeof(why), "unreadable: %s", strerror(errno));
		ctr_fail(n, c, why);
		return;
	}
	buf[r] = '\0';
	if (parse_u64(buf, &c->value) < 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(why, sizeof(why), "expected a decimal counter, got '%.20s'", buf);
		ctr_fail(n, c, why);
		return;
	}
	c->ok = true;
}

/* Every counter file of one port directory (hw_counters/ or counters/). */
static int port_dir(struct agent_nic *n, const char *port, enum nic_src src)
{
	const char *sub = src == SRC_HW ? "hw_counters" : "counters";
	bool seen[K_MAX] = {false};
	char dir[512], what[128];
	struct dirent *de;
	DIR *d;

	path_of(n, dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%s/%s", n->dev, port, sub);
	d = opendir(dir);
	if (d == NULL) {
		snprintf(what, sizeof(what), "p%s.%s", port, src == SRC_HW ? "hw" : "port");
		unsupported(n, what, "%s: %s", dir, strerror(errno));
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct nic_ctr *c;
		char path[800];

		/* lifespan: the counters' cache time in ms, a setting */
		if (de->d_name[0] == '.' || strcmp(de->d_name, "lifespan") == 0)
			continue;
		c = ctr_add(n);
		if (c == NULL) {
			closedir(d);
			return -ENOMEM;
		}
		snprintf(c->field, sizeof(c->field), "p%.8s.%s.%.80s", port,
			 src == SRC_HW ? "hw" : "port", de->d_name);
		c->src = (uint8_t)src;
		c->known = known_of(src, de->d_name);
		if (c->known != K_NONE)
			seen[c->known] = true;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* O_NOATIME: no inode write per read where a file system keeps
		 * atime (fixture trees; sysfs keeps none) */
		c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (c->fd < 0 && errno == EPERM)
			c->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (c->fd < 0)
			ctr_fail(n, c, strerror(errno));
		else
			ctr_read(n, c);
	}
	closedir(d);
	for (int k = 0; k < K_MAX; k++)
		if (known_ctr[k].src == src && !seen[k]) {
			snprintf(what, sizeof(what), "p%s.%s.%s", port,
				 src == SRC_HW ? "hw" : "port", known_ctr[k].name);
			unsupported(n, what, "no such file in %s", dir);
		}
	return 0;
}

/* The ethtool statistics worth watching: PFC (per-priority pause frames
 * and their duration), per-priority bytes/packets/discards, the port's
 * global pause and discard counters. mlx5 names (ethtool -S). */
static bool eth_watched(const char *name)
{
	return strstr(name, "prio") != NULL || strcmp(name, "rx_pause_ctrl_phy") == 0 ||
	       strcmp(name, "tx_pause_ctrl_phy") == 0 || strcmp(name, "rx_discards_phy") == 0 ||
	       strcmp(name, "tx_discards_phy") == 0 || strcmp(name, "rx_out_of_buffer") == 0;
}

/* mlx5e names: {rx,tx}_prio<p>_pause (frames) and _pause_duration (us) */
enum { PFC_RX, PFC_TX, PFC_RX_US, PFC_TX_US };

static void pfc_index(struct agent_nic *n, const char *name, int32_t i)
{
	unsigned p;
	char dir[3], rest[32];

	if (sscanf(name, "%2[rtx]_prio%u_%31s", dir, &p, rest) != 3 || p > 7)
		return;
	if (strcmp(rest, "pause") == 0)
		n->pfc_idx[dir[0] == 'r' ? PFC_RX : PFC_TX][p] = i;
	else if (strcmp(rest, "pause_duration") == 0)
		n->pfc_idx[dir[0] == 'r' ? PFC_RX_US : PFC_TX_US][p] = i;
}

/* The lossless priorities, from the IEEE DCB configuration. */
static void pfc_lossless(struct agent_nic *n)
{
	uint8_t *buf = NULL, en = 0;
	size_t len = 0;
	int ret = n->io.dcb_get != NULL ? n->io.dcb_get(n->io.ctx, n->cfg.nic, &buf, &len)
					: -EOPNOTSUPP;

	if (ret == 0)
		ret = agent_nic_dcb_pfc(buf, len, &en);
	free(buf);
	if (ret < 0) {
		unsupported(n, "pfc_config", "IEEE DCB of %s: %s", n->cfg.nic, strerror(-ret));
		n->pfc.known = false;
		return;
	}
	if (!n->pfc.known || n->pfc.lossless != en)
		ice_info(AGENT_SUB, "nic %s: lossless (PFC) priorities mask 0x%02x", n->cfg.nic,
			 en);
	n->pfc.known = true;
	n->pfc.lossless = en;
}

/* Pause rates and storms from the ethtool values just read. */
static void pfc_update(struct agent_nic *n, uint64_t now_ns)
{
	struct agent_pfc *f = &n->pfc;
	double dt = n->pfc_have_prev && now_ns > n->pfc_prev_ns
			    ? (double)(now_ns - n->pfc_prev_ns) / 1e9
			    : 0;
	double *out[4] = {f->rx_pause, f->tx_pause, f->rx_paused, f->tx_paused};
	uint8_t storm = 0;

	f->seen = 0;
	for (int k = 0; k < 4; k++)
		for (int p = 0; p < 8; p++) {
			int32_t i = n->pfc_idx[k][p];
			uint64_t v, d;

			out[k][p] = 0;
			if (i < 0)
				continue;
			f->seen |= (uint8_t)(1u << p);
			v = n->eth_vals[i];
			d = v >= n->pfc_prev[k][p] ? v - n->pfc_prev[k][p] : v;
			if (dt > 0)
				out[k][p] = k < PFC_RX_US ? (double)d / dt : (double)d / 1e6 / dt;
			/* counters read a little apart: a share stays a share */
			if (k >= PFC_RX_US && out[k][p] > 1.0)
				out[k][p] = 1.0;
			n->pfc_prev[k][p] = v;
		}
	f->has_rate = dt > 0;
	for (int p = 0; f->has_rate && p < 8; p++) {
		if (f->rx_paused[p] >= AGENT_PFC_STORM || f->tx_paused[p] >= AGENT_PFC_STORM)
			storm |= (uint8_t)(1u << p);
		if ((storm ^ f->storm) & (1u << p))
			ice_warn(AGENT_SUB,
				 "nic %s: pause storm on priority %d %s (%s): paused %.0f %% "
				 "(rx) / %.0f %% (tx) of the last %.0f ms",
				 n->cfg.nic, p, storm & (1u << p) ? "began" : "ended",
				 f->known && (f->lossless & (1u << p)) ? "lossless" : "lossy",
				 f->rx_paused[p] * 100, f->tx_paused[p] * 100, dt * 1e3);
	}
	f->storm = storm;
	n->pfc_prev_ns = now_ns;
	n->pfc_have_prev = true;
}

void agent_nic_pfc(const struct agent_nic *n, struct agent_pfc *p)
{
	*p = n->pfc;
}

static int eth_setup(struct agent_nic *n)
{
	size_t cnt = 0;
	int ret;

	/* drop an earlier set (the driver's count changed) */
	for (size_t i = 0; i < n->nctr;)
		if (n->ctr[i].src == SRC_ETH)
			n->ctr[i] = n->ctr[--n->nctr];
		else
			i++;
	free(n->eth_names);
	free(n->eth_vals);
	n->eth_names = NULL;
	n->eth_vals = NULL;
	n->eth_ok = false;
	memset(n->pfc_idx, 0xff, sizeof(n->pfc_idx)); /* -1: none */
	n->pfc_have_prev = false;
	ret = n->io.eth_names(n->io.ctx, n->cfg.nic, &n->eth_names, &cnt);
	if (ret < 0) {
		unsupported(n, "eth", "ethtool statistics of %s: %s", n->cfg.nic, strerror(-ret));
		return 0;
	}
	n->neth = cnt;
	n->eth_vals = calloc(cnt ? cnt : 1, sizeof(uint64_t));
	if (n->eth_vals == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		const char *name = n->eth_names + i * AGENT_NIC_NAME_MAX;
		struct nic_ctr *c;

		if (!eth_watched(name))
			continue;
		pfc_index(n, name, (int32_t)i);
		c = ctr_add(n);
		if (c == NULL)
			return -ENOMEM;
		snprintf(c->field, sizeof(c->field), "eth.%s", name);
		c->src = SRC_ETH;
		c->eth_i = (uint32_t)i;
	}
	n->eth_ok = true;
	return 0;
}

static void eth_read(struct agent_nic *n)
{
	int ret;

	if (!n->eth_ok)
		return;
	ret = n->io.eth_values(n->io.ctx, n->cfg.nic, n->eth_vals, n->neth);
	if (ret == -ESTALE) {
		ice_info(AGENT_SUB,
			 "nic %s: the ethtool statistics changed; reading the names again",
			 n->cfg.nic);
		if (eth_setup(n) < 0 || !n->eth_ok)
			return;
		ret = n->io.eth_values(n->io.ctx, n->cfg.nic, n->eth_vals, n->neth);
	}
	if (ret < 0) {
		unsupported(n, "eth", "ETHTOOL_GSTATS on %s: %s", n->cfg.nic, strerror(-ret));
		n->eth_ok = false;
		return;
	}
	for (size_t i = 0; i < n->nctr; i++)
		if (n->ctr[i].src == SRC_ETH) {
			n->ctr[i].value = n->eth_vals[n->ctr[i].eth_i];
			n->ctr[i].ok = true;
		}
	pfc_update(n, ice_now_ns());
}

/* ---- RDMA netlink */

static int nl_dump(struct agent_nic *n, enum agent_nic_req kind, uint8_t **out, size_t *len)
{
	uint8_t req[64];
	size_t rl = agent_nic_nl_request(req, sizeof(req), kind, n->dev_index, 1);

	return n->io.rdma_dump(n->io.ctx, kind, req, rl, out, len);
}

static int nl_index(struct agent_nic *n)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = nl_dump(n, AGENT_NIC_REQ_DEV, &buf, &len);

	if (ret == 0)
		ret = agent_nic_nl_dev_index(buf, len, n->dev, &n->dev_index);
	free(buf);
	n->have_index = ret == 0;
	return ret;
}

static void nl_read(struct agent_nic *n)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = n->have_index ? 0 : nl_index(n);

	if (ret == 0)
		ret = nl_dump(n, AGENT_NIC_REQ_RES_QP, &buf, &len);
	if (ret == 0)
		ret = agent_nic_nl_res_qp(buf, len, &n->qps, &n->nqps, &n->qcap);
	free(buf);
	buf = NULL;
	if (ret == 0) {
		/* per-QP counters exist only where the operator bound them
		 * (rdma statistic qp bind ...): their absence is not an error */
		if (nl_dump(n, AGENT_NIC_REQ_STAT_QP, &buf, &len) == 0)
			(void)agent_nic_nl_stat_qp(buf, len, n->qps, n->nqps);
		else
			unsupported(n, "qp_counters", "no QP counters by RDMA netlink");
		free(buf);
	}
	if (ret < 0) {
		if (!n->nl_warned)
			unsupported(n, "qps", "RDMA netlink: %s", strerror(-ret));
		n->nl_warned = true;
		n->have_index = false;
		return;
	}
	if (n->nl_warned)
		ice_info(AGENT_SUB, "nic %s: RDMA netlink answers again", n->dev);
	n->nl_warned = false;
	n->nl_ok = true;
}

/* ---- life */

static int find_dev(struct agent_nic *n)
{
	char dir[512];
	struct dirent *de;
	DIR *d;

	if (n->cfg.rdma_dev[0] != '\0') {
		snprintf(n->dev, sizeof(n->dev), "%s", n->cfg.rdma_dev);
		return 0;
	}
	/* the netdev's PCI function lists its RDMA device */
	path_of(n, dir, sizeof(dir), "/sys/class/net/%s/device/infiniband", n->cfg.nic);
	d = opendir(dir);
	if (d == NULL) {
		ice_err(AGENT_SUB, "nic %s: no RDMA device (%s: %s); set 'rdma_dev'", n->cfg.nic,
			dir, strerror(errno));
		return -ENODEV;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.') {
			snprintf(n->dev, sizeof(n->dev), "%.63s", de->d_name);
			break;
		}
	closedir(d);
	if (n->dev[0] == '\0') {
		ice_err(AGENT_SUB, "nic %s: %s is empty; set 'rdma_dev'", n->cfg.nic, dir);
		return -ENODEV;
	}
	return 0;
}

static int port_cmp(const void *a, const void *b)
{
	return atoi(*(char *const *)a) - atoi(*(char *const *)b);
}

static int open_ports(struct agent_nic *n)
{
	char dir[512], *names[64];
	struct dirent *de;
	size_t np = 0;
	int ret = 0;
	DIR *d;

	path_of(n, dir, sizeof(dir), "/sys/class/infiniband/%s/ports", n->dev);
	d = opendir(dir);
	if (d == NULL) {
		ret = -errno;
		ice_err(AGENT_SUB, "nic %s: RDMA device %s: %s: %s", n->cfg.nic, n->dev, dir,
			strerror(-ret));
		return ret;
	}
	while ((de = readdir(d)) != NULL && np < 64)
		if (isdigit((unsigned char)de->d_name[0]))
			names[np++] = strdup(de->d_name);
	closedir(d);
	qsort(names, np, sizeof(names[0]), port_cmp);
	for (size_t i = 0; i < np; i++) {
		if (ret == 0 && names[i] != NULL)
			ret = port_dir(n, names[i], SRC_PORT);
		if (ret == 0 && names[i] != NULL)
			ret = port_dir(n, names[i], SRC_HW);
		free(names[i]);
	}
	if (ret == 0 && np == 0) {
		ice_err(AGENT_SUB, "nic %s: RDMA device %s has no ports under %s", n->cfg.nic,
			n->dev, dir);
		ret = -ENODEV;
	}
	return ret;
}

struct agent_nic *agent_nic_new(const struct agent_cfg *cfg, const struct agent_nic_io *io)
{
	struct agent_nic *n = calloc(1, sizeof(*n));
	int ret;

	if (n == NULL)
		return NULL;
	n->cfg = *cfg;
	snprintf(n->root, sizeof(n->root), "%.250s",
		 strcmp(cfg->sysroot, "/") == 0 ? "" : cfg->sysroot);
	if (io != NULL) {
		n->io = *io;
	} else if (strcmp(cfg->nic_io, "replay") == 0) {
		ret = agent_nic_io_replay(&n->io, cfg->sysroot);
		if (ret < 0)
			goto err;
		n->own_io = true;
	} else {
		n->io = agent_nic_io_kernel;
	}
	ret = find_dev(n);
	if (ret == 0)
		ret = open_ports(n);
	if (ret == 0)
		ret = eth_setup(n);
	if (ret < 0)
		goto err;
	n->dcb_every = cfg->interval != 0 ? 10 * ICE_NSEC_PER_SEC / cfg->interval : 1;
	if (n->dcb_every == 0)
		n->dcb_every = 1;
	pfc_lossless(n);
	eth_read(n);
	nl_read(n);
	n->cc = agent_nic_cc_new(cfg, n->root, n->dev, &n->io);
	if (n->cc == NULL) {
		ret = -errno;
		goto err;
	}
	ice_info(AGENT_SUB,
		 "nic %s: RDMA device %s, %zu counters (%zu unsupported), %zu QPs, DCQCN by %s",
		 cfg->nic, n->dev, n->nctr, n->nunsup, n->nqps,
		 agent_nic_cc_iface_name(agent_nic_cc_which(n->cc)));
	return n;
err:
	agent_nic_free(n);
	errno = -ret;
	return NULL;
}

void agent_nic_free(struct agent_nic *n)
{
	if (n == NULL)
		return;
	agent_nic_cc_free(n->cc); /* restores the NIC's own DCQCN values */
	for (size_t i = 0; i < n->nctr; i++)
		if (n->ctr[i].fd >= 0)
			close(n->ctr[i].fd);
	for (size_t i = 0; i < n->nunsup; i++)
		free(n->unsup[i]);
	free(n->unsup);
	free(n->ctr);
	free(n->eth_names);
	free(n->eth_vals);
	free(n->qps);
	if (n->own_io)
		agent_nic_io_fini(&n->io);
	free(n);
}

int agent_nic_read(struct agent_nic *n)
{
	if (++n->reads % n->dcb_every == 0)
		pfc_lossless(n);
	for (size_t i = 0; i < n->nctr; i++)
		if (n->ctr[i].src != SRC_ETH)
			ctr_read(n, &n->ctr[i]);
	eth_read(n);
	nl_read(n);
	return 0;
}

const struct agent_nic_qp *agent_nic_qps(const struct agent_nic *n, size_t *count)
{
	*count = n->nl_ok ? n->nqps : 0;
	return n->qps;
}

void agent_nic_summary(const struct agent_nic *n, struct agent_ctr *c)
{
	uint64_t k[K_MAX] = {0};

	for (size_t i = 0; i < n->nctr; i++)
		if (n->ctr[i].ok && n->ctr[i].known != K_NONE)
			k[n->ctr[i].known] += n->ctr[i].value;
	*c = (struct agent_ctr){
		/* PortXmitData/PortRcvData count 32-bit words (IBA, and the
		 * kernel's sysfs ABI for infiniband ports) */
		.tx_bytes = k[K_XMIT_DATA] * 4,
		.rx_bytes = k[K_RCV_DATA] * 4,
		.tx_pkts = k[K_XMIT_PKTS],
		.rx_pkts = k[K_RCV_PKTS],
		.ce = k[K_CE],
		.cnp_tx = k[K_CNP_TX],
		.cnp_rx = k[K_CNP_RX],
		.nak_tx = k[K_OOS],
		.nak_rx = k[K_SEQ_ERR],
		.retx = k[K_TIMEOUT],
	};
}

size_t agent_nic_ncounters(const struct agent_nic *n)
{
	return n->nctr;
}

size_t agent_nic_nunsupported(const struct agent_nic *n)
{
	return n->nunsup;
}

size_t agent_nic_render(struct agent_nic *n, const char *key, unsigned full_every,
			struct agent_buf *out)
{
	bool full = n->renders == 0 || (full_every != 0 && n->renders % full_every == 0);
	size_t cap = 2 * n->nctr + 16, argc = 0, fields = 0, nval = 0;
	const char **argv = malloc(cap * sizeof(*argv));
	char *vals = malloc((n->nctr + 2) * 24), *unsup = NULL, nq[24];

	n->renders++;
	if (argv == NULL || vals == NULL) {
		out->failed = true;
		free(argv);
		free(vals);
		return 0;
	}
	argv[argc++] = "HSET";
	argv[argc++] = key;
	if (full) {
		argv[argc++] = "source";
		argv[argc++] = "mlx5: sysfs hw_counters+counters, ethtool, rdma netlink";
		argv[argc++] = "rdma_dev";
		argv[argc++] = n->dev;
		argv[argc++] = "dcqcn_iface";
		argv[argc++] = agent_nic_cc_iface_name(agent_nic_cc_which(n->cc));
	}
	if (full || n->unsup_changed) {
		json_t *a = json_array();

		for (size_t i = 0; i < n->nunsup; i++)
			json_array_append_new(a, json_string(n->unsup[i]));
		unsup = json_dumps(a, JSON_COMPACT);
		json_decref(a);
		argv[argc++] = "unsupported";
		argv[argc++] = unsup != NULL ? unsup : "[]";
		n->unsup_changed = false;
	}
	snprintf(nq, sizeof(nq), "%zu", n->nqps);
	argv[argc++] = "qps";
	argv[argc++] = nq;
	for (size_t i = 0; i < n->nctr; i++) {
		struct nic_ctr *c = &n->ctr[i];
		char *v;

		if (!c->ok || (!full && c->sent && c->value == c->published))
			continue;
		v = vals + 24 * nval++;
		argv[argc++] = c->field;
		argv[argc++] = agent_u64_text(v, c->value);
		c->published = c->value;
		c->sent = true;
		fields++;
	}
	agent_buf_cmdv(out, (int)argc, argv);
	free(argv);
	free(vals);
	free(unsup);
	return fields;
}

enum agent_nic_cc_iface agent_nic_cc_iface(const struct agent_nic *n)
{
	return agent_nic_cc_which(n->cc);
}

int agent_nic_dcqcn_apply(struct agent_nic *n, const struct ice_dcqcn_params *p,
			  struct ice_cfg_err *err)
{
	return agent_nic_cc_apply(n->cc, p, err);
}

int agent_nic_dcqcn_apply_prios(struct agent_nic *n, const struct agent_dcqcn_prios *set,
				struct ice_cfg_err *err)
{
	return agent_nic_cc_apply_prios(n->cc, set, err);
}

int agent_nic_dcqcn_restore(struct agent_nic *n)
{
	return agent_nic_cc_restore(n->cc);
}

bool agent_nic_dcqcn_current(const struct agent_nic *n, unsigned prio, struct ice_dcqcn_params *p)
{
	return agent_nic_cc_current(n->cc, prio, p);
}
