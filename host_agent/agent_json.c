// SPDX-License-Identifier: Apache-2.0
/* agent_json: samples, QPs and events as JSON (jansson). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agent_internal.h"

static const char *const ctr_names[AGENT_NCTR] = {
	"tx_bytes", "rx_bytes", "tx_pkts", "rx_pkts", "ce",
	"cnp_tx",   "cnp_rx",	"nak_tx",  "nak_rx",  "retx",
};

static json_t *ip_json(uint32_t be)
{
	char b[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &be, b, sizeof(b));
	return json_string(b);
}

static void put_ctr(json_t *o, const struct agent_ctr *c)
{
	const uint64_t *v = (const uint64_t *)c;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		json_object_set_new(o, ctr_names[i], json_integer((json_int_t)v[i]));
}

static json_t *rate_json(const struct agent_rate *r)
{
	const double *v = (const double *)r;
	json_t *o = json_object();

	for (size_t i = 0; i < AGENT_NCTR; i++)
		json_object_set_new(o, ctr_names[i], json_real(v[i]));
	return o;
}

static json_t *src_json(unsigned src)
{
	json_t *a = json_array();

	if (src & AGENT_SRC_CTRL)
		json_array_append_new(a, json_string("ctrl"));
	if (src & AGENT_SRC_BPF)
		json_array_append_new(a, json_string("bpf"));
	if (src & AGENT_SRC_EV)
		json_array_append_new(a, json_string("event"));
	if (src & AGENT_SRC_NIC)
		json_array_append_new(a, json_string("nic"));
	return a;
}

json_t *agent_qp_json(const struct agent_qp *q, const struct agent_sample *s)
{
	static const char *const kinds[] = {"qp", "flow_tx", "flow_rx"};
	json_t *o = json_object();
	char name[64];

	json_object_set_new(o, "id", json_string(agent_qp_name(q, name, sizeof(name))));
	json_object_set_new(o, "seq", json_integer((json_int_t)s->seq));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)s->ts_ms));
	json_object_set_new(o, "kind", json_string(kinds[q->id.kind % 3]));
	json_object_set_new(o, "local", ip_json(q->id.local_ip));
	json_object_set_new(o, "remote", ip_json(q->id.remote_ip));
	json_object_set_new(o, "qpn", json_integer(q->id.qpn));
	if (q->id.kind == AGENT_QP)
		json_object_set_new(o, "rqpn", json_integer(q->rqpn));
	json_object_set_new(o, "sport", json_integer(q->sport));
	json_object_set_new(o, "src", src_json(q->src));
	if (q->pid != 0)
		json_object_set_new(o, "pid", json_integer(q->pid));
	if (q->src & AGENT_SRC_CTRL) {
		json_t *tp = json_object();

		put_ctr(tp, &q->tp);
		json_object_set_new(tp, "rate_mbps", json_integer(q->rate_mbps));
		json_object_set_new(o, "tp", tp);
	}
	put_ctr(o, &q->c);
	json_object_set_new(o, "dt", json_real(s->dt));
	json_object_set_new(o, "rate", q->has_rate ? rate_json(&q->r) : json_null());
	return o;
}

/* {"lossless":[3],"storm":[],"prio":{"3":{rx_pause, tx_pause, rx_paused,
 * tx_paused}}}: priorities that are lossless or pause at all */
static json_t *pfc_json(const struct agent_pfc *f)
{
	json_t *o = json_object(), *ll = json_array(), *st = json_array(), *pr = json_object();

	for (int p = 0; p < 8; p++) {
		char k[4];

		if (f->known && (f->lossless & (1u << p)))
			json_array_append_new(ll, json_integer(p));
		if (f->storm & (1u << p))
			json_array_append_new(st, json_integer(p));
		if (!(f->seen & (1u << p)) || !f->has_rate ||
		    (!(f->known && (f->lossless & (1u << p))) && f->rx_pause[p] == 0 &&
		     f->tx_pause[p] == 0))
			continue;
		snprintf(k, sizeof(k), "%d", p);
		json_object_set_new(pr, k,
				    json_pack("{s:f, s:f, s:f, s:f}", "rx_pause", f->rx_pause[p],
					      "tx_pause", f->tx_pause[p], "rx_paused",
					      f->rx_paused[p], "tx_paused", f->tx_paused[p]));
	}
	json_object_set_new(o, "lossless", f->known ? ll : (json_decref(ll), json_null()));
	json_object_set_new(o, "storm", st);
	json_object_set_new(o, "prio", pr);
	return o;
}

json_t *agent_nic_json(const struct agent_sample *s, const struct agent_cfg *cfg)
{
	json_t *o = json_object();

	json_object_set_new(o, "nic", json_string(cfg->nic));
	json_object_set_new(o, "addr", json_string(cfg->addr));
	json_object_set_new(o, "seq", json_integer((json_int_t)s->seq));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)s->ts_ms));
	json_object_set_new(o, "qps", json_integer((json_int_t)s->nic_qps));
	json_object_set_new(o, "flows", json_integer((json_int_t)s->nic_flows));
	json_object_set_new(o, "events", json_integer((json_int_t)s->nev));
	put_ctr(o, &s->nic);
	json_object_set_new(o, "dt", json_real(s->dt));
	json_object_set_new(o, "rate", s->nic_has_rate ? rate_json(&s->nic_r) : json_null());
	if (s->has_dev) {
		/* the RDMA device's own counters (NIC backend), beside the
		 * QP sum above; its raw counters are in the :dev hash */
		json_t *d = json_object();

		json_object_set_new(d, "source", json_string(cfg->backend));
		put_ctr(d, &s->dev);
		json_object_set_new(d, "rate",
				    s->dev_has_rate ? rate_json(&s->dev_r) : json_null());
		json_object_set_new(o, "dev", d);
		json_object_set_new(o, "pfc", pfc_json(&s->pfc));
	}
	return o;
}

json_t *agent_event_json(const struct ice_event *ev)
{
	json_t *o = json_object();
	char lib[sizeof(ev->lib) + 1], hex[20];

	snprintf(lib, sizeof(lib), "%.*s", (int)sizeof(ev->lib), ev->lib);
	snprintf(hex, sizeof(hex), "%016" PRIx64, ev->comm_id);
	json_object_set_new(o, "kind", json_string(agent_ev_kind_name(ev->kind)));
	json_object_set_new(o, "lib", json_string(lib));
	json_object_set_new(o, "pid", json_integer(ev->pid));
	json_object_set_new(o, "seq", json_integer((json_int_t)ev->seq));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)ev->ts_ns));
	if (ev->kind == ICE_EV_QP) {
		json_object_set_new(o, "qpn", json_integer(ev->qpn));
		json_object_set_new(o, "rqpn", json_integer(ev->rqpn));
		json_object_set_new(o, "local", ip_json(ev->local_ip));
		json_object_set_new(o, "remote", ip_json(ev->remote_ip));
		json_object_set_new(o, "sport", json_integer(ev->sport));
		return o;
	}
	json_object_set_new(o, "comm", json_string(hex));
	if (ev->job[0] != '\0') {
		char job[sizeof(ev->job) + 1];
		size_t n = strnlen(ev->job, sizeof(ev->job));

		memcpy(job, ev->job, n);
		job[n] = '\0';
		json_object_set_new(o, "job", json_stringn(job, n));
	}
	json_object_set_new(o, "rank", json_integer(ev->rank));
	json_object_set_new(o, "nranks", json_integer(ev->nranks));
	if (ev->kind == ICE_EV_COLL_START || ev->kind == ICE_EV_COLL_END) {
		json_object_set_new(o, "op", json_string(agent_ev_op_name(ev->op)));
		json_object_set_new(o, "count", json_integer((json_int_t)ev->count));
		json_object_set_new(o, "bytes", json_integer((json_int_t)ev->bytes));
		json_object_set_new(o, "dtype", json_integer(ev->dtype));
		json_object_set_new(o, "redop", json_integer(ev->redop));
		json_object_set_new(o, "root", json_integer(ev->root));
		json_object_set_new(o, "peer", json_integer(ev->peer));
		json_object_set_new(o, "prev", json_integer(ev->prev));
		json_object_set_new(o, "next", json_integer(ev->next));
	}
	return o;
}

char *agent_sample_json(const struct agent_sample *s, const struct agent_cfg *cfg, int flags)
{
	json_t *o = json_object(), *qps = json_array(), *evs = json_array();
	char *txt;

	json_object_set_new(o, "schema", json_integer(AGENT_SCHEMA_VERSION));
	json_object_set_new(o, "host", json_string(cfg->host));
	json_object_set_new(o, "fabric", json_string(cfg->fabric));
	json_object_set_new(o, "nic", agent_nic_json(s, cfg));
	for (size_t i = 0; i < s->nqp; i++)
		json_array_append_new(qps, agent_qp_json(&s->qp[i], s));
	for (size_t i = 0; i < s->nev; i++)
		json_array_append_new(evs, agent_event_json(&s->ev[i]));
	json_object_set_new(o, "qps", qps);
	json_object_set_new(o, "events", evs);
	txt = json_dumps(o, (size_t)flags | JSON_REAL_PRECISION(10));
	json_decref(o);
	return txt;
}
