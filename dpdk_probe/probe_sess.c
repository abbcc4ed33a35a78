// SPDX-License-Identifier: Apache-2.0
/* The probe session: send with a rate limit, receive, parse, match,
 * answer (responder), and name hops. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"
#include "probe_internal.h"
#include "topo.h"

uint64_t probe_link_rate(const struct probe_cfg *cfg, const struct topo *t, struct in_addr local)
{
	const struct topo_port *p;

	if (cfg->link_rate != 0)
		return cfg->link_rate;
	if (t != NULL && (p = topo_port_by_addr(t, local)) != NULL)
		return t->links[p->link].rate_bps;
	return 100000000000ull;
}

int probe_sess_init(struct probe_sess *s, const struct probe_cfg *cfg,
		    const struct probe_io_ops *ops, struct in_addr local, const struct topo *t)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->local = local;
	s->topo = t;
	probe_track_init(&s->track, ice_now_ns() ^ ((uint64_t)getpid() << 32) ^ local.s_addr);
	s->rate_Bps = cfg->link_share * (double)probe_link_rate(cfg, t, local) / 8;
	s->tokens = (double)cfg->burst;
	s->tb_last_ns = s->t_init_ns = ice_now_ns();
	s->io = ops->open(cfg, local);
	if (s->io == NULL)
		return -errno;
	return 0;
}

void probe_sess_fini(struct probe_sess *s)
{
	if (s->io != NULL)
		s->io->ops->close(s->io);
	s->io = NULL;
}

/* Take bytes from the bucket, sleeping until they are there. */
static void sess_rate_wait(struct probe_sess *s, double bytes)
{
	for (;;) {
		uint64_t now = ice_now_ns();

		s->tokens += (double)(now - s->tb_last_ns) * 1e-9 * s->rate_Bps;
		if (s->tokens > (double)s->cfg->burst)
			s->tokens = (double)s->cfg->burst;
		s->tb_last_ns = now;
		if (s->tokens >= bytes)
			break;
		ice_sleep_ns((uint64_t)((bytes - s->tokens) / s->rate_Bps * 1e9) + 1000);
	}
	s->tokens -= bytes;
}

int probe_sess_send(struct probe_sess *s, struct in_addr dst, uint16_t sport, uint8_t ttl,
		    uint8_t kind, uint16_t path, uint32_t pair)
{
	struct probe_pkt pkt;
	struct probe_hdr h = {0};
	struct probe_out *o;
	int ret;

	sess_rate_wait(s, PROBE_WIRE_BYTES);
	o = probe_track_add(&s->track, &h, dst, sport, ttl, kind, path, pair);
	h.t1 = ice_wall_ns();
	pkt.len = (uint16_t)probe_build(pkt.data, s->local, dst, sport,
					(uint16_t)s->cfg->responder_port, ttl, &h);
	ret = s->io->ops->send(s->io, &pkt, 1);
	if (ret != 1) {
		o->live = false;
		return ret < 0 ? ret : -EIO;
	}
	s->sent[kind < 3 ? kind : 0]++;
	return 0;
}

/* Answer a probe addressed to us. */
static void sess_answer(struct probe_sess *s, const struct probe_rx *rx, uint64_t rx_ts)
{
	struct probe_pkt pkt;
	struct probe_hdr h = rx->hdr;
	uint8_t *udp;

	h.kind = PROBE_KIND_REPLY;
	h.flags = rx->hdr.kind; /* what was asked */
	h.t2 = rx_ts;
	h.t3 = ice_wall_ns();
	pkt.len = (uint16_t)probe_build(pkt.data, s->local, rx->from, rx->dport, rx->sport, 64, &h);
	udp = pkt.data + 20;
	(void)udp;
	if (s->io->ops->send(s->io, &pkt, 1) == 1)
		s->answered++;
}

int probe_sess_poll(struct probe_sess *s, uint64_t timeout_ns, probe_rx_fn fn, void *arg)
{
	struct probe_rx rx;
	int n = s->io->ops->recv(s->io, s->rx, 64, timeout_ns);

	for (int i = 0; i < n; i++) {
		int k = probe_parse(s->rx[i].data, s->rx[i].len, (uint16_t)s->cfg->responder_port,
				    &rx);
		struct probe_out *o;

		if (k < 0) {
			probe_track_drop(&s->track, -k);
			continue;
		}
		rx.ts_ns = s->rx[i].ts_ns;
		if (k == PROBE_RX_REQUEST) {
			if (rx.psrc.s_addr == s->local.s_addr)
				continue; /* our own probe, seen on the way out (af_packet) */
			if (!s->responder || rx.to.s_addr != s->local.s_addr) {
				probe_track_drop(&s->track, PROBE_DROP_UNEXPECTED);
				continue;
			}
			sess_answer(s, &rx, rx.ts_ns);
			continue;
		}
		if (k == PROBE_RX_REPLY && rx.to.s_addr != s->local.s_addr) {
			probe_track_drop(&s->track, PROBE_DROP_UNEXPECTED);
			continue;
		}
		o = probe_track_match(&s->track, &rx, s->local);
		if (o != NULL && fn != NULL)
			fn(s, &rx, o, arg);
		else if (o != NULL)
			o->live = false;
	}
	return n;
}

const char *probe_hop_name(const struct probe_sess *s, struct in_addr a, char *buf, size_t len)
{
	const struct topo *t = s->topo;

	if (t != NULL) {
		for (uint32_t i = 0; i < t->nports; i++)
			if (t->ports[i].addr.s_addr == a.s_addr) {
				snprintf(buf, len, "%s", t->nodes[t->ports[i].node].name);
				return buf;
			}
		for (uint32_t i = 0; i < t->nnodes; i++)
			if (t->nodes[i].loopback.s_addr == a.s_addr) {
				snprintf(buf, len, "%s", t->nodes[i].name);
				return buf;
			}
	}
	inet_ntop(AF_INET, &a, buf, (socklen_t)len);
	return buf;
}
