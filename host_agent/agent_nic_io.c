// SPDX-License-Identifier: Apache-2.0
/*
 * agent_nic_io: what the NIC backend asks the kernel outside files —
 * ethtool statistics (SIOCETHTOOL) and RDMA netlink dumps — the replay of
 * recorded replies that stands in for both on fixture trees, and the RDMA
 * netlink codec (requests out, QP and counter tables in) that both share.
 *
 * The message layout parsed here is the one drivers/infiniband/core/nldev.c
 * emits: per message the device handle (DEV_INDEX, DEV_NAME), then a nested
 * table (RES_QP of RES_QP_ENTRY; STAT_COUNTER of STAT_COUNTER_ENTRY, each
 * with STAT_HWCOUNTERS of {NAME, VALUE} and a RES_QP table of LQPNs).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dcbnl.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_nic.h"

/* ------------------------------------------------------------- ethtool */

static int eth_ioctl(const char *ifname, void *data)
{
	struct ifreq ifr;
	int fd, ret = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -ENAMETOOLONG;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	ifr.ifr_data = data;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int eth_count(const char *ifname, size_t *n)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} info = {.hdr = {.cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_STATS}};
	int ret = eth_ioctl(ifname, &info);

	if (ret < 0)
		return ret;
	*n = info.hdr.sset_mask != 0 ? info.len : 0;
	return 0;
}

static int kernel_eth_names(void *ctx, const char *ifname, char **names, size_t *n)
{
	struct ethtool_gstrings *gs;
	size_t cnt;
	int ret;

	(void)ctx;
	ret = eth_count(ifname, &cnt);
	if (ret < 0)
		return ret;
	gs = calloc(1, sizeof(*gs) + cnt * ETH_GSTRING_LEN);
	*names = calloc(cnt ? cnt : 1, AGENT_NIC_NAME_MAX);
	if (gs == NULL || *names == NULL) {
		free(gs);
		free(*names);
		*names = NULL;
		return -ENOMEM;
	}
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = (uint32_t)cnt;
	ret = eth_ioctl(ifname, gs);
	if (ret == 0) {
		cnt = gs->len < cnt ? gs->len : cnt;
		for (size_t i = 0; i < cnt; i++)
			snprintf(*names + i * AGENT_NIC_NAME_MAX, AGENT_NIC_NAME_MAX, "%.*s",
				 ETH_GSTRING_LEN, (const char *)gs->data + i * ETH_GSTRING_LEN);
		*n = cnt;
	} else {
		free(*names);
		*names = NULL;
	}
	free(gs);
	return ret;
}

static int kernel_eth_values(void *ctx, const char *ifname, uint64_t *vals, size_t n)
{
	struct ethtool_stats *st = calloc(1, sizeof(*st) + n * sizeof(uint64_t));
	int ret;

	(void)ctx;
	if (st == NULL)
		return -ENOMEM;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = (uint32_t)n;
	ret = eth_ioctl(ifname, st);
	if (ret == 0 && st->n_stats != n)
		ret = -ESTALE;
	if (ret == 0)
		memcpy(vals, st->data, n * sizeof(uint64_t));
	free(st);
	return ret;
}

/* ---------------------------------------------------- netlink messages */

/* A reply may sit at any address (the fuzzer hands one in at an odd
 * offset): its headers are copied out, never read through a cast pointer. */
static struct nlmsghdr nlh_at(const uint8_t *p)
{
	struct nlmsghdr h;

	memcpy(&h, p, sizeof(h));
	return h;
}

/* Message iteration over [p, p + left), stepping as NLMSG_OK and
 * NLMSG_NEXT do. */
struct nlh_it {
	const uint8_t *p;
	int left;
};

/* The next whole message, its header in *h; NULL at the end or at a
 * message that does not fit (left then says what is left). */
static const uint8_t *nlh_next(struct nlh_it *it, struct nlmsghdr *h)
{
	const uint8_t *m = it->p;

	if (it->left < NLMSG_HDRLEN)
		return NULL;
	*h = nlh_at(m);
	if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > (uint32_t)it->left)
		return NULL;
	it->p += NLMSG_ALIGN(h->nlmsg_len);
	it->left -= (int)NLMSG_ALIGN(h->nlmsg_len);
	return m;
}

/* The error of NLMSG_ERROR message m (h its header): 0 for an ACK,
 * -EBADMSG when m is too short to hold one. */
static int nlh_error(const uint8_t *m, const struct nlmsghdr *h)
{
	struct nlmsgerr e;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(e)))
		return -EBADMSG;
	memcpy(&e, m + NLMSG_HDRLEN, sizeof(e));
	return e.error;
}

/* ------------------------------------------------------- RDMA netlink I/O */

static int kernel_rdma_dump(void *ctx, enum agent_nic_req kind, const void *req, size_t len,
			    uint8_t **out, size_t *outlen)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	size_t cap = 0, have = 0;
	uint8_t *buf = NULL, rx[32768];
	bool done = false;
	int fd, ret = 0;

	(void)ctx;
	(void)kind;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (sendto(fd, req, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto out;
	}
	while (!done) {
		ssize_t r = recv(fd, rx, sizeof(rx), 0);
		const uint8_t *m;
		struct nlmsghdr h;
		struct nlh_it it;

		if (r < 0) {
			ret = errno == EINTR ? 0 : -errno;
			if (ret < 0)
				goto out;
			continue;
		}
		it = (struct nlh_it){rx, (int)r};
		while ((m = nlh_next(&it, &h)) != NULL) {
			if (h.nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h.nlmsg_type == NLMSG_ERROR) {
				ret = nlh_error(m, &h);
				if (ret == 0)
					continue; /* an ACK */
				goto out;
			}
			if (!(h.nlmsg_flags & NLM_F_MULTI))
				done = true;
		}
		if (have + (size_t)r > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			uint8_t *nb;

			while (nc < have + (size_t)r)
				nc *= 2;
			nb = realloc(buf, nc);
			if (nb == NULL) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = nc;
		}
		memcpy(buf + have, rx, (size_t)r);
		have += (size_t)r;
	}
out:
	close(fd);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*out = buf;
	*outlen = have;
	return 0;
}

static int kernel_dcb_get(void *ctx, const char *ifname, uint8_t **out, size_t *outlen)
{
	struct {
		struct nlmsghdr h;
		struct dcbmsg d;
		uint8_t attrs[64];
	} req;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	struct nlattr a;
	size_t nl = strlen(ifname) + 1;
	uint8_t *buf;
	ssize_t r;
	int fd;

	(void)ctx;
	if (nl > IFNAMSIZ)
		return -ENAMETOOLONG;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_type = RTM_GETDCB;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	req.d.dcb_family = AF_UNSPEC;
	req.d.cmd = DCB_CMD_IEEE_GET;
	a = (struct nlattr){.nla_len = (uint16_t)(NLA_HDRLEN + nl), .nla_type = DCB_ATTR_IFNAME};
	memcpy(req.attrs, &a, sizeof(a));
	memcpy(req.attrs + NLA_HDRLEN, ifname, nl);
	req.h.nlmsg_len = (uint32_t)(NLMSG_LENGTH(sizeof(req.d)) + NLA_ALIGN(a.nla_len));
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	buf = malloc(16384);
	if (buf == NULL ||
	    sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (r = recv(fd, buf, 16384, 0)) < 0) {
		int err = buf == NULL ? ENOMEM : errno;

		close(fd);
		free(buf);
		return -err;
	}
	close(fd);
	*out = buf;
	*outlen = (size_t)r;
	return 0;
}

static int kernel_param_write(void *ctx, const char *path, uint32_t value)
{
	char txt[16];
	int fd, len, ret = 0;

	(void)ctx;
	/* O_TRUNC: a no-op on sysfs and debugfs, needed on a fixture file */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	len = snprintf(txt, sizeof(txt), "%u\n", value);
	if (write(fd, txt, (size_t)len) != len)
		ret = errno != 0 ? -errno : -EIO;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

const struct agent_nic_io agent_nic_io_kernel = {
	.eth_names = kernel_eth_names,
	.eth_values = kernel_eth_values,
	.rdma_dump = kernel_rdma_dump,
	.dcb_get = kernel_dcb_get,
	.param_write = kernel_param_write,
};

/* -------------------------------------------------------------- replay */

/* The whole file (malloc'ed, NUL added); -errno. */
static int slurp(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = 4096, have = 0;
	uint8_t *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || buf == NULL) {
		int err = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		return -err;
	}
	while ((r = read(fd, buf + have, cap - have)) > 0) {
		have += (size_t)r;
		if (have == cap) {
			uint8_t *nb = realloc(buf, cap * 2 + 1);

			if (nb == NULL) {
				close(fd);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return -EIO;
	}
	buf[have] = '\0';
	*out = buf;
	*len = have;
	return 0;
}

static int replay_eth(const char *root, const char *ifname, char **names, uint64_t *vals, size_t *n,
		      size_t want)
{
	char path[512], *line, *save = NULL;
	uint8_t *txt;
	size_t len, cnt = 0, cap = 64;
	int ret;

	snprintf(path, sizeof(path), "%s/ice-replay/ethtool/%s", root, ifname);
	ret = slurp(path, &txt, &len);
	if (ret < 0)
		return ret == -ENOENT ? -EOPNOTSUPP : ret;
	if (names != NULL && (*names = calloc(cap, AGENT_NIC_NAME_MAX)) == NULL) {
		free(txt);
		return -ENOMEM;
	}
	for (line = strtok_r((char *)txt, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[AGENT_NIC_NAME_MAX];
		unsigned long long v;

		if (sscanf(line, "%47s %llu", name, &v) != 2)
			continue;
		if (names != NULL) {
			if (cnt == cap) {
				char *nn = realloc(*names, cap * 2 * AGENT_NIC_NAME_MAX);

				if (nn == NULL) {
					free(txt);
					free(*names);
					*names = NULL;
					return -ENOMEM;
				}
				*names = nn;
				cap *= 2;
			}
			snprintf(*names + cnt * AGENT_NIC_NAME_MAX, AGENT_NIC_NAME_MAX, "%s", name);
		} else if (cnt < want) {
			vals[cnt] = v;
		}
		cnt++;
	}
	free(txt);
	if (names == NULL && cnt != want)
		return -ESTALE;
	*n = cnt;
	return 0;
}

static int replay_eth_names(void *ctx, const char *ifname, char **names, size_t *n)
{
	return replay_eth(ctx, ifname, names, NULL, n, 0);
}

static int replay_eth_values(void *ctx, const char *ifname, uint64_t *vals, size_t n)
{
	size_t got;

	return replay_eth(ctx, ifname, NULL, vals, &got, n);
}

static uint32_t req_dev_index(const void *req, size_t len);

static int replay_rdma_dump(void *ctx, enum agent_nic_req kind, const void *req, size_t len,
			    uint8_t **out, size_t *outlen)
{
	char path[512];

	/* the device list in rdma/dev; a device's tables in rdma/<index>.<kind> */
	if (kind == AGENT_NIC_REQ_DEV)
		snprintf(path, sizeof(path), "%s/ice-replay/rdma/dev", (const char *)ctx);
	else
		snprintf(path, sizeof(path), "%s/ice-replay/rdma/%u.%s", (const char *)ctx,
			 req_dev_index(req, len),
			 kind == AGENT_NIC_REQ_RES_QP ? "res_qp" : "stat_qp");
	return slurp(path, out, outlen);
}

static int replay_dcb_get(void *ctx, const char *ifname, uint8_t **out, size_t *outlen)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/ice-replay/dcb/%s", (const char *)ctx, ifname);
	return slurp(path, out, outlen);
}

int agent_nic_io_replay(struct agent_nic_io *io, const char *root)
{
	char *r = strdup(root);

	if (r == NULL)
		return -ENOMEM;
	*io = (struct agent_nic_io){
		.eth_names = replay_eth_names,
		.eth_values = replay_eth_values,
		.rdma_dump = replay_rdma_dump,
		.dcb_get = replay_dcb_get,
		.param_write = kernel_param_write,
		.ctx = r,
	};
	return 0;
}

void agent_nic_io_fini(struct agent_nic_io *io)
{
	if (io != NULL && io->eth_names == replay_eth_names)
		free(io->ctx);
	if (io != NULL)
		io->ctx = NULL;
}

/* --------------------------------------------------------------- codec */

#define NLA_HDRLEN_ ((int)NLA_ALIGN(sizeof(struct nlattr)))

static void nla_put(uint8_t *buf, size_t *off, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN_ + len), .nla_type = type};

	memcpy(buf + *off, &a, sizeof(a));
	memcpy(buf + *off + NLA_HDRLEN_, data, len);
	*off += NLA_ALIGN(a.nla_len);
}

size_t agent_nic_nl_request(uint8_t *buf, size_t len, enum agent_nic_req kind, uint32_t dev_index,
			    uint32_t seq)
{
	struct nlmsghdr h = {.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq};
	size_t off = NLMSG_HDRLEN;
	uint32_t res = RDMA_NLDEV_ATTR_RES_QP;
	uint16_t cmd = kind == AGENT_NIC_REQ_DEV      ? RDMA_NLDEV_CMD_GET
		       : kind == AGENT_NIC_REQ_RES_QP ? RDMA_NLDEV_CMD_RES_QP_GET
						      : RDMA_NLDEV_CMD_STAT_GET;

	if (len < 64)
		return 0;
	memset(buf, 0, 64);
	if (kind != AGENT_NIC_REQ_DEV)
		nla_put(buf, &off, RDMA_NLDEV_ATTR_DEV_INDEX, &dev_index, sizeof(dev_index));
	if (kind == AGENT_NIC_REQ_STAT_QP)
		nla_put(buf, &off, RDMA_NLDEV_ATTR_STAT_RES, &res, sizeof(res));
	h.nlmsg_len = (uint32_t)off;
	h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	memcpy(buf, &h, sizeof(h));
	return off;
}

/* Attribute iteration over [p, p + len). An attribute is the address of
 * its header, which (as nlh_at's) is only ever read by copy. */
struct nla_it {
	const uint8_t *p;
	int left;
};

static struct nlattr nla_at(const uint8_t *a)
{
	struct nlattr h;

	memcpy(&h, a, sizeof(h));
	return h;
}

static const uint8_t *nla_next(struct nla_it *it, bool *bad)
{
	const uint8_t *a = it->p;
	struct nlattr h;

	if (it->left < NLA_HDRLEN_)
		return NULL;
	h = nla_at(a);
	if (h.nla_len < NLA_HDRLEN_ || h.nla_len > it->left) {
		*bad = true;
		return NULL;
	}
	it->p += NLA_ALIGN(h.nla_len);
	it->left -= (int)NLA_ALIGN(h.nla_len);
	if (it->left < 0)
		it->left = 0;
	return a;
}

static int nla_type(const uint8_t *a)
{
	return nla_at(a).nla_type & NLA_TYPE_MASK;
}

static int nla_plen(const uint8_t *a)
{
	return nla_at(a).nla_len - NLA_HDRLEN_;
}

static struct nla_it nla_inner(const uint8_t *a)
{
	return (struct nla_it){a + NLA_HDRLEN_, nla_plen(a)};
}

static bool nla_u32(const uint8_t *a, uint32_t *v)
{
	if (nla_plen(a) < 4)
		return false;
	memcpy(v, a + NLA_HDRLEN_, 4);
	return true;
}

static bool nla_u64(const uint8_t *a, uint64_t *v)
{
	if (nla_plen(a) < 8)
		return false;
	memcpy(v, a + NLA_HDRLEN_, 8);
	return true;
}

static bool nla_u8(const uint8_t *a, uint8_t *v)
{
	if (nla_plen(a) < 1)
		return false;
	*v = a[NLA_HDRLEN_];
	return true;
}

/* Walk the messages of a dump reply: fn on each message's attributes. */
static int nl_walk(const uint8_t *buf, size_t len, int (*fn)(struct nla_it *it, void *arg),
		   void *arg)
{
	struct nlh_it msgs = {buf, (int)len};
	struct nlmsghdr h;
	const uint8_t *m;

	while ((m = nlh_next(&msgs, &h)) != NULL) {
		struct nla_it it;
		int ret;

		if (h.nlmsg_type == NLMSG_DONE)
			return 0;
		if (h.nlmsg_type == NLMSG_ERROR) {
			ret = nlh_error(m, &h);
			if (ret != 0)
				return ret;
			continue;
		}
		it = (struct nla_it){m + NLMSG_HDRLEN, (int)(h.nlmsg_len - NLMSG_HDRLEN)};
		ret = fn(&it, arg);
		if (ret < 0)
			return ret;
	}
	return msgs.left == 0 ? 0 : -EBADMSG;
}

struct dev_find {
	const char *name;
	uint32_t index;
	bool found;
};

static int dev_msg(struct nla_it *it, void *arg)
{
	struct dev_find *f = arg;
	const uint8_t *a;
	uint32_t idx = 0;
	bool bad = false, has_idx = false, match = false;

	while ((a = nla_next(it, &bad)) != NULL) {
		if (nla_type(a) == RDMA_NLDEV_ATTR_DEV_INDEX)
			has_idx = nla_u32(a, &idx);
		else if (nla_type(a) == RDMA_NLDEV_ATTR_DEV_NAME)
			match = strnlen((const char *)a + NLA_HDRLEN_, (size_t)nla_plen(a)) ==
					strlen(f->name) &&
				strncmp((const char *)a + NLA_HDRLEN_, f->name,
					(size_t)nla_plen(a)) == 0;
	}
	if (bad)
		return -EBADMSG;
	if (match && has_idx) {
		f->index = idx;
		f->found = true;
	}
	return 0;
}

static uint32_t req_dev_index(const void *req, size_t len)
{
	struct nlmsghdr h;
	struct nla_it it;
	const uint8_t *a;
	bool bad = false;
	uint32_t idx = UINT32_MAX;

	if (len < NLMSG_HDRLEN)
		return idx;
	h = nlh_at(req);
	if (h.nlmsg_len > len)
		return idx;
	it = (struct nla_it){(const uint8_t *)req + NLMSG_HDRLEN,
			     (int)(h.nlmsg_len - NLMSG_HDRLEN)};
	while ((a = nla_next(&it, &bad)) != NULL)
		if (nla_type(a) == RDMA_NLDEV_ATTR_DEV_INDEX)
			nla_u32(a, &idx);
	return idx;
}

int agent_nic_nl_dev_index(const uint8_t *buf, size_t len, const char *name, uint32_t *index)
{
	struct dev_find f = {.name = name};
	int ret = nl_walk(buf, len, dev_msg, &f);

	if (ret < 0)
		return ret;
	if (!f.found)
		return -ENODEV;
	*index = f.index;
	return 0;
}

struct qp_list {
	struct agent_nic_qp **qps;
	size_t *n, *cap;
};

static int qp_entry(const uint8_t *e, struct agent_nic_qp *q)
{
	struct nla_it it = nla_inner(e);
	const uint8_t *a;
	bool bad = false, has_lqpn = false;

	memset(q, 0, sizeof(*q));
	while ((a = nla_next(&it, &bad)) != NULL) {
		switch (nla_type(a)) {
		case RDMA_NLDEV_ATTR_RES_LQPN:
			has_lqpn = nla_u32(a, &q->lqpn);
			break;
		case RDMA_NLDEV_ATTR_RES_RQPN:
			q->has_rqpn = nla_u32(a, &q->rqpn);
			break;
		case RDMA_NLDEV_ATTR_RES_PID:
			nla_u32(a, &q->pid);
			break;
		case RDMA_NLDEV_ATTR_PORT_INDEX:
			nla_u32(a, &q->port);
			break;
		case RDMA_NLDEV_ATTR_RES_TYPE:
			nla_u8(a, &q->type);
			break;
		case RDMA_NLDEV_ATTR_RES_STATE:
			nla_u8(a, &q->state);
			break;
		default:
			break;
		}
	}
	return bad || !has_lqpn ? -EBADMSG : 0;
}

static int res_qp_msg(struct nla_it *it, void *arg)
{
	struct qp_list *l = arg;
	const uint8_t *a, *e;
	bool bad = false;

	while ((a = nla_next(it, &bad)) != NULL) {
		struct nla_it tab;

		if (nla_type(a) != RDMA_NLDEV_ATTR_RES_QP)
			continue;
		tab = nla_inner(a);
		while ((e = nla_next(&tab, &bad)) != NULL) {
			if (nla_type(e) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
				continue;
			if (*l->n == *l->cap) {
				size_t nc = *l->cap ? *l->cap * 2 : 256;
				struct agent_nic_qp *nq = realloc(*l->qps, nc * sizeof(*nq));

				if (nq == NULL)
					return -ENOMEM;
				*l->qps = nq;
				*l->cap = nc;
			}
			if (qp_entry(e, &(*l->qps)[*l->n]) < 0)
				return -EBADMSG;
			(*l->n)++;
		}
	}
	return bad ? -EBADMSG : 0;
}

int agent_nic_nl_res_qp(const uint8_t *buf, size_t len, struct agent_nic_qp **qps, size_t *n,
			size_t *cap)
{
	struct qp_list l = {qps, n, cap};

	*n = 0;
	return nl_walk(buf, len, res_qp_msg, &l);
}

struct stat_list {
	struct agent_nic_qp *qps;
	size_t n;
};

static int qp_by_lqpn(const void *k, const void *e)
{
	uint32_t a = *(const uint32_t *)k, b = ((const struct agent_nic_qp *)e)->lqpn;

	return a < b ? -1 : a > b;
}

static int qp_cmp(const void *x, const void *y)
{
	return qp_by_lqpn(&((const struct agent_nic_qp *)x)->lqpn, y);
}

struct hwc {
	uint64_t ce, rx_cnp, tx_cnp, oos, seq, timeout, rnr;
	bool any;
};

/* The field of a QP counter's name (not NUL-terminated, len bytes), NULL
 * for the others. Every bound QP's entry names ~10-30 counters each
 * interval: a switch on the length, then whole-name compares the compiler
 * inlines (where a table scan with strnlen and memcmp calls cost ~40 % of
 * parsing the dump). */
static uint64_t *hwc_field(struct hwc *c, const char *name, size_t len)
{
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, sizeof(s) - 1) == 0)
	switch (len) {
	case 13:
		return IS("cc_rx_ce_pkts") ? &c->ce : NULL;
	case 14:
		return IS("cc_rx_cnp_pkts")   ? &c->rx_cnp
		       : IS("cc_tx_cnp_pkts") ? &c->tx_cnp
		       : IS("packet_seq_err") ? &c->seq
					      : NULL;
	case 15:
		return IS("out_of_sequence") ? &c->oos : NULL;
	case 17:
		return IS("rnr_nak_retry_err") ? &c->rnr : NULL;
	case 21:
		return IS("local_ack_timeout_err") ? &c->timeout : NULL;
	}
	return NULL;
#undef IS
}

static void hwc_set(struct hwc *c, const char *name, int nlen, uint64_t v)
{
	/* a netlink string: its length with the NUL */
	size_t len =
		nlen > 0 && name[nlen - 1] == '\0' ? (size_t)nlen - 1 : strnlen(name, (size_t)nlen);
	uint64_t *f = hwc_field(c, name, len);

	if (f != NULL) {
		*f = v;
		c->any = true;
	}
}

static int stat_entry(const uint8_t *e, struct stat_list *l)
{
	struct nla_it it = nla_inner(e), sub, ent;
	const uint8_t *a, *b, *x;
	struct hwc c = {0};
	uint32_t lqpns[2];
	size_t nl = 0;
	bool bad = false;

	while ((a = nla_next(&it, &bad)) != NULL) {
		if (nla_type(a) == RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) {
			sub = nla_inner(a);
			while ((b = nla_next(&sub, &bad)) != NULL) {
				const char *name = NULL;
				int nlen = 0;
				uint64_t v = 0;
				bool hv = false;

				if (nla_type(b) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
					continue;
				ent = nla_inner(b);
				while ((x = nla_next(&ent, &bad)) != NULL) {
					if (nla_type(x) ==
					    RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
						name = (const char *)x + NLA_HDRLEN_;
						nlen = nla_plen(x);
					} else if (nla_type(x) ==
						   RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE) {
						hv = nla_u64(x, &v);
					}
				}
				if (name != NULL && hv)
					hwc_set(&c, name, nlen, v);
			}
		} else if (nla_type(a) == RDMA_NLDEV_ATTR_RES_QP) {
			sub = nla_inner(a);
			while ((b = nla_next(&sub, &bad)) != NULL) {
				if (nla_type(b) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
					continue;
				ent = nla_inner(b);
				while ((x = nla_next(&ent, &bad)) != NULL)
					if (nla_type(x) == RDMA_NLDEV_ATTR_RES_LQPN &&
					    nla_u32(x, &lqpns[nl < 2 ? nl : 1]))
						nl++; /* the first, and whether there are more */
			}
		}
	}
	if (bad)
		return -EBADMSG;
	/* only a counter bound to one QP (rdma statistic qp bind ... lqpn N)
	 * is that QP's; one shared by several (auto mode groups QPs by type
	 * or process) sums them and is left out of the QP records: the
	 * device-wide counters carry it; with no QPs (their table may be
	 * NULL) there is none to search */
	if (nl != 1 || !c.any || l->n == 0)
		return 0;
	{
		struct agent_nic_qp *q = bsearch(&lqpns[0], l->qps, l->n, sizeof(*q), qp_by_lqpn);

		if (q == NULL)
			return 0;
		q->has_ctr = true;
		q->cc_rx_ce = c.ce;
		q->cc_rx_cnp = c.rx_cnp;
		q->cc_tx_cnp = c.tx_cnp;
		q->out_of_sequence = c.oos;
		q->packet_seq_err = c.seq;
		q->local_ack_timeout_err = c.timeout;
		q->rnr_nak_retry_err = c.rnr;
	}
	return 0;
}

static int stat_msg(struct nla_it *it, void *arg)
{
	const uint8_t *a, *e;
	bool bad = false;

	while ((a = nla_next(it, &bad)) != NULL) {
		struct nla_it tab;

		if (nla_type(a) != RDMA_NLDEV_ATTR_STAT_COUNTER)
			continue;
		tab = nla_inner(a);
		while ((e = nla_next(&tab, &bad)) != NULL)
			if (nla_type(e) == RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY &&
			    stat_entry(e, arg) < 0)
				return -EBADMSG;
	}
	return bad ? -EBADMSG : 0;
}

/* By lqpn, for bsearch. The kernel dumps QPs by restrack id, the QPN but
 * for GSI and SMI, whose port sits above bit 24: nearly sorted, with QP1
 * of each port last. A few entries out of place are moved into place
 * (O(n) here, where qsort costs ~250k instructions for 1,000 QPs every
 * interval); more, and it is a qsort. */
static void qps_sort(struct agent_nic_qp *qps, size_t n)
{
	unsigned moved = 0;

	for (size_t i = 1; i < n; i++) {
		struct agent_nic_qp q;
		size_t lo = 0, hi = i;

		if (qps[i - 1].lqpn <= qps[i].lqpn)
			continue;
		if (++moved > 16) {
			qsort(qps, n, sizeof(*qps), qp_cmp);
			return;
		}
		while (lo < hi) { /* the first entry above q's lqpn */
			size_t mid = lo + (hi - lo) / 2;

			if (qps[mid].lqpn <= qps[i].lqpn)
				lo = mid + 1;
			else
				hi = mid;
		}
		q = qps[i];
		memmove(&qps[lo + 1], &qps[lo], (i - lo) * sizeof(*qps));
		qps[lo] = q;
	}
}

int agent_nic_nl_stat_qp(const uint8_t *buf, size_t len, struct agent_nic_qp *qps, size_t n)
{
	struct stat_list l = {qps, n};

	qps_sort(qps, n);
	return nl_walk(buf, len, stat_msg, &l);
}

int agent_nic_dcb_pfc(const uint8_t *buf, size_t len, uint8_t *pfc_en)
{
	struct nlh_it msgs = {buf, (int)len};
	struct nlmsghdr h;
	const uint8_t *m = nlh_next(&msgs, &h), *a, *b;
	struct nla_it it, in;
	bool bad = false;

	if (m == NULL)
		return -EBADMSG;
	if (h.nlmsg_type == NLMSG_ERROR) {
		int err = nlh_error(m, &h);

		return err < 0 ? err : -EBADMSG;
	}
	if (h.nlmsg_len < NLMSG_LENGTH(sizeof(struct dcbmsg)))
		return -EBADMSG;
	it = (struct nla_it){m + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct dcbmsg)),
			     (int)(h.nlmsg_len - NLMSG_LENGTH(sizeof(struct dcbmsg)))};
	while ((a = nla_next(&it, &bad)) != NULL) {
		if (nla_type(a) != DCB_ATTR_IEEE)
			continue;
		in = nla_inner(a);
		while ((b = nla_next(&in, &bad)) != NULL)
			if (nla_type(b) == DCB_ATTR_IEEE_PFC) {
				struct ieee_pfc pfc;

				if (nla_plen(b) < (int)sizeof(pfc))
					return -EBADMSG;
				memcpy(&pfc, b + NLA_HDRLEN_, sizeof(pfc));
				*pfc_en = pfc.pfc_en;
				return 0;
			}
	}
	return bad ? -EBADMSG : -ENODATA;
}
