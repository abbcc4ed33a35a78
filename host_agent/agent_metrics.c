// SPDX-License-Identifier: Apache-2.0
/*
 * agent_metrics: GET /metrics in Prometheus text format (0.0.4), served by
 * common/ice_http.c inside the agent's poll loop.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "ice_http.h"

/* ---- the text */

struct text {
	FILE *f;
	const char *labels; /* host="..",nic=".." */
};

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *const ctr_names[AGENT_NCTR] = {
	"tx_bytes", "rx_bytes",	    "tx_packets", "rx_packets",	  "ce_marked",
	"cnp_sent", "cnp_received", "nak_sent",	  "nak_received", "retransmitted",
};

/* busiest first: bytes per second both ways, then totals, then index order */
static int by_bytes(const void *a, const void *b, void *arg)
{
	const struct agent_sample *s = arg;
	const struct agent_qp *x = &s->qp[*(const uint32_t *)a];
	const struct agent_qp *y = &s->qp[*(const uint32_t *)b];
	double rx = x->r.tx_bytes + x->r.rx_bytes, ry = y->r.tx_bytes + y->r.rx_bytes;
	uint64_t cx = x->c.tx_bytes + x->c.rx_bytes, cy = y->c.tx_bytes + y->c.rx_bytes;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The QPs that get series: the busiest cfg->metrics_qps, so a scrape's
 * label set stays bounded however many QPs a host has (the rest are in the
 * NIC totals and counted by ice_qp_series_omitted). */
static uint32_t *qp_pick(const struct agent_sample *s, uint32_t max, size_t *n)
{
	uint32_t *idx = malloc((s->nqp ? s->nqp : 1) * sizeof(*idx));

	*n = 0;
	if (idx == NULL)
		return NULL;
	for (size_t i = 0; i < s->nqp; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, s->nqp, sizeof(*idx), by_bytes, (void *)s);
	*n = s->nqp < max ? s->nqp : max;
	return idx;
}

char *agent_metrics_text(const struct agent_sample *s, const struct agent_cfg *cfg,
			 const struct agent_self *self)
{
	char *buf = NULL, lab[256], name[96];
	size_t len = 0, nq = 0;
	FILE *f = open_memstream(&buf, &len);
	uint32_t *qi;

	if (f == NULL)
		return NULL;
	qi = qp_pick(s, cfg->metrics_qps, &nq);
	if (qi == NULL) {
		fclose(f);
		free(buf);
		return NULL;
	}
	snprintf(lab, sizeof(lab), "host=\"%s\",nic=\"%s\"", cfg->host, cfg->nic);

	for (size_t k = 0; k < AGENT_NCTR; k++) {
		const uint64_t *c = (const uint64_t *)&s->nic;
		const double *r = (const double *)&s->nic_r;

		snprintf(name, sizeof(name), "ice_nic_%s_total", ctr_names[k]);
		metric_head(f, name, "counter", "NIC total over its QPs and flows");
		fprintf(f, "%s{%s} %" PRIu64 "\n", name, lab, c[k]);
		snprintf(name, sizeof(name), "ice_nic_%s_per_second", ctr_names[k]);
		metric_head(f, name, "gauge", "NIC rate over the last interval");
		fprintf(f, "%s{%s} %.3f\n", name, lab, r[k]);
	}
	metric_head(f, "ice_nic_qps", "gauge", "QPs known on the NIC");
	fprintf(f, "ice_nic_qps{%s} %zu\n", lab, s->nic_qps);
	metric_head(f, "ice_nic_unjoined_flows", "gauge", "BPF flows without a known QP");
	fprintf(f, "ice_nic_unjoined_flows{%s} %zu\n", lab, s->nic_flows);

	for (size_t k = 0; k < AGENT_NCTR; k++) {
		snprintf(name, sizeof(name), "ice_qp_%s_total", ctr_names[k]);
		metric_head(f, name, "counter", "per-QP total (the busiest metrics_qps QPs)");
		for (size_t j = 0; j < nq; j++) {
			const struct agent_qp *q = &s->qp[qi[j]];
			char qn[64];

			fprintf(f, "%s{%s,qp=\"%s\"} %" PRIu64 "\n", name, lab,
				agent_qp_name(q, qn, sizeof(qn)), ((const uint64_t *)&q->c)[k]);
		}
		snprintf(name, sizeof(name), "ice_qp_%s_per_second", ctr_names[k]);
		metric_head(f, name, "gauge", "per-QP rate over the last interval (as above)");
		for (size_t j = 0; j < nq; j++) {
			const struct agent_qp *q = &s->qp[qi[j]];
			char qn[64];

			fprintf(f, "%s{%s,qp=\"%s\"} %.3f\n", name, lab,
				agent_qp_name(q, qn, sizeof(qn)), ((const double *)&q->r)[k]);
		}
	}
	metric_head(f, "ice_qp_series_omitted", "gauge",
		    "QPs without per-QP series (beyond metrics_qps; in the NIC totals)");
	fprintf(f, "ice_qp_series_omitted{%s} %zu\n", lab, s->nqp - nq);
	free(qi);

	metric_head(f, "ice_agent_cpu_seconds_total", "counter", "agent CPU time, user + system");
	fprintf(f, "ice_agent_cpu_seconds_total{%s} %.6f\n", lab, self->cpu_s);
	metric_head(f, "ice_agent_cpu_percent", "gauge",
		    "agent CPU in the last interval, % of a core");
	fprintf(f, "ice_agent_cpu_percent{%s} %.4f\n", lab, self->cpu_pct);
	metric_head(f, "ice_agent_redis_up", "gauge", "1 when connected to Redis");
	fprintf(f, "ice_agent_redis_up{%s} %d\n", lab, self->redis_up ? 1 : 0);
	metric_head(f, "ice_agent_queue_depth", "gauge", "intervals waiting for Redis");
	fprintf(f, "ice_agent_queue_depth{%s} %zu\n", lab, self->queue_depth);
	metric_head(f, "ice_agent_samples_dropped_total", "counter",
		    "intervals dropped because the queue was full");
	fprintf(f, "ice_agent_samples_dropped_total{%s} %" PRIu64 "\n", lab, self->dropped);
	metric_head(f, "ice_agent_samples_total", "counter", "intervals sampled");
	fprintf(f, "ice_agent_samples_total{%s} %" PRIu64 "\n", lab, self->samples);
	metric_head(f, "ice_agent_events_total", "counter", "collective events accepted");
	fprintf(f, "ice_agent_events_total{%s} %" PRIu64 "\n", lab, self->ev_ok);
	metric_head(f, "ice_agent_events_malformed_total", "counter",
		    "datagrams dropped: wrong size, magic, version or kind");
	fprintf(f, "ice_agent_events_malformed_total{%s} %" PRIu64 "\n", lab, self->ev_bad);
	metric_head(f, "ice_agent_events_overflow_total", "counter",
		    "events dropped: too many in one interval");
	fprintf(f, "ice_agent_events_overflow_total{%s} %" PRIu64 "\n", lab, self->ev_over);
	metric_head(f, "ice_agent_redis_errors_total", "counter", "error replies from Redis");
	fprintf(f, "ice_agent_redis_errors_total{%s} %" PRIu64 "\n", lab, self->redis_err);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct metrics_ctx {
	const struct agent_sample *s;
	const struct agent_cfg *cfg;
	const struct agent_self *self;
};

static char *metrics_body(void *ctx, const char *path, const char **ctype)
{
	const struct metrics_ctx *c = ctx;

	if (strcmp(path, "/metrics") != 0)
		return NULL;
	*ctype = "text/plain; version=0.0.4";
	return agent_metrics_text(c->s, c->cfg, c->self);
}

void agent_metrics_io(struct ice_http *m, const struct agent_sample *s, const struct agent_cfg *cfg,
		      const struct agent_self *self)
{
	struct metrics_ctx c = {s, cfg, self};

	ice_http_io(m, metrics_body, &c);
}
