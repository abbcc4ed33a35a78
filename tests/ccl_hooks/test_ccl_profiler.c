// SPDX-License-Identifier: Apache-2.0
/*
 * test_ccl_profiler: libnccl-profiler-ice.so driven the way NCCL drives a
 * profiler plugin (dlopen, ncclProfiler_vN, init/startEvent/stopEvent/
 * finalize with NCCL's descriptor layouts), events received on the agent
 * socket. NCCL itself cannot load it here: that needs a GPU (see
 * test_ccl_real.sh).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_event.h"

/* NCCL's side of the ABI, as NCCL 2.28 lays it out (profiler_v5.h, _v1.h) */
struct nccl_descr_v5 {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct {
			uint64_t seq;
			const char *func;
			const void *sendbuf;
			void *recvbuf;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nchannels, nwarps;
			const char *algo, *proto;
			void *parent_group;
		} coll;
		struct {
			const char *func;
			void *buf;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nchannels;
			void *parent_group;
		} p2p;
		struct {
			int pid;
			uint8_t channel;
			int peer, nsteps, chunk, is_send;
		} proxy;
	};
};

struct nccl_descr_v1 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t comm_hash, seq;
			uint8_t func;
			const void *sendbuf;
			void *recvbuf;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t traffic;
			uint8_t maxch, nwarps, algo, proto;
			int collnet, nvls;
		} coll;
	};
};

struct plugin_v5 {
	const char *name;
	int (*init)(void **, uint64_t, int *, const char *, int, int, int, void *);
	int (*start)(void *, void **, struct nccl_descr_v5 *);
	int (*stop)(void *);
	int (*record)(void *, int, void *);
	int (*finalize)(void *);
};

struct plugin_v1 {
	const char *name;
	int (*init)(void **, int *);
	int (*start)(void *, void **, struct nccl_descr_v1 *);
	int (*stop)(void *);
	int (*record)(void *, int, void *);
	int (*finalize)(void *);
};

static void *lib;
static int sock_fd = -1;
static char sock_path[108];

static int recv_all(struct ice_event *ev, int max)
{
	struct ice_event d[ICE_EVENT_PER_DGRAM];
	int n = 0;
	ssize_t r;

	/* a datagram: 1..ICE_EVENT_PER_DGRAM whole records */
	while (n < max && (r = recv(sock_fd, d, sizeof(d), 0)) > 0 && r % sizeof(d[0]) == 0)
		for (ssize_t i = 0; i < r / (ssize_t)sizeof(d[0]) && n < max; i++)
			ev[n++] = d[i];
	return n;
}

static void test_exports(void **state)
{
	for (int v = 1; v <= 5; v++) {
		char name[32];
		const char **p;

		snprintf(name, sizeof(name), "ncclProfiler_v%d", v);
		p = dlsym(lib, name);
		assert_non_null(p);
		assert_string_equal(*p, "ice");
	}
	assert_null(dlsym(lib, "ccl_emit")); /* internals stay hidden */
}

static void test_v5(void **state)
{
	struct plugin_v5 *pl = dlsym(lib, "ncclProfiler_v5");
	struct ice_event ev[16];
	struct nccl_descr_v5 d;
	void *ctx = NULL, *coll = NULL, *p2p = NULL, *px[3];
	int mask = 0;

	assert_int_equal(pl->init(&ctx, 0xabcdef, &mask, "c", 1, 8, 3, NULL), 0);
	assert_non_null(ctx);
	assert_int_equal(mask & 0xe, 0xe); /* coll, p2p, proxy ops */
	memset(&d, 0, sizeof(d));
	d.type = 1 << 1;
	d.rank = 3;
	d.coll.func = "AllReduce";
	d.coll.count = 1024;
	d.coll.datatype = "ncclBfloat16";
	d.coll.root = 0;
	assert_int_equal(pl->start(ctx, &coll, &d), 0);
	assert_non_null(coll);
	/* proxy ops under it: sends to 4, receives from 2 */
	for (int i = 0; i < 3; i++) {
		memset(&d, 0, sizeof(d));
		d.type = 1 << 3;
		d.parent = coll;
		d.proxy.peer = i == 2 ? 2 : 4;
		d.proxy.is_send = i != 2;
		assert_int_equal(pl->start(ctx, &px[i], &d), 0);
	}
	assert_int_equal(pl->stop(coll), 0); /* enqueued: not done yet */
	for (int i = 0; i < 3; i++)
		assert_int_equal(pl->stop(px[i]), 0);
	memset(&d, 0, sizeof(d));
	d.type = 1 << 2;
	d.p2p.func = "Send";
	d.p2p.count = 10;
	d.p2p.datatype = "ncclFloat64";
	d.p2p.peer = 7;
	assert_int_equal(pl->start(ctx, &p2p, &d), 0);
	assert_int_equal(pl->stop(p2p), 0);
	/* types not enabled and NULL handles are harmless */
	memset(&d, 0, sizeof(d));
	d.type = 1 << 9;
	assert_int_equal(pl->start(ctx, &p2p, &d), 0);
	assert_null(p2p);
	assert_int_equal(pl->stop(NULL), 0);
	assert_int_equal(pl->record(NULL, 0, NULL), 0);
	assert_int_equal(pl->finalize(ctx), 0);

	assert_int_equal(recv_all(ev, 16), 4);
	assert_int_equal(ev[0].kind, ICE_EV_COLL_START);
	assert_int_equal(ev[0].op, ICE_OP_ALLREDUCE);
	assert_true(ev[0].comm_id == 0xabcdef);
	assert_int_equal(ev[0].rank, 3);
	assert_int_equal(ev[0].nranks, 8);
	assert_int_equal(ev[0].count, 1024);
	assert_int_equal(ev[0].dtype, 9);
	assert_int_equal(ev[0].bytes, 2048);
	assert_string_equal(ev[0].lib, "nccl-prof");
	assert_int_equal(ev[1].kind, ICE_EV_COLL_END);
	assert_int_equal(ev[1].op, ICE_OP_ALLREDUCE);
	assert_int_equal(ev[1].next, 4);
	assert_int_equal(ev[1].prev, 2);
	assert_int_equal(ev[2].kind, ICE_EV_COLL_START);
	assert_int_equal(ev[2].op, ICE_OP_SEND);
	assert_int_equal(ev[2].peer, 7);
	assert_int_equal(ev[2].bytes, 80);
	assert_int_equal(ev[3].kind, ICE_EV_COLL_END); /* no proxy ops: ends at stop */
	assert_int_equal(ev[3].prev, -1);
}

static void test_v1(void **state)
{
	struct plugin_v1 *pl = dlsym(lib, "ncclProfiler_v1");
	struct ice_event ev[4];
	struct nccl_descr_v1 d;
	void *ctx = NULL, *h = NULL;
	int mask = 0;

	assert_int_equal(pl->init(&ctx, &mask), 0);
	memset(&d, 0, sizeof(d));
	d.type = 1 << 1;
	d.rank = 5;
	d.coll.comm_hash = 0x1234;
	d.coll.func = 3; /* ncclFuncReduceScatter */
	d.coll.count = 100;
	d.coll.datatype = 7;
	assert_int_equal(pl->start(ctx, &h, &d), 0);
	assert_int_equal(pl->stop(h), 0);
	assert_int_equal(pl->finalize(ctx), 0);
	assert_int_equal(recv_all(ev, 4), 2);
	assert_int_equal(ev[0].op, ICE_OP_REDUCESCATTER);
	assert_true(ev[0].comm_id == 0x1234);
	assert_int_equal(ev[0].rank, 5);
	assert_int_equal(ev[0].bytes, 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports),
		cmocka_unit_test(test_v5),
		cmocka_unit_test(test_v1),
	};
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tmo = {.tv_sec = 0, .tv_usec = 200000};
	const char *path = getenv("ICE_CCL_PROFILER");
	int ret;

	if (path == NULL) {
		printf("ICE_CCL_PROFILER not set: run through meson test\n");
		return 77;
	}
	snprintf(sock_path, sizeof(sock_path), "/tmp/ice-ccl-prof-%d.sock", (int)getpid());
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(sock_path);
	if (sock_fd < 0 || bind(sock_fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 1;
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	setenv("ICE_AGENT_SOCK", sock_path, 1);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		printf("%s\n", dlerror());
		return 1;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	close(sock_fd);
	unlink(sock_path);
	return ret;
}
