// SPDX-License-Identifier: Apache-2.0
/*
 * nic_e2e_app: one rank of a 2-rank "training job" over verbs, run under
 * LD_PRELOAD=libice-ccl.so with the libibverbs and libnccl doubles (no RDMA
 * NIC, no GPU here), for test_nic_e2e.sh:
 *
 *   nic_e2e_app LOCAL_IP PEER_IP RANK GO_FILE GO2_FILE
 *
 * Joins communicator "ice-e2e" (2 ranks), creates and connects one RC QP
 * (RESET -> INIT -> RTR -> RTS) towards PEER_IP through the hook, waits for
 * GO_FILE, then announces all-reduces of 64 MiB every millisecond until the
 * controller's plan is in force on its QP: the source port the agent wrote
 * into the control block in use (moved by mlx5dv_modify_qp_udp_sport when
 * it differs from the QP's own) and the rate set by
 * ibv_modify_qp_rate_limit (here the double's records). Prints one JSON
 * line: qpn, the port at RTR, the port and rate in force, the plan epoch and
 * the milliseconds from the first announcement to the plan in force. Then,
 * announcing on, it waits for GO2_FILE, connects a second QP to the same
 * peer and prints its port and traffic class at RTR (from the agent's plan
 * file) as a second JSON line.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_verbs.h"
#include "ice_ctrl.h"
#include "ice_roce.h"

typedef struct {
	char internal[128];
} uid_t128;

int ncclCommInitRank(void **comm, int n, uid_t128 id, int rank);
int ncclAllReduce(const void *s, void *r, size_t count, int dt, int op, void *comm, void *stream);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_RC};
	struct ibv_qp_attr a;
	struct ice_ctrl *c;
	struct ibv_qp *qp;
	struct in_addr local, peer;
	uid_t128 id;
	void *comm = NULL;
	double t0, t_in = -1;
	uint16_t rtr_sport;
	unsigned rtr_tclass;
	char b[8];
	int slot = -1;

	if (argc < 6 || inet_pton(AF_INET, argv[1], &local) != 1 ||
	    inet_pton(AF_INET, argv[2], &peer) != 1) {
		fprintf(stderr, "usage: %s LOCAL_IP PEER_IP RANK GO_FILE GO2_FILE\n", argv[0]);
		return 2;
	}
	fake_verbs_local_ip = local.s_addr;
	memset(&id, 0, sizeof(id));
	snprintf(id.internal, sizeof(id.internal), "ice-e2e");
	if (ncclCommInitRank(&comm, 2, id, atoi(argv[3])) != 0)
		return 1;

	qp = ibv_create_qp(NULL, &ia);
	if (qp == NULL)
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX) != 0)
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = 0x100; /* the peer's first QP */
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 3;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(a.ah_attr.grh.dgid.raw + 12, &peer.s_addr, 4);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN) != 0)
		return 1;
	rtr_sport = ice_roce_flow_label_to_udp_sport(fake_verbs_last_attr.ah_attr.grh.flow_label);
	if (fake_verbs_last_attr.ah_attr.grh.flow_label == 0)
		rtr_sport = 0;
	rtr_tclass = fake_verbs_last_attr.ah_attr.grh.traffic_class;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0)
		return 1;
	c = ice_ctrl_open(argv[1], NULL);
	if (c != NULL)
		slot = ice_ctrl_find(c, qp->qp_num);
	if (slot < 0) {
		fprintf(stderr, "rank %s: QP %u has no slot in the agent's control block\n",
			argv[3], qp->qp_num);
		return 1;
	}
	while (access(argv[4], F_OK) != 0)
		usleep(1000);
	t0 = now_ms();
	/* 10 s for the plan to come; once in force, as long as the test takes
	 * to look at it (a loaded box: over 10 s), but not for ever */
	while (now_ms() < t0 + (t_in < 0 ? 10000 : 60000)) {
		struct ice_ctrl_qp q;

		ncclAllReduce(b, b, 16u << 20, 7 /* float32: 64 MiB */, 0, comm, NULL);
		if (t_in < 0 && ice_ctrl_get(c, slot, &q) && (q.flags & ICE_CTRL_SET_SPORT) &&
		    c->qp[slot].applied_seq == q.seq && c->qp[slot].sport_now == q.sport &&
		    (!(q.flags & ICE_CTRL_SET_RATE) ||
		     fake_verbs_rate_kbps == q.rate_mbps * 1000u)) {
			t_in = now_ms() - t0;
			printf("{\"rank\":%s,\"qpn\":%u,\"rtr_sport\":%u,\"sport\":%u,\"rate_"
			       "kbps\":%u,"
			       "\"epoch\":%llu,\"in_force_ms\":%.1f,\"tclass\":%u}\n",
			       argv[3], qp->qp_num, rtr_sport, c->qp[slot].sport_now,
			       fake_verbs_rate_kbps, (unsigned long long)q.epoch, t_in, rtr_tclass);
			fflush(stdout);
		}
		/* announcing on, like a job that trains on, until the test
		 * has looked at the plan */
		if (t_in >= 0 && access(argv[5], F_OK) == 0)
			break;
		usleep(1000);
	}
	if (t_in < 0) {
		fprintf(stderr, "rank %s: no plan in force on QP %u after 10 s\n", argv[3],
			qp->qp_num);
	} else {
		/* a QP that connects now: the agent's plan file gives its port
		 * (the plan's for this peer) and its traffic class at RTR */
		struct ibv_qp *q2 = ibv_create_qp(NULL, &ia);

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.dest_qp_num = 0x101;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
		memcpy(a.ah_attr.grh.dgid.raw + 12, &peer.s_addr, 4);
		if (q2 == NULL ||
		    ibv_modify_qp(q2, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN) != 0)
			return 1;
		printf("{\"qp2_sport\":%u,\"qp2_tclass\":%u}\n",
		       fake_verbs_last_attr.ah_attr.grh.flow_label != 0
			       ? ice_roce_flow_label_to_udp_sport(
					 fake_verbs_last_attr.ah_attr.grh.flow_label)
			       : 0,
		       fake_verbs_last_attr.ah_attr.grh.traffic_class);
		ibv_destroy_qp(q2);
	}
	ibv_destroy_qp(qp);
	ice_ctrl_close(c);
	return t_in < 0;
}
