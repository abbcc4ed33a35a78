// SPDX-License-Identifier: Apache-2.0
/* agent_sample: one interval's picture — the QP join and the rates. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_internal.h"
#include "ice_host.h"

void agent_sample_init(struct agent_sample *s)
{
	memset(s, 0, sizeof(*s));
}

void agent_sample_fini(struct agent_sample *s)
{
	free(s->qp);
	free(s->ev);
	memset(s, 0, sizeof(*s));
}

void agent_sample_clear(struct agent_sample *s)
{
	struct agent_qp *qp = s->qp;
	struct ice_event *ev = s->ev;
	size_t cap = s->cap, evcap = s->evcap;

	memset(s, 0, sizeof(*s));
	s->qp = qp;
	s->cap = cap;
	s->ev = ev;
	s->evcap = evcap;
}

int agent_sample_add_event(struct agent_sample *s, const struct ice_event *ev, size_t max)
{
	if (s->nev == s->evcap) {
		size_t n = s->evcap ? s->evcap * 2 : 64;
		struct ice_event *p;

		if (s->nev >= max)
			return -ENOBUFS;
		if (n > max)
			n = max;
		p = realloc(s->ev, n * sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		s->ev = p;
		s->evcap = n;
	}
	s->ev[s->nev++] = *ev;
	return 0;
}

static struct agent_qp *sample_push(struct agent_sample *s)
{
	if (s->nqp == s->cap) {
		size_t n = s->cap ? s->cap * 2 : 64;
		struct agent_qp *p = realloc(s->qp, n * sizeof(*p));

		if (p == NULL)
			return NULL;
		s->qp = p;
		s->cap = n;
	}
	memset(&s->qp[s->nqp], 0, sizeof(s->qp[0]));
	return &s->qp[s->nqp++];
}

static int u32_cmp(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

int agent_qp_id_cmp(const struct agent_qp_id *a, const struct agent_qp_id *b)
{
	int r;

	if ((r = u32_cmp(a->kind, b->kind)) != 0)
		return r;
	if ((r = u32_cmp(a->local_ip, b->local_ip)) != 0)
		return r;
	if ((r = u32_cmp(a->remote_ip, b->remote_ip)) != 0)
		return r;
	return u32_cmp(a->qpn, b->qpn);
}

static int qp_cmp(const void *a, const void *b)
{
	return agent_qp_id_cmp(&((const struct agent_qp *)a)->id,
			       &((const struct agent_qp *)b)->id);
}

/* Lookup index over the QP table: by (local, remote, qpn) and by rqpn. */
struct join_ent {
	uint32_t local_ip, remote_ip, n;
	uint32_t idx; /* into s->qp */
};

static int ent_cmp(const void *a, const void *b)
{
	const struct join_ent *x = a, *y = b;
	int r;

	if ((r = u32_cmp(x->local_ip, y->local_ip)) != 0)
		return r;
	if ((r = u32_cmp(x->remote_ip, y->remote_ip)) != 0)
		return r;
	return u32_cmp(x->n, y->n);
}

/* by (local, qpn), then table order (idx) */
static int ord_cmp(const void *a, const void *b)
{
	const struct join_ent *x = a, *y = b;
	int r;

	if ((r = u32_cmp(x->local_ip, y->local_ip)) != 0)
		return r;
	if ((r = u32_cmp(x->n, y->n)) != 0)
		return r;
	return u32_cmp(x->idx, y->idx);
}

static void add_flow(struct agent_ctr *c, const struct agent_flow *f)
{
	if (f->dir == ICE_DIR_EGRESS) {
		c->tx_bytes += f->bytes;
		c->tx_pkts += f->pkts;
		c->cnp_tx += f->cnp;
		c->nak_tx += f->naks;
		c->retx += f->retx;
	} else {
		c->rx_bytes += f->bytes;
		c->rx_pkts += f->pkts;
		c->ce += f->ce;
		c->cnp_rx += f->cnp;
		c->nak_rx += f->naks;
	}
}

int agent_join(struct agent_sample *s, const struct agent_qpinfo *qps, size_t nqps,
	       const struct agent_flow *flows, size_t nflows)
{
	struct join_ent *by_qpn = NULL, *by_rqpn = NULL, *ord;
	size_t base = s->nqp, n = 0;
	int ret = -ENOMEM;

	/* one record per QP of the table; a QP both in a slot and announced by an
	 * event keeps the slot (it has counters). The table's entries sorted
	 * by (local address, QPN), table order kept among equals: the first
	 * of a QP's entries makes its record, the others merge into it. */
	ord = malloc((nqps ? nqps : 1) * sizeof(*ord));
	if (ord == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nqps; i++)
		ord[i] = (struct join_ent){qps[i].local_ip, 0, qps[i].qpn, (uint32_t)i};
	for (size_t i = 1; i < nqps; i++)
		if (ord_cmp(&ord[i - 1], &ord[i]) > 0) { /* a NIC's QPs come in order */
			qsort(ord, nqps, sizeof(*ord), ord_cmp);
			break;
		}
	for (size_t k = 0; k < nqps; k++) {
		const struct agent_qpinfo *qi = &qps[ord[k].idx];
		struct agent_qp *q = NULL;

		if (k > 0 && ord[k - 1].local_ip == qi->local_ip && ord[k - 1].n == qi->qpn)
			q = &s->qp[s->nqp - 1];
		if (q != NULL) {
			if ((qi->src & AGENT_SRC_CTRL) && !(q->src & AGENT_SRC_CTRL)) {
				q->tp = qi->tp;
				q->c = qi->tp;
				q->pid = qi->pid;
				q->rate_mbps = qi->rate_mbps;
			}
			/* a QP in the NIC: the device's counters are the truth */
			if (qi->src & AGENT_SRC_NIC) {
				q->c = qi->tp;
				if (q->pid == 0)
					q->pid = qi->pid;
				if (q->rqpn == 0)
					q->rqpn = qi->rqpn;
			}
			q->src |= qi->src;
			continue;
		}
		q = sample_push(s);
		if (q == NULL) {
			free(ord);
			return -ENOMEM;
		}
		q->id = (struct agent_qp_id){AGENT_QP, qi->local_ip, qi->remote_ip, qi->qpn};
		q->rqpn = qi->rqpn;
		q->sport = qi->sport;
		q->src = qi->src;
		q->pid = qi->pid;
		q->rate_mbps = qi->rate_mbps;
		if (qi->src & AGENT_SRC_CTRL)
			q->tp = qi->tp;
		if (qi->src & (AGENT_SRC_CTRL | AGENT_SRC_NIC))
			q->c = qi->tp;
	}
	free(ord);
	n = s->nqp - base;
	if (n > 0 && nflows > 0) {
		by_qpn = calloc(n, sizeof(*by_qpn));
		by_rqpn = calloc(n, sizeof(*by_rqpn));
		if (by_qpn == NULL || by_rqpn == NULL)
			goto out;
		for (size_t i = 0; i < n; i++) {
			const struct agent_qp *q = &s->qp[base + i];

			by_qpn[i] = (struct join_ent){q->id.local_ip, q->id.remote_ip, q->id.qpn,
						      (uint32_t)(base + i)};
			by_rqpn[i] = (struct join_ent){q->id.local_ip, q->id.remote_ip, q->rqpn,
						       (uint32_t)(base + i)};
		}
		qsort(by_qpn, n, sizeof(*by_qpn), ent_cmp);
		qsort(by_rqpn, n, sizeof(*by_rqpn), ent_cmp);
	}
	for (size_t i = 0; i < nflows; i++) {
		const struct agent_flow *f = &flows[i];
		struct join_ent key = {f->local_ip, f->remote_ip, f->qpn, 0};
		struct join_ent *hit = NULL;
		struct agent_qp *q;

		if (n > 0)
			hit = bsearch(&key, f->dir == ICE_DIR_EGRESS ? by_rqpn : by_qpn, n,
				      sizeof(key), ent_cmp);
		if (hit != NULL) {
			q = &s->qp[hit->idx];
			if (!(q->src & AGENT_SRC_BPF))
				memset(&q->c, 0, sizeof(q->c)); /* BPF replaces transport's */
			q->src |= AGENT_SRC_BPF;
			if (f->dir == ICE_DIR_EGRESS && f->sport != 0)
				q->sport = f->sport;
			add_flow(&q->c, f);
			continue;
		}
		q = sample_push(s);
		if (q == NULL)
			goto out;
		q->id = (struct agent_qp_id){f->dir == ICE_DIR_EGRESS ? AGENT_FLOW_TX
								      : AGENT_FLOW_RX,
					     f->local_ip, f->remote_ip, f->qpn};
		q->src = AGENT_SRC_BPF;
		q->sport = f->sport;
		add_flow(&q->c, f);
	}
	for (size_t i = 1; i < s->nqp; i++)
		if (qp_cmp(&s->qp[i - 1], &s->qp[i]) > 0) {
			qsort(s->qp, s->nqp, sizeof(s->qp[0]), qp_cmp);
			break;
		}
	ret = 0;
out:
	free(by_qpn);
	free(by_rqpn);
	return ret;
}

static double delta(uint64_t cur, uint64_t prev)
{
	/* a counter that went down belongs to a new owner: count from 0 */
	return (double)(cur >= prev ? cur - prev : cur);
}

static void rate_of(struct agent_rate *r, const struct agent_ctr *cur, const struct agent_ctr *prev,
		    double dt)
{
	const uint64_t *c = (const uint64_t *)cur;
	const uint64_t *p = (const uint64_t *)prev;
	double *o = (double *)r;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		o[i] = delta(c[i], p != NULL ? p[i] : 0) / dt;
}

static void ctr_add(struct agent_ctr *sum, const struct agent_ctr *c)
{
	uint64_t *o = (uint64_t *)sum;
	const uint64_t *x = (const uint64_t *)c;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		o[i] += x[i];
}

static void rate_add(struct agent_rate *sum, const struct agent_rate *r)
{
	double *o = (double *)sum;
	const double *x = (const double *)r;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		o[i] += x[i];
}

void agent_rates(struct agent_sample *cur, const struct agent_sample *prev)
{
	size_t j = 0;

	memset(&cur->nic, 0, sizeof(cur->nic));
	memset(&cur->nic_r, 0, sizeof(cur->nic_r));
	cur->nic_qps = cur->nic_flows = 0;
	cur->dt = 0;
	if (prev != NULL && cur->mono_ns > prev->mono_ns)
		cur->dt = (double)(cur->mono_ns - prev->mono_ns) / 1e9;
	cur->nic_has_rate = cur->dt > 0;
	for (size_t i = 0; i < cur->nqp; i++) {
		struct agent_qp *q = &cur->qp[i];
		const struct agent_ctr *pc = NULL;
		int r = 1;

		while (cur->dt > 0 && j < prev->nqp &&
		       (r = agent_qp_id_cmp(&prev->qp[j].id, &q->id)) < 0)
			j++;
		if (cur->dt > 0 && r == 0)
			pc = &prev->qp[j].c;
		q->has_rate = cur->dt > 0;
		if (q->has_rate)
			rate_of(&q->r, &q->c, pc, cur->dt);
		else
			memset(&q->r, 0, sizeof(q->r));
		ctr_add(&cur->nic, &q->c);
		rate_add(&cur->nic_r, &q->r);
		if (q->id.kind == AGENT_QP)
			cur->nic_qps++;
		else
			cur->nic_flows++;
	}
}

void agent_dev_rates(struct agent_sample *cur, const struct agent_sample *prev)
{
	cur->dev_has_rate = cur->has_dev && cur->dt > 0 && prev != NULL && prev->has_dev;
	if (cur->dev_has_rate)
		rate_of(&cur->dev_r, &cur->dev, &prev->dev, cur->dt);
	else
		memset(&cur->dev_r, 0, sizeof(cur->dev_r));
}

char *agent_ip4_text(char buf[INET_ADDRSTRLEN], uint32_t be)
{
	const uint8_t *o = (const uint8_t *)&be;
	char *p = buf;

	for (int i = 0; i < 4; i++) {
		if (o[i] >= 100)
			*p++ = (char)('0' + o[i] / 100);
		if (o[i] >= 10)
			*p++ = (char)('0' + o[i] / 10 % 10);
		*p++ = (char)('0' + o[i] % 10);
		*p++ = i < 3 ? '.' : '\0';
	}
	return buf;
}

/* without printf: the records and the QP index name ~1,000 QPs a second */
const char *agent_qp_name(const struct agent_qp *q, char *buf, size_t len)
{
	char t[64], ip[INET_ADDRSTRLEN], d[24], *p;
	size_t n;

	p = stpcpy(t, agent_ip4_text(ip, q->id.local_ip));
	if (q->id.kind == AGENT_QP) {
		*p++ = ':';
	} else {
		*p++ = '>';
		p = stpcpy(p, agent_ip4_text(ip, q->id.remote_ip));
		p = stpcpy(p, q->id.kind == AGENT_FLOW_TX ? ":tx:" : ":rx:");
	}
	p = stpcpy(p, agent_u64_text(d, q->id.qpn));
	if (len == 0)
		return buf;
	n = (size_t)(p - t) < len ? (size_t)(p - t) : len - 1;
	memcpy(buf, t, n);
	buf[n] = '\0';
	return buf;
}
