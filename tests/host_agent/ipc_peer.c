// SPDX-License-Identifier: Apache-2.0
/*
 * ipc_peer: the other side of the agent's local IPC, for test_agent_ipc.sh,
 * which runs it as users in and out of the agent's group.
 *
 *   ipc_peer transport ADDR PEER_ADDR SPORT SECONDS
 *       The real transport: an engine on ADDR (it maps ADDR's control block
 *       as tp_engine_new() does) and one on PEER_ADDR, a connected QP pair.
 *       Prints "qpn N" once the QP has its slot, then runs the engines until
 *       the QP's UDP source port is SPORT (the agent applied a plan):
 *       "sport SPORT applied", exit 0; 1 on timeout; 3 when ADDR's control
 *       block cannot be mapped ("control block: <why>").
 *   ipc_peer event ADDR JOB
 *       One ICE_EV_COMM_INIT with job label JOB to the agent of ADDR
 *       (ICE_AGENT_SOCK when set): "sent", exit 0, or "refused: <why>", 1.
 *   ipc_peer sign KEYFILE HOST EPOCH QPN SPORT
 *       A signed plan for HOST moving QPN to SPORT, valid 30 s, on stdout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_ctrl.h"
#include "ice_event.h"
#include "ice_log.h"
#include "ice_plan.h"
#include "ice_time.h"
#include "tp.h"

static struct tp_engine *engine(const char *addr)
{
	struct tp_engine_cfg cfg;

	tp_engine_cfg_default(&cfg);
	inet_pton(AF_INET, addr, &cfg.addr);
	cfg.port = 0;
	cfg.line_rate_bps = 10000000000ull;
	return tp_engine_new(&cfg);
}

static int run_transport(const char *addr, const char *peer, unsigned sport, unsigned secs)
{
	struct tp_engine *a, *b;
	struct tp_qp *qa, *qb;
	struct tp_qp_conn c = {0};
	struct ice_ctrl *probe = ice_ctrl_open(addr, NULL);
	uint64_t end;
	int ret = 1;

	/* the same call the engine makes, to say why when it fails */
	if (probe == NULL) {
		printf("control block: %s\n", strerror(errno));
		return 3;
	}
	ice_ctrl_close(probe);
	a = engine(addr);
	b = engine(peer);
	if (a == NULL || b == NULL) {
		printf("engine: %s\n", strerror(errno));
		return 2;
	}
	qa = tp_qp_create(a);
	qb = tp_qp_create(b);
	inet_pton(AF_INET, peer, &c.raddr);
	c.rport = tp_engine_port(b);
	c.rqpn = tp_qp_num(qb);
	if (tp_qp_connect(qa, &c) < 0)
		return 2;
	inet_pton(AF_INET, addr, &c.raddr);
	c.rport = tp_engine_port(a);
	c.rqpn = tp_qp_num(qa);
	if (tp_qp_connect(qb, &c) < 0)
		return 2;
	printf("qpn %u\n", tp_qp_num(qa));
	fflush(stdout);
	end = ice_now_ns() + (uint64_t)secs * ICE_NSEC_PER_SEC;
	while (ice_now_ns() < end) {
		tp_engine_progress(a, 0);
		tp_engine_progress(b, 0);
		if (tp_qp_sport(qa) == sport) {
			printf("sport %u applied\n", sport);
			ret = 0;
			break;
		}
		ice_sleep_ns(5 * ICE_NSEC_PER_MSEC);
	}
	if (ret != 0)
		printf("sport still %u after %u s\n", tp_qp_sport(qa), secs);
	/* a last publish so the agent sees the port in use, then go */
	ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	tp_engine_progress(a, 0);
	tp_qp_destroy(qa);
	tp_qp_destroy(qb);
	tp_engine_free(a);
	tp_engine_free(b);
	return ret;
}

static int run_event(const char *addr, const char *job)
{
	struct ice_event_tx *tx = ice_event_tx_open(addr, "ipc-peer");
	struct ice_event ev = {.kind = ICE_EV_COMM_INIT, .comm_id = 0x1ce, .nranks = 1};
	int ret;

	if (tx == NULL) {
		printf("refused: %s\n", strerror(errno));
		return 1;
	}
	snprintf(ev.job, sizeof(ev.job), "%s", job);
	ret = ice_event_send(tx, &ev);
	ice_event_tx_close(tx);
	if (ret < 0) {
		printf("refused: %s\n", strerror(-ret));
		return 1;
	}
	printf("sent\n");
	return 0;
}

static int run_sign(char **argv)
{
	struct ice_plan_entry e = {
		.qpn = (uint32_t)strtoul(argv[3], NULL, 0),
		.sport = (uint16_t)strtoul(argv[4], NULL, 0),
		.path = -1,
	};
	struct ice_host_plan hp = {
		.epoch = strtoull(argv[2], NULL, 0),
		.lifetime_ms = 30000,
		.issued_ms = ice_wall_ms(),
		.entries = &e,
		.n = 1,
	};
	struct ice_plan_key key;
	struct ice_cfg_err err;
	char *s;

	char buf[768];

	if (ice_plan_key_load(argv[0], &key, &err) < 0) {
		fprintf(stderr, "%s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return 2;
	}
	snprintf(hp.host, sizeof(hp.host), "%s", argv[1]);
	s = ice_plan_sign(&hp, &key);
	ice_plan_key_fini(&key);
	if (s == NULL)
		return 2;
	printf("%s\n", s);
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	ice_log_set_level(ICE_LOG_WARN);
	if (argc == 6 && strcmp(argv[1], "transport") == 0)
		return run_transport(argv[2], argv[3], (unsigned)strtoul(argv[4], NULL, 0),
				     (unsigned)strtoul(argv[5], NULL, 0));
	if (argc == 4 && strcmp(argv[1], "event") == 0)
		return run_event(argv[2], argv[3]);
	if (argc == 7 && strcmp(argv[1], "sign") == 0)
		return run_sign(argv + 2);
	fprintf(stderr, "usage: ipc_peer transport ADDR PEER_ADDR SPORT SECONDS | event ADDR JOB | "
			"sign PRIVATE_KEYFILE HOST EPOCH QPN SPORT\n");
	return 2;
}
