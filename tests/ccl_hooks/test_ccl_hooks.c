// SPDX-License-Identifier: Apache-2.0
/*
 * test_ccl_hooks: libice-ccl.so (LD_PRELOAD) over test doubles of libnccl
 * and libibverbs (tests/ccl_hooks/: no GPU and no RDMA device exist here).
 *
 * The controls are read once per process, so each case runs a child
 * (this program with a scenario name) under its own environment. The child
 * checks forwarding itself (arguments and return codes, as seen by the
 * doubles) and exits 0; the parent plays the agent on a unix socket
 * (ICE_AGENT_SOCK) and checks the events.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dlfcn.h>

#include "fake_nccl.h"
#include "fake_verbs.h"
#include "ice_ctrl.h"
#include "ice_event.h"
#include "ice_roce.h"

/* The hooked API as an application sees it (our own prototypes). */
typedef struct {
	char internal[128];
} uid_t128;
int ncclCommInitRank(void **c, int n, uid_t128 id, int r);
int ncclCommInitRankConfig(void **c, int n, uid_t128 id, int r, void *cfg);
int ncclCommInitAll(void **c, int n, const int *dev);
int ncclCommSplit(void *c, int color, int key, void **nc, void *cfg);
int ncclCommDestroy(void *c);
int ncclCommAbort(void *c);
int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
int ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
int ncclAllGather(const void *s, void *r, size_t n, int t, void *c, void *st);
int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *st);
int ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, void *c, void *st);
int ncclAlltoAll(const void *s, void *r, size_t n, int t, void *c, void *st);
int ncclSend(const void *s, size_t n, int t, int peer, void *c, void *st);
int ncclRecv(void *r, size_t n, int t, int peer, void *c, void *st);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int mcclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
int mcclCommInitRank(void **c, int n, uid_t128 id, int r);
int mcclSend(const void *s, size_t n, int t, int peer, void *c, void *st);

static char sock_path[108];
static int sock_fd = -1;
static const char *self_exe;

/* ---- child scenarios: exit 0 when everything seen from the child is right */

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child check failed at %s:%d: %s\n", __FILE__, __LINE__,   \
				#cond);                                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define LAST(name, ...)                                                                            \
	do {                                                                                       \
		uint64_t want_[] = {__VA_ARGS__};                                                  \
		CHECK(strcmp(fake_nccl_last.fn, name) == 0);                                       \
		CHECK(memcmp(fake_nccl_last.a, want_, sizeof(want_)) == 0);                        \
	} while (0)
#define P(x) ((uint64_t)(uintptr_t)(x))

static uid_t128 test_uid(void)
{
	uid_t128 id;

	for (int i = 0; i < 128; i++)
		id.internal[i] = (char)(i * 7 + 3);
	return id;
}

/* Every hooked call forwards its exact arguments and the double's return
 * code, for rc in {success, invalid usage, in progress, internal error}. */
static int child_forward(void)
{
	static const int rcs[] = {0, 5, 7, 3};
	char sb[8], rb[8];
	void *st = (void *)0x5151, *c = NULL, *nc = NULL, *comms[3];
	int devs[3] = {0, 1, 2};
	uid_t128 id = test_uid();

	for (size_t k = 0; k < sizeof(rcs) / sizeof(rcs[0]); k++) {
		int rc = rcs[k];

		fake_nccl_rc = rc;
		CHECK(ncclCommInitRank(&c, 8, id, 3) == rc);
		LAST("ncclCommInitRank", P(&c), 8, 3, (uint8_t)id.internal[127], 3);
		CHECK(ncclCommInitRankConfig(&c, 8, id, 2, (void *)0x77) == rc);
		LAST("ncclCommInitRankConfig", P(&c), 8, 3, (uint8_t)id.internal[127], 2, 0x77);
		CHECK(ncclCommInitAll(comms, 3, devs) == rc);
		LAST("ncclCommInitAll", P(comms), 3, P(devs));
		CHECK(ncclCommSplit(c, 5, 9, &nc, (void *)0x78) == rc);
		LAST("ncclCommSplit", P(c), 5, 9, P(&nc), 0x78);
		CHECK(ncclAllReduce(sb, rb, 1000, 7, 2, c, st) == rc);
		LAST("ncclAllReduce", P(sb), P(rb), 1000, 7, 2, P(c), P(st));
		CHECK(ncclReduceScatter(sb, rb, 11, 9, 0, c, st) == rc);
		LAST("ncclReduceScatter", P(sb), P(rb), 11, 9, 0, P(c), P(st));
		CHECK(ncclAllGather(sb, rb, 12, 8, c, st) == rc);
		LAST("ncclAllGather", P(sb), P(rb), 12, 8, P(c), P(st));
		CHECK(ncclBroadcast(sb, rb, 13, 2, 6, c, st) == rc);
		LAST("ncclBroadcast", P(sb), P(rb), 13, 2, 6, P(c), P(st));
		CHECK(ncclReduce(sb, rb, 14, 4, 3, 1, c, st) == rc);
		LAST("ncclReduce", P(sb), P(rb), 14, 4, 3, 1, P(c), P(st));
		CHECK(ncclAlltoAll(sb, rb, 15, 1, c, st) == rc);
		LAST("ncclAlltoAll", P(sb), P(rb), 15, 1, P(c), P(st));
		CHECK(ncclSend(sb, 16, 0, 5, c, st) == rc);
		LAST("ncclSend", P(sb), 16, 0, 5, P(c), P(st));
		CHECK(ncclRecv(rb, 17, 6, 4, c, st) == rc);
		LAST("ncclRecv", P(rb), 17, 6, 4, P(c), P(st));
		CHECK(ncclGroupStart() == rc);
		LAST("ncclGroupStart", 0);
		CHECK(ncclGroupEnd() == rc);
		LAST("ncclGroupEnd", 0);
		CHECK(ncclCommAbort(nc) == rc);
		LAST("ncclCommAbort", P(nc));
		CHECK(ncclCommDestroy(c) == rc);
		LAST("ncclCommDestroy", P(c));
		/* a vendor prefix (no p-aliases in its library) */
		CHECK(mcclAllReduce(sb, rb, 21, 7, 1, c, st) == rc);
		LAST("mcclAllReduce", P(sb), P(rb), 21, 7, 1, P(c), P(st));
		CHECK(mcclSend(sb, 22, 7, 2, c, st) == rc);
		LAST("mcclSend", P(sb), 22, 7, 2, P(c), P(st));
	}
	/* the application really called the hook, not the double directly */
	{
		Dl_info di;

		CHECK(dladdr((void *)dlsym(RTLD_DEFAULT, "ncclAllReduce"), &di) != 0);
		CHECK(strstr(di.dli_fname, "libice-ccl.so") != NULL);
	}
	return 0;
}

/* A communicator, a few operations, a group, a failed group, destroy. */
static int child_events(void)
{
	char b[8];
	void *c = NULL;
	uid_t128 id = test_uid();

	fake_nccl_rc = 0;
	CHECK(ncclCommInitRank(&c, 4, id, 2) == 0);
	CHECK(ncclAllReduce(b, b, 1000, 7 /* float32 */, 0, c, NULL) == 0);
	CHECK(ncclBroadcast(b, b, 10, 8 /* float64 */, 3, c, NULL) == 0);
	CHECK(ncclAllGather(b, b, 5, 9 /* bf16 */, c, NULL) == 0);
	CHECK(ncclGroupStart() == 0);
	CHECK(ncclSend(b, 64, 1 /* uint8 */, 3, c, NULL) == 0);
	CHECK(ncclGroupStart() == 0); /* nested */
	CHECK(ncclRecv(b, 32, 2 /* int32 */, 1, c, NULL) == 0);
	CHECK(ncclGroupEnd() == 0);
	CHECK(ncclReduceScatter(b, b, 3, 7, 0, c, NULL) == 0);
	CHECK(ncclGroupEnd() == 0);
	/* a group whose end fails launched nothing: nothing is reported */
	CHECK(ncclGroupStart() == 0);
	CHECK(ncclSend(b, 99, 1, 1, c, NULL) == 0);
	fake_nccl_rc = 2;
	CHECK(ncclGroupEnd() == 2);
	fake_nccl_rc = 0;
	/* an operation that failed is not reported either */
	fake_nccl_rc = 4;
	CHECK(ncclAllReduce(b, b, 7, 7, 0, c, NULL) == 4);
	fake_nccl_rc = 0;
	CHECK(mcclSend(b, 8, 7, 1, c, NULL) == 0);
	CHECK(ncclCommDestroy(c) == 0);
	return 0;
}

/* Two splits of one parent with one colour, the first destroyed before
 * the second (a group made again). */
static int child_split(void)
{
	void *c = NULL, *a = NULL, *b = NULL;
	uid_t128 id = test_uid();

	fake_nccl_rc = 0;
	CHECK(ncclCommInitRank(&c, 4, id, 2) == 0);
	CHECK(ncclCommSplit(c, 5, 0, &a, NULL) == 0);
	CHECK(ncclCommDestroy(a) == 0);
	CHECK(ncclCommSplit(c, 5, 0, &b, NULL) == 0);
	CHECK(ncclCommDestroy(b) == 0);
	CHECK(ncclCommDestroy(c) == 0);
	return 0;
}

static int child_many(void)
{
	char b[8];

	for (int i = 0; i < 100; i++)
		CHECK(ncclAllReduce(b, b, (size_t)i + 1, 7, 0, NULL, NULL) == 0);
	return 0;
}

/* Forwarding keeps working whatever happens inside the hook. */
static int child_robust(void)
{
	char b[8];
	void *c = NULL;

	for (int i = 0; i < 3; i++) {
		fake_nccl_rc = i;
		CHECK(ncclCommInitRank(&c, 2, test_uid(), 0) == i);
		CHECK(ncclGroupStart() == i);
		for (int k = 0; k < 40; k++) /* past the held-back buffer's first size */
			CHECK(ncclSend(b, 4, 7, 1, c, NULL) == i);
		CHECK(ncclGroupEnd() == i);
		CHECK(ncclAllReduce(b, b, 4, 7, 0, c, NULL) == i);
		LAST("ncclAllReduce", P(b), P(b), 4, 7, 0, P(c), 0);
		CHECK(ncclCommDestroy(c) == i);
	}
	return 0;
}

/* ---- verbs */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* RESET->INIT->RTR of one QP towards 10.0.0.2, remote QPN 0x4242. */
static struct ibv_qp *qp_connect(struct ibv_qp_attr *rtr_out)
{
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_RC};
	struct ibv_qp_attr a = {0};
	struct ibv_qp *qp = ibv_create_qp(NULL, &ia);

	CHECK(qp != NULL);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = 0x4242;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 3;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 10;
	a.ah_attr.grh.dgid.raw[15] = 2;
	*rtr_out = a;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN) == 0);
	/* the caller's attributes are never changed */
	CHECK(memcmp(&a, rtr_out, sizeof(a)) == 0);
	return qp;
}

static int child_verbs_plan(void)
{
	struct ibv_qp_attr a;
	const char *plan = getenv("ICE_CCL_PLAN");
	struct ibv_qp *qp;

	/* the second port carries the plan's traffic class (its profile's
	 * priority), the first takes the file's default */
	write_file(plan, "version 1\n# steer\ntclass 106\nsport 10.0.0.2 50000 50001/40\n"
			 "sport * 60000\n");
	qp = qp_connect(&a);
	CHECK(fake_verbs_last_attr.ah_attr.grh.traffic_class == 106);
	CHECK(ibv_flow_label_to_udp_sport(fake_verbs_last_attr.ah_attr.grh.flow_label) == 50000);
	CHECK(fake_verbs_last_attr.ah_attr.grh.hop_limit == 64);
	CHECK(fake_verbs_last_attr.dest_qp_num == 0x4242);
	qp_connect(&a);
	CHECK(ibv_flow_label_to_udp_sport(fake_verbs_last_attr.ah_attr.grh.flow_label) == 50001);
	CHECK(fake_verbs_last_attr.ah_attr.grh.traffic_class == 40);
	CHECK(ibv_destroy_qp(qp) == 0);
	/* the NIC refuses the label: the caller's own attributes go through */
	fake_verbs_refuse_label = 1;
	qp_connect(&a);
	CHECK(fake_verbs_last_attr.ah_attr.grh.flow_label == 0);
	CHECK(fake_verbs_last_attr.ah_attr.grh.traffic_class == 0);
	return 0;
}

static int child_verbs_unchanged(void)
{
	struct ibv_qp_attr a;
	const char *plan = getenv("ICE_CCL_PLAN");
	const char *text = getenv("TEST_PLAN_TEXT");

	if (plan != NULL && text != NULL)
		write_file(plan, text);
	qp_connect(&a);
	CHECK(memcmp(&fake_verbs_last_attr, &a, sizeof(a)) == 0);
	return 0;
}

/* A live QP moves when the agent writes a port into the control block; the
 * NCCL hooks apply it (mlx5dv_modify_qp_udp_sport, here the double). */
static int child_verbs_live(void)
{
	struct ice_ctrl *c = ice_ctrl_open("10.255.77.1", NULL);
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	char b[8];
	int slot;

	CHECK(c != NULL);
	qp = qp_connect(&a);
	slot = ice_ctrl_find(c, qp->qp_num);
	CHECK(slot >= 0);
	CHECK(c->qp[slot].rqpn == 0x4242 && c->qp[slot].remote_ip == 0x0200000a);
	ice_ctrl_set(c, slot, ICE_CTRL_SET_SPORT, 61000, 0, NULL, 7);
	CHECK(ncclAllReduce(b, b, 1, 7, 0, NULL, NULL) == 0);
	if (getenv("ICE_CCL_DRY_RUN") != NULL) {
		CHECK(fake_verbs_udp_sport == 0);
		CHECK(c->qp[slot].sport_now != 61000);
	} else {
		CHECK(fake_verbs_udp_sport == 61000);
		CHECK(c->qp[slot].sport_now == 61000);
	}
	CHECK(c->qp[slot].applied_seq == c->qp[slot].seq);
	{
		uint32_t qpn = qp->qp_num;

		CHECK(ibv_destroy_qp(qp) == 0);
		CHECK(ice_ctrl_find(c, qpn) < 0); /* the slot is released */
	}
	ice_ctrl_close(c);
	return 0;
}

/* Planned rates through ibv_modify_qp_rate_limit: set when the QP reaches
 * RTS (a rate planned before waits for it), taken off when the plan drops
 * it, kept when the NIC refuses one. */
static int child_verbs_rate(void)
{
	struct ice_ctrl *c = ice_ctrl_open("10.255.77.1", NULL);
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	char b[8];
	int slot;

	CHECK(c != NULL);
	qp = qp_connect(&a);
	slot = ice_ctrl_find(c, qp->qp_num);
	CHECK(slot >= 0);
	ice_ctrl_set(c, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE, 61000, 25000, NULL, 7);
	CHECK(ncclAllReduce(b, b, 1, 7, 0, NULL, NULL) == 0);
	CHECK(fake_verbs_udp_sport == 61000);
	CHECK(fake_verbs_rate_calls == 0); /* RTR: no rate limit yet */
	CHECK(c->qp[slot].applied_seq != c->qp[slot].seq);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	CHECK(fake_verbs_rate_kbps == 25000000);
	CHECK(c->qp[slot].rate_mbps_now == 25000);
	CHECK(c->qp[slot].applied_seq == c->qp[slot].seq);
	/* the next plan has no rate: the limit comes off */
	ice_ctrl_set(c, slot, ICE_CTRL_SET_SPORT, 61000, 0, NULL, 8);
	usleep(2000);
	CHECK(ncclAllReduce(b, b, 1, 7, 0, NULL, NULL) == 0);
	CHECK(fake_verbs_rate_kbps == 0);
	CHECK(c->qp[slot].rate_mbps_now == 0);
	/* refused by the NIC: no limit stays, the plan counts as seen */
	fake_verbs_refuse_rate = 1;
	ice_ctrl_set(c, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE, 61000, 10000, NULL, 9);
	usleep(2000);
	CHECK(ncclAllReduce(b, b, 1, 7, 0, NULL, NULL) == 0);
	CHECK(fake_verbs_rate_calls == 3);
	CHECK(fake_verbs_rate_kbps == 0 && c->qp[slot].rate_mbps_now == 0);
	CHECK(c->qp[slot].applied_seq == c->qp[slot].seq);
	CHECK(ibv_destroy_qp(qp) == 0);
	ice_ctrl_close(c);
	return 0;
}

/* The agent's plan file for the QP's local address ("%s" in ICE_CCL_PLAN). */
static int child_verbs_plan_ip(void)
{
	const char *dir = getenv("TEST_PLAN_DIR");
	char path[256];
	struct ibv_qp_attr a;

	snprintf(path, sizeof(path), "%s/ccl-plan-10.255.77.1.conf", dir);
	write_file(path, "version 1\ntclass 106\nsport 10.0.0.2 52000\n");
	qp_connect(&a);
	CHECK(fake_verbs_last_attr.ah_attr.grh.traffic_class == 106);
	CHECK(ibv_flow_label_to_udp_sport(fake_verbs_last_attr.ah_attr.grh.flow_label) == 52000);
	unlink(path);
	return 0;
}

/* NCCL's way in: dlopen + dlvsym(handle, name, "IBVERBS_1.1"). */
static int child_dlvsym(void)
{
	void *h = dlopen(getenv("TEST_FAKE_VERBS"), RTLD_NOW | RTLD_LOCAL);
	Dl_info di;
	void *p;

	CHECK(h != NULL);
	p = dlvsym(h, "ibv_modify_qp", "IBVERBS_1.1");
	CHECK(p != NULL && dladdr(p, &di) != 0 && strstr(di.dli_fname, "libice-ccl.so") != NULL);
	p = dlvsym(h, "ibv_query_gid", "IBVERBS_1.1");
	CHECK(p != NULL && dladdr(p, &di) != 0 && strstr(di.dli_fname, "fake-verbs") != NULL);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} scenarios[] = {
	{"forward", child_forward},
	{"events", child_events},
	{"split", child_split},
	{"many", child_many},
	{"robust", child_robust},
	{"verbs_plan", child_verbs_plan},
	{"verbs_unchanged", child_verbs_unchanged},
	{"dlvsym", child_dlvsym},
	{"verbs_live", child_verbs_live},
	{"verbs_rate", child_verbs_rate},
	{"verbs_plan_ip", child_verbs_plan_ip},
};

/* ---- parent side */

static int run_child(const char *scenario, ...)
{
	va_list ap;
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		const char *kv;

		va_start(ap, scenario);
		while ((kv = va_arg(ap, const char *)) != NULL)
			putenv((char *)kv);
		va_end(ap);
		execl(self_exe, self_exe, scenario, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The agent: a thread drains the socket as soon as datagrams arrive (it
 * holds only net.unix.max_dgram_qlen of them). */
#define MAX_EVENTS 4096
static struct ice_event got[MAX_EVENTS];
static int ngot, nbad;
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int reader_stop;

static void *reader(void *arg)
{
	struct ice_event ev[ICE_EVENT_PER_DGRAM];

	while (!reader_stop) {
		/* a datagram: 1..ICE_EVENT_PER_DGRAM whole records */
		ssize_t r = recv(sock_fd, ev, sizeof(ev), MSG_TRUNC);

		if (r < 0)
			continue; /* SO_RCVTIMEO */
		pthread_mutex_lock(&got_lock);
		if (r == 0 || (size_t)r > sizeof(ev) || r % sizeof(ev[0]) != 0)
			nbad++;
		for (ssize_t i = 0; (size_t)r <= sizeof(ev) && i < r / (ssize_t)sizeof(ev[0]);
		     i++) {
			if (ev[i].magic != ICE_EVENT_MAGIC)
				nbad++;
			else if (ngot < MAX_EVENTS)
				got[ngot++] = ev[i];
		}
		pthread_mutex_unlock(&got_lock);
	}
	return NULL;
}

/* Events received since the last call (the child has exited: what it sent
 * is in the socket; give the reader a moment). */
static int recv_events(struct ice_event *evs, int max)
{
	int n;

	usleep(100000);
	pthread_mutex_lock(&got_lock);
	assert_int_equal(nbad, 0);
	n = ngot < max ? ngot : max;
	memcpy(evs, got, (size_t)n * sizeof(*evs));
	ngot = 0;
	pthread_mutex_unlock(&got_lock);
	return n;
}

static void drain(void)
{
	struct ice_event ev[64];

	recv_events(ev, 64);
}

static void test_forward(void **state)
{
	drain();
	assert_int_equal(run_child("forward", NULL), 0);
	drain();
}

static uint64_t djb2a(const void *p, size_t n)
{
	const signed char *s = p;
	uint64_t h = 5381;

	for (size_t i = 0; i < n; i++)
		h = ((h << 5) + h) ^ (uint64_t)(int64_t)s[i];
	return h;
}

static void test_events(void **state)
{
	struct ice_event ev[64];
	uid_t128 id = test_uid();
	uint64_t cid = djb2a(id.internal, 128);
	int n;

	drain();
	assert_int_equal(run_child("events", NULL), 0);
	n = recv_events(ev, 64);
	assert_int_equal(n, 9);
	assert_int_equal(ev[0].kind, ICE_EV_COMM_INIT);
	assert_true(ev[0].comm_id == cid);
	assert_int_equal(ev[0].rank, 2);
	assert_int_equal(ev[0].nranks, 4);
	assert_string_equal(ev[0].lib, "nccl");
	/* allreduce: 1000 float32 */
	assert_int_equal(ev[1].kind, ICE_EV_COLL_START);
	assert_int_equal(ev[1].op, ICE_OP_ALLREDUCE);
	assert_true(ev[1].comm_id == cid);
	assert_int_equal(ev[1].rank, 2);
	assert_int_equal(ev[1].count, 1000);
	assert_int_equal(ev[1].bytes, 4000);
	assert_int_equal(ev[1].dtype, 7);
	assert_int_equal(ev[1].redop, 0);
	assert_int_equal(ev[1].root, -1);
	assert_int_equal(ev[1].group, 0);
	assert_true(ev[1].ts_ns >= ev[0].ts_ns && ev[1].seq == ev[0].seq + 1);
	/* broadcast: root, 10 doubles */
	assert_int_equal(ev[2].op, ICE_OP_BROADCAST);
	assert_int_equal(ev[2].root, 3);
	assert_int_equal(ev[2].bytes, 80);
	/* allgather: 5 bf16 from each of 4 ranks */
	assert_int_equal(ev[3].op, ICE_OP_ALLGATHER);
	assert_int_equal(ev[3].count, 20);
	assert_int_equal(ev[3].bytes, 40);
	/* the group: three operations, one group number, in call order */
	assert_int_equal(ev[4].op, ICE_OP_SEND);
	assert_int_equal(ev[4].peer, 3);
	assert_int_equal(ev[4].bytes, 64);
	assert_int_equal(ev[5].op, ICE_OP_RECV);
	assert_int_equal(ev[5].peer, 1);
	assert_int_equal(ev[5].bytes, 128);
	assert_int_equal(ev[6].op, ICE_OP_REDUCESCATTER);
	assert_int_equal(ev[6].count, 12);
	assert_int_not_equal(ev[4].group, 0);
	assert_int_equal(ev[5].group, ev[4].group);
	assert_int_equal(ev[6].group, ev[4].group);
	/* the failed group and the failed allreduce are absent; vendor prefix */
	assert_int_equal(ev[7].op, ICE_OP_SEND);
	assert_int_equal(ev[7].bytes, 32);
	assert_string_equal(ev[7].lib, "mccl");
	assert_int_equal(ev[8].kind, ICE_EV_COMM_DESTROY);
	assert_true(ev[8].comm_id == cid);
}

/* A split's id: the same in every process that makes the same splits, and
 * another for a second split of one parent with the same colour. */
static void test_split_ids(void **state)
{
	struct ice_event ev[16], again[16];

	drain();
	assert_int_equal(run_child("split", NULL), 0);
	assert_int_equal(recv_events(ev, 16), 6);
	assert_int_equal(run_child("split", NULL), 0);
	assert_int_equal(recv_events(again, 16), 6);
	assert_int_equal(ev[1].kind, ICE_EV_COMM_INIT);
	assert_int_equal(ev[2].kind, ICE_EV_COMM_DESTROY);
	assert_int_equal(ev[3].kind, ICE_EV_COMM_INIT);
	assert_true(ev[2].comm_id == ev[1].comm_id);
	assert_true(ev[3].comm_id != ev[1].comm_id && ev[3].comm_id != ev[0].comm_id);
	assert_true(ev[4].comm_id == ev[3].comm_id);
	for (int i = 0; i < 6; i++)
		assert_true(again[i].comm_id == ev[i].comm_id);
}

static void test_sample(void **state)
{
	struct ice_event ev[128];

	drain();
	assert_int_equal(run_child("many", "ICE_CCL_SAMPLE=4", NULL), 0);
	assert_int_equal(recv_events(ev, 128), 25);
	assert_int_equal(ev[0].count, 4);
	assert_int_equal(run_child("many", "ICE_CCL_DISABLE=1", NULL), 0);
	assert_int_equal(recv_events(ev, 128), 0);
	assert_int_equal(run_child("many", "ICE_CCL_EVENTS=0", NULL), 0);
	assert_int_equal(recv_events(ev, 128), 0);
	assert_int_equal(run_child("many", "ICE_CCL_SAMPLE=oops", NULL), 0); /* ignored */
	assert_int_equal(recv_events(ev, 128), 100);
}

static void test_failures(void **state)
{
	struct ice_event ev[256];

	drain();
	/* no agent at all */
	assert_int_equal(run_child("robust", "ICE_AGENT_SOCK=/nonexistent/ice.sock", NULL), 0);
	/* every send fails; every allocation in the hook fails */
	assert_int_equal(run_child("robust", "ICE_CCL_FAULT=send", NULL), 0);
	assert_int_equal(recv_events(ev, 256), 0);
	assert_int_equal(run_child("robust", "ICE_CCL_FAULT=alloc", NULL), 0);
	/* without room to hold a group back, its operations are still reported */
	assert_true(recv_events(ev, 256) >= 40);
	assert_int_equal(run_child("robust", "ICE_CCL_FAULT=alloc,send", "ICE_CCL_SAMPLE=2", NULL),
			 0);
	drain();
}

static char plan_path[128], log_path[128], plan_env[160], log_env[160];

static void test_verbs_plan(void **state)
{
	struct ice_event ev[16];
	int n;

	drain();
	assert_int_equal(run_child("verbs_plan", plan_env, NULL), 0);
	n = recv_events(ev, 16);
	assert_int_equal(n, 3);
	assert_int_equal(ev[0].kind, ICE_EV_QP);
	assert_int_equal(ev[0].rqpn, 0x4242);
	assert_int_equal(ev[0].sport, 50000);
	assert_int_equal(ev[0].remote_ip, 0x0200000a);
	assert_int_equal(ev[0].local_ip, 0x014dff0a);
	assert_string_equal(ev[0].lib, "verbs");
	assert_int_equal(ev[1].sport, 50001);
	assert_int_not_equal(ev[1].qpn, ev[0].qpn);
	/* refused label: the kernel's default port is reported */
	assert_int_equal(ev[2].sport, ice_roce_flow_label_to_udp_sport(
					      ice_roce_calc_flow_label(ev[2].qpn, 0x4242)));
	unlink(plan_path);
}

static void test_verbs_no_change(void **state)
{
	static const char *const bad[] = {
		"TEST_PLAN_TEXT=tclass 1\n",			   /* no version */
		"TEST_PLAN_TEXT=version 2\n",			   /* unknown version */
		"TEST_PLAN_TEXT=version 1\nsport 10.0.0.2 1234\n", /* below 49152 */
		"TEST_PLAN_TEXT=version 1\nsport 10.0.0.2 70000\n",
		"TEST_PLAN_TEXT=version 1\nsport 10.0.0.300 50000\n",
		"TEST_PLAN_TEXT=version 1\ntclass 256\n",
		"TEST_PLAN_TEXT=version 1\nrate 10\n",
		"TEST_PLAN_TEXT=version 1\nsport 10.0.0.2\n",
		"TEST_PLAN_TEXT=version 1\nsport 10.0.0.2 50000x\n",
	};
	char buf[4096];
	FILE *f;
	size_t n;

	drain();
	/* dry run: a valid plan, but no QP is modified */
	assert_int_equal(run_child("verbs_unchanged", plan_env, "ICE_CCL_DRY_RUN=1",
				   "TEST_PLAN_TEXT=version 1\ntclass 3\nsport * 50000\n", NULL),
			 0);
	/* verbs hook off */
	assert_int_equal(run_child("verbs_unchanged", plan_env, "ICE_CCL_VERBS=0", NULL), 0);
	/* malformed plans are refused as a whole, and logged (not to stderr) */
	unlink(log_path);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(run_child("verbs_unchanged", plan_env, log_env, bad[i], NULL), 0);
	f = fopen(log_path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "plan refused"));
	assert_non_null(strstr(buf, ":2: sport"));
	unlink(plan_path);
	unlink(log_path);
	drain();
}

static void test_verbs_live(void **state)
{
	struct ice_ctrl *c;
	struct ice_event ev[8];
	int n;

	ice_ctrl_unlink("10.255.77.1"); /* a fresh block: no stale slots */
	c = ice_ctrl_create("10.255.77.1", NULL);
	if (c == NULL)
		skip();
	drain();
	assert_int_equal(run_child("verbs_live", NULL), 0);
	n = recv_events(ev, 8);
	assert_int_equal(n, 3); /* connected, the all-reduce, moved */
	assert_int_equal(ev[0].kind, ICE_EV_QP);
	assert_int_equal(ev[2].kind, ICE_EV_QP);
	assert_int_equal(ev[2].qpn, ev[0].qpn);
	assert_int_equal(ev[2].sport, 61000);
	assert_int_equal(run_child("verbs_live", "ICE_CCL_DRY_RUN=1", NULL), 0);
	drain();
	ice_ctrl_close(c);
	ice_ctrl_unlink("10.255.77.1");
}

static void test_verbs_rate(void **state)
{
	struct ice_ctrl *c;

	ice_ctrl_unlink("10.255.77.1");
	c = ice_ctrl_create("10.255.77.1", NULL);
	if (c == NULL)
		skip();
	drain();
	assert_int_equal(run_child("verbs_rate", NULL), 0);
	drain();
	ice_ctrl_close(c);
	ice_ctrl_unlink("10.255.77.1");
}

static void test_verbs_plan_ip(void **state)
{
	char dir[] = "/tmp/ice-ccl-planip-XXXXXX", env[128], denv[128];

	assert_non_null(mkdtemp(dir));
	snprintf(env, sizeof(env), "ICE_CCL_PLAN=%s/ccl-plan-%%s.conf", dir);
	snprintf(denv, sizeof(denv), "TEST_PLAN_DIR=%s", dir);
	drain();
	assert_int_equal(run_child("verbs_plan_ip", env, denv, NULL), 0);
	drain();
	rmdir(dir);
}

static void test_dlvsym(void **state)
{
	assert_int_equal(run_child("dlvsym", NULL), 0);
	drain();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward),		cmocka_unit_test(test_events),
		cmocka_unit_test(test_split_ids),	cmocka_unit_test(test_sample),
		cmocka_unit_test(test_failures),	cmocka_unit_test(test_verbs_plan),
		cmocka_unit_test(test_verbs_no_change), cmocka_unit_test(test_dlvsym),
		cmocka_unit_test(test_verbs_live),	cmocka_unit_test(test_verbs_rate),
		cmocka_unit_test(test_verbs_plan_ip),
	};
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *pre = getenv("LD_PRELOAD");
	struct timeval tmo = {.tv_sec = 0, .tv_usec = 20000};
	int rcvbuf = 4 << 20, ret;
	pthread_t th;

	self_exe = argv[0];
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			if (strcmp(argv[1], scenarios[i].name) == 0)
				return scenarios[i].fn();
		return 2;
	}
	if (pre == NULL || strstr(pre, "libice-ccl.so") == NULL) {
		printf("LD_PRELOAD does not name libice-ccl.so: run through meson test\n");
		return 77;
	}
	snprintf(sock_path, sizeof(sock_path), "/tmp/ice-ccl-test-%d.sock", (int)getpid());
	snprintf(plan_path, sizeof(plan_path), "/tmp/ice-ccl-plan-%d.conf", (int)getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/ice-ccl-log-%d.txt", (int)getpid());
	snprintf(plan_env, sizeof(plan_env), "ICE_CCL_PLAN=%s", plan_path);
	snprintf(log_env, sizeof(log_env), "ICE_CCL_LOG=%s", log_path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	unlink(sock_path);
	if (sock_fd < 0 || bind(sock_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("agent socket");
		return 1;
	}
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	setenv("ICE_AGENT_SOCK", sock_path, 1);
	pthread_create(&th, NULL, reader, NULL);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	reader_stop = 1;
	pthread_join(th, NULL);
	close(sock_fd);
	unlink(sock_path);
	unlink(plan_path);
	unlink(log_path);
	return ret;
}
