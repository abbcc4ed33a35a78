// SPDX-License-Identifier: Apache-2.0
/*
 * agent_metrics: GET /metrics in Prometheus text format (0.0.4), served by
 * a tiny HTTP/1.0 server inside the agent's poll loop: non-blocking, one
 * client at a time (others wait in the listen backlog), closed after the
 * response, dropped when it stalls.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ice_time.h"

#define REQ_MAX	      4096
#define CLIENT_MAX_NS (2 * ICE_NSEC_PER_SEC)

struct agent_metrics {
	int lfd, cfd;
	char req[REQ_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	uint64_t since_ns;
};

struct agent_metrics *agent_metrics_new(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct agent_metrics *m = calloc(1, sizeof(*m));
	int one = 1, err;

	if (m == NULL)
		return NULL;
	m->cfd = -1;
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto err_free;
	setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(m->lfd, 8) < 0)
		goto err_close;
	return m;
err_close:
	err = errno;
	close(m->lfd);
	errno = err;
err_free:
	err = errno;
	free(m);
	errno = err;
	return NULL;
}

static void client_close(struct agent_metrics *m)
{
	if (m->cfd >= 0)
		close(m->cfd);
	m->cfd = -1;
	free(m->resp);
	m->resp = NULL;
	m->req_len = m->resp_len = m->resp_off = 0;
}

void agent_metrics_free(struct agent_metrics *m)
{
	if (m == NULL)
		return;
	client_close(m);
	close(m->lfd);
	free(m);
}

int agent_metrics_fds(struct agent_metrics *m, struct pollfd *pfd, int max)
{
	if (m == NULL || max < 1)
		return 0;
	if (m->cfd < 0) {
		pfd[0] = (struct pollfd){.fd = m->lfd, .events = POLLIN};
		return 1;
	}
	pfd[0] = (struct pollfd){.fd = m->cfd, .events = m->resp != NULL ? POLLOUT : POLLIN};
	return 1;
}

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

char *agent_metrics_text(const struct agent_sample *s, const struct agent_cfg *cfg,
			 const struct agent_self *self)
{
	char *buf = NULL, lab[256], name[96];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
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
		metric_head(f, name, "counter", "per-QP total");
		for (size_t i = 0; i < s->nqp; i++) {
			char qn[64];

			fprintf(f, "%s{%s,qp=\"%s\"} %" PRIu64 "\n", name, lab,
				agent_qp_name(&s->qp[i], qn, sizeof(qn)),
				((const uint64_t *)&s->qp[i].c)[k]);
		}
		snprintf(name, sizeof(name), "ice_qp_%s_per_second", ctr_names[k]);
		metric_head(f, name, "gauge", "per-QP rate over the last interval");
		for (size_t i = 0; i < s->nqp; i++) {
			char qn[64];

			fprintf(f, "%s{%s,qp=\"%s\"} %.3f\n", name, lab,
				agent_qp_name(&s->qp[i], qn, sizeof(qn)),
				((const double *)&s->qp[i].r)[k]);
		}
	}

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

static void respond(struct agent_metrics *m, const struct agent_sample *s,
		    const struct agent_cfg *cfg, const struct agent_self *self)
{
	char *body = NULL, *out = NULL;
	const char *status = "404 Not Found", *ctype = "text/plain";
	size_t blen;
	FILE *f;
	size_t olen = 0;

	if (strncmp(m->req, "GET /metrics ", 13) == 0 ||
	    strncmp(m->req, "GET /metrics?", 13) == 0) {
		body = agent_metrics_text(s, cfg, self);
		status = body != NULL ? "200 OK" : "500 Internal Server Error";
		ctype = "text/plain; version=0.0.4";
	}
	if (body == NULL)
		body = strdup("try /metrics\n");
	blen = body != NULL ? strlen(body) : 0;
	f = open_memstream(&out, &olen);
	if (f != NULL) {
		fprintf(f,
			"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Connection: close\r\n\r\n%s",
			status, ctype, blen, body != NULL ? body : "");
		fclose(f);
	}
	free(body);
	if (out == NULL) {
		client_close(m);
		return;
	}
	m->resp = out;
	m->resp_len = olen;
	m->resp_off = 0;
}

void agent_metrics_io(struct agent_metrics *m, const struct agent_sample *s,
		      const struct agent_cfg *cfg, const struct agent_self *self)
{
	ssize_t n;

	if (m == NULL)
		return;
	if (m->cfd < 0) {
		m->cfd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (m->cfd < 0)
			return;
		m->since_ns = ice_now_ns();
	}
	if (ice_now_ns() - m->since_ns > CLIENT_MAX_NS) {
		client_close(m);
		return;
	}
	if (m->resp == NULL) {
		n = recv(m->cfd, m->req + m->req_len, sizeof(m->req) - 1 - m->req_len, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(m);
			return;
		}
		if (n > 0)
			m->req_len += (size_t)n;
		m->req[m->req_len] = '\0';
		if (strstr(m->req, "\r\n\r\n") == NULL && strstr(m->req, "\n\n") == NULL) {
			if (m->req_len == sizeof(m->req) - 1)
				client_close(m);
			return;
		}
		respond(m, s, cfg, self);
		if (m->resp == NULL)
			return;
	}
	n = send(m->cfd, m->resp + m->resp_off, m->resp_len - m->resp_off, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		client_close(m);
		return;
	}
	if (n > 0)
		m->resp_off += (size_t)n;
	if (m->resp_off == m->resp_len)
		client_close(m);
}
