// SPDX-License-Identifier: Apache-2.0
/* probe_wire: build and parse probe packets; match answers to probes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/udp.h>
#include <string.h>

#include "ice_time.h"
#include "probe_wire.h"

const char *const probe_drop_names[PROBE_DROP_N] = {
	[0] = "none",
	[PROBE_DROP_OTHER] = "other",
	[PROBE_DROP_TRUNCATED] = "truncated",
	[PROBE_DROP_MALFORMED] = "malformed",
	[PROBE_DROP_FORGED] = "forged",
	[PROBE_DROP_UNEXPECTED] = "unexpected",
	[PROBE_DROP_UNKNOWN] = "unknown",
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

uint16_t probe_ip_csum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (; len > 1; len -= 2, p += 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t probe_build(uint8_t *buf, struct in_addr src, struct in_addr dst, uint16_t sport,
		   uint16_t dport, uint8_t ttl, const struct probe_hdr *h)
{
	uint8_t *ip = buf, *udp = buf + 20, *pl = buf + 28;

	memset(buf, 0, PROBE_IP_LEN);
	ip[0] = 0x45;
	put16(ip + 2, PROBE_IP_LEN);
	put16(ip + 4, (uint16_t)h->seq);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = ttl;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put16(ip + 10, probe_ip_csum(ip, 20));
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(udp + 4, 8 + PROBE_PAYLOAD_LEN); /* checksum 0, as RoCEv2 */
	pl[0] = 0x64;			       /* BTH: UD SEND only */
	put16(pl + 2, 0xffff);
	put32(pl + 4, 0xffffff);
	put32(pl + 8, h->seq & 0xffffff);
	put32(pl + 12, PROBE_MAGIC);
	pl[16] = PROBE_VERSION;
	pl[17] = h->kind;
	pl[18] = h->ttl;
	pl[19] = h->flags;
	put32(pl + 20, h->seq);
	put64(pl + 24, h->nonce);
	put64(pl + 32, h->t1);
	put64(pl + 40, h->t2);
	put64(pl + 48, h->t3);
	put16(pl + 56, h->sport);
	put16(pl + 58, h->path);
	return PROBE_IP_LEN;
}

/* Parse the probe header from a UDP payload of len bytes. 1 when present,
 * 0 when too short to hold it, -MALFORMED when it is not a probe header. */
static int parse_hdr(const uint8_t *pl, size_t len, struct probe_hdr *h)
{
	if (len < 16)
		return 0;
	if (get32(pl + 12) != PROBE_MAGIC)
		return -PROBE_DROP_OTHER;
	if (len < 60)
		return 0;
	if (pl[16] != PROBE_VERSION || pl[17] < PROBE_KIND_TRACE || pl[17] > PROBE_KIND_REPLY)
		return -PROBE_DROP_MALFORMED;
	h->kind = pl[17];
	h->ttl = pl[18];
	h->flags = pl[19];
	h->seq = get32(pl + 20);
	h->nonce = get64(pl + 24);
	h->t1 = get64(pl + 32);
	h->t2 = get64(pl + 40);
	h->t3 = get64(pl + 48);
	h->sport = get16(pl + 56);
	h->path = get16(pl + 58);
	return 1;
}

/* IPv4 header at p (cap bytes available): header length or -reason. */
static int ip_hlen(const uint8_t *p, size_t cap, size_t *tot)
{
	size_t hl;

	if (cap < 20)
		return -PROBE_DROP_TRUNCATED;
	if (p[0] >> 4 != 4)
		return -PROBE_DROP_MALFORMED;
	hl = (size_t)(p[0] & 0xf) * 4;
	if (hl < 20)
		return -PROBE_DROP_MALFORMED;
	if (hl > cap)
		return -PROBE_DROP_TRUNCATED;
	*tot = get16(p + 2);
	if (*tot < hl)
		return -PROBE_DROP_MALFORMED;
	return (int)hl;
}

static int parse_icmp(const uint8_t *icmp, size_t len, uint16_t probe_port, struct probe_rx *rx)
{
	const uint8_t *q, *qudp;
	size_t qtot;
	int qhl, r;

	if (len < 8)
		return -PROBE_DROP_TRUNCATED;
	rx->icmp_type = icmp[0];
	rx->icmp_code = icmp[1];
	if (icmp[0] == ICMP_TIME_EXCEEDED && icmp[1] == ICMP_EXC_TTL)
		rx->kind = PROBE_RX_HOP;
	else if (icmp[0] == ICMP_DEST_UNREACH)
		rx->kind = PROBE_RX_UNREACH;
	else
		return -PROBE_DROP_OTHER;
	q = icmp + 8;
	len -= 8;
	qhl = ip_hlen(q, len, &qtot);
	if (qhl < 0)
		return qhl;
	if (q[9] != IPPROTO_UDP)
		return -PROBE_DROP_OTHER;
	if (len < (size_t)qhl + 8)
		return -PROBE_DROP_TRUNCATED;
	qudp = q + qhl;
	if (get16(qudp + 2) != probe_port)
		return -PROBE_DROP_OTHER;
	memcpy(&rx->psrc, q + 12, 4);
	memcpy(&rx->pdst, q + 16, 4);
	rx->ipid = get16(q + 4);
	rx->sport = get16(qudp);
	rx->dport = get16(qudp + 2);
	r = parse_hdr(qudp + 8, len - qhl - 8, &rx->hdr);
	if (r < 0)
		return r;
	rx->has_hdr = r == 1;
	return rx->kind;
}

/* A request or reply of kind from rx->from:sport to rx->to:dport: the
 * probe's ends; a reply answers the probe psrc:sport -> pdst:probe_port,
 * so its own ends are the probe's swapped. Returns kind. */
static int rx_probe_ends(struct probe_rx *rx, int kind, uint16_t sport, uint16_t dport)
{
	bool reply = kind == PROBE_RX_REPLY;

	rx->kind = kind;
	rx->psrc = reply ? rx->to : rx->from;
	rx->pdst = reply ? rx->from : rx->to;
	rx->sport = reply ? dport : sport;
	rx->dport = reply ? sport : dport;
	return kind;
}

int probe_parse(const uint8_t *pkt, size_t len, uint16_t probe_port, struct probe_rx *rx)
{
	const uint8_t *udp;
	size_t tot, ulen;
	uint16_t sport, dport;
	int hl, r;

	memset(rx, 0, sizeof(*rx));
	hl = ip_hlen(pkt, len, &tot);
	if (hl < 0)
		return hl;
	if (tot > len)
		return -PROBE_DROP_TRUNCATED;
	len = tot; /* ignore link-layer padding */
	memcpy(&rx->from, pkt + 12, 4);
	memcpy(&rx->to, pkt + 16, 4);
	rx->ttl = pkt[8];
	if (get16(pkt + 6) & 0x3fff)
		return -PROBE_DROP_OTHER; /* fragments: never a probe */
	if (pkt[9] == IPPROTO_ICMP)
		return parse_icmp(pkt + hl, len - hl, probe_port, rx);
	if (pkt[9] != IPPROTO_UDP)
		return -PROBE_DROP_OTHER;
	if (len < (size_t)hl + 8)
		return -PROBE_DROP_TRUNCATED;
	udp = pkt + hl;
	sport = get16(udp);
	dport = get16(udp + 2);
	ulen = get16(udp + 4);
	if (sport != probe_port && dport != probe_port)
		return -PROBE_DROP_OTHER;
	if (ulen < 8 || ulen > len - hl)
		return -PROBE_DROP_TRUNCATED;
	r = parse_hdr(udp + 8, ulen - 8, &rx->hdr);
	if (r < 0)
		return r;
	if (r == 0)
		return -PROBE_DROP_TRUNCATED;
	rx->has_hdr = true;
	rx->ipid = get16(pkt + 4);
	if (rx->hdr.kind == PROBE_KIND_REPLY) {
		if (sport != probe_port)
			return -PROBE_DROP_MALFORMED;
		return rx_probe_ends(rx, PROBE_RX_REPLY, sport, dport);
	}
	if (dport != probe_port)
		return -PROBE_DROP_MALFORMED;
	return rx_probe_ends(rx, PROBE_RX_REQUEST, sport, dport);
}

/* ---- outstanding probes ---------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void probe_track_init(struct probe_track *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->rng = seed;
	t->next_seq = (uint32_t)splitmix(&t->rng) & 0xfffff000u;
}

struct probe_out *probe_track_add(struct probe_track *t, struct probe_hdr *h, struct in_addr dst,
				  uint16_t sport, uint8_t ttl, uint8_t kind, uint16_t path,
				  uint32_t pair)
{
	uint32_t seq = t->next_seq++;
	struct probe_out *o = &t->slot[seq & (PROBE_TRACK_SLOTS - 1)];

	o->live = true;
	o->kind = kind;
	o->ttl = ttl;
	o->sport = sport;
	o->path = path;
	o->pair = pair;
	o->seq = seq;
	o->nonce = splitmix(&t->rng);
	o->dst = dst;
	o->t_sent_ns = ice_now_ns();
	h->seq = seq;
	h->nonce = o->nonce;
	h->kind = kind;
	h->ttl = ttl;
	h->sport = sport;
	h->path = path;
	t->sent++;
	return o;
}

struct probe_out *probe_track_match(struct probe_track *t, const struct probe_rx *rx,
				    struct in_addr local)
{
	struct probe_out *o;
	uint32_t idx = (rx->has_hdr ? rx->hdr.seq : rx->ipid) & (PROBE_TRACK_SLOTS - 1);

	if (rx->psrc.s_addr != local.s_addr) {
		t->drops[PROBE_DROP_UNEXPECTED]++; /* about a packet we did not send */
		return NULL;
	}
	o = &t->slot[idx];
	if (!o->live || (rx->has_hdr ? o->seq != rx->hdr.seq : (uint16_t)o->seq != rx->ipid)) {
		t->drops[PROBE_DROP_UNKNOWN]++;
		return NULL;
	}
	/* replies and port-unreachables come from the probed address only */
	if ((rx->kind == PROBE_RX_REPLY ||
	     (rx->kind == PROBE_RX_UNREACH && rx->icmp_code == ICMP_PORT_UNREACH)) &&
	    rx->from.s_addr != o->dst.s_addr) {
		t->drops[PROBE_DROP_UNEXPECTED]++;
		return NULL;
	}
	if (o->sport != rx->sport || o->dst.s_addr != rx->pdst.s_addr ||
	    (rx->has_hdr && o->nonce != rx->hdr.nonce)) {
		t->drops[PROBE_DROP_FORGED]++;
		return NULL;
	}
	t->matched++;
	return o;
}
