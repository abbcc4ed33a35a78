// SPDX-License-Identifier: Apache-2.0
/*
 * ice-agent against a real redis-server (integration).
 *
 * A private redis-server (TCP port picked free, unix socket and AOF in a
 * temp dir), the real ice-agent binary with --no-bpf on loopback (the QP
 * address is made up, unique per test run), and this program as a fake
 * transport: it claims slots in the agent's control block and bumps their
 * counters (the part a real transport does on RDMA NICs we do not have
 * here), and sends collective events and malformed datagrams to the agent's
 * socket. Checks the keys of docs/redis-schema.md with redis-cli; kills
 * redis-server for a few intervals and restarts it (no interval may be
 * missing afterwards); a second agent is refused; SIGTERM cleans up.
 *
 * Needs root (the agent's default paths) and redis-server; exits 77
 * otherwise. Everything it starts is killed by PID, also on failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_ctrl.h"
#include "ice_event.h"
#include "ice_time.h"

static char dir[64] = "";
static char addr[16], fabric[32], host[32], sock_path[100], redis_port[8], metrics_port[8];
static pid_t redis_pid = -1, agent_pid = -1;
static const char *agent_bin;
static struct ice_ctrl *ctrl;
static int slot = -1;
static volatile int ticking; /* the fake transport's traffic thread runs */
static pthread_t ticker;

/* ---- processes */

/* Start argv with its output into log; in network namespace netns when not
 * NULL (setns only: unlike ip netns exec, /sys and so bpffs stay the host's). */
static pid_t spawn_in(const char *netns, const char *const *argv, const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (netns != NULL) {
			char path[64];
			int nsfd;

			snprintf(path, sizeof(path), "/var/run/netns/%s", netns);
			nsfd = open(path, O_RDONLY);
			if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
				_exit(126);
		}

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static pid_t spawn(const char *const *argv, const char *log)
{
	return spawn_in(NULL, argv, log);
}

static void stop_pid(pid_t *pid, int sig)
{
	if (*pid <= 0)
		return;
	kill(*pid, sig);
	waitpid(*pid, NULL, 0);
	*pid = -1;
}

/* Run argv, return its stdout (trimmed, malloc'ed) and exit status. */
static char *run_out(const char *const *argv, int *status)
{
	int p[2];
	char *buf = calloc(1, 1 << 20);
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(p[1], 1);
		if (devnull >= 0)
			dup2(devnull, 2);
		close(p[0]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], buf + len, (1 << 20) - 1 - len)) > 0)
		len += (size_t)n;
	close(p[0]);
	waitpid(pid, status, 0);
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	buf[len] = '\0';
	return buf;
}

/* redis-cli -p PORT args... ; NULL-terminated; malloc'ed output */
static char *rcli(const char *a0, ...)
{
	const char *argv[32] = {"redis-cli", "-p", redis_port, "--raw", a0};
	int argc = 5, st;
	va_list ap;

	va_start(ap, a0);
	while (argc < 31 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return run_out(argv, &st);
}

static long rcli_long(const char *a0, const char *a1, const char *a2)
{
	char *s = rcli(a0, a1, a2, NULL);
	long v = strtol(s, NULL, 10);

	free(s);
	return v;
}

static const char *key(const char *fmt, ...)
{
	static char bufs[4][256];
	static int i;
	char *b = bufs[i++ % 4];
	int n = snprintf(b, 256, "ice:%s:{%s}:", fabric, host);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, 256 - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static bool redis_ready(void)
{
	for (int i = 0; i < 100; i++) {
		char *s = rcli("PING", NULL);
		bool ok = strcmp(s, "PONG") == 0;

		free(s);
		if (ok)
			return true;
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	return false;
}

static void redis_start(void)
{
	char log[128], sock[128];
	const char *argv[] = {
		"redis-server", "--port",	 redis_port, "--bind", "127.0.0.1", "--unixsocket",
		sock,		"--dir",	 dir,	     "--save", "",	    "--appendonly",
		"yes",		"--appendfsync", "always",   NULL};

	snprintf(log, sizeof(log), "%s/redis.log", dir);
	snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
	redis_pid = spawn(argv, log);
	assert_true(redis_pid > 0);
	assert_true(redis_ready());
}

static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &l);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static void agent_start(void)
{
	char log[128], redis[64];
	const char *argv[] = {agent_bin,
			      "--nic",
			      "lo",
			      "--addr",
			      addr,
			      "--no-bpf",
			      "--run-dir",
			      dir,
			      "--redis",
			      redis,
			      "--fabric",
			      fabric,
			      "--host",
			      host,
			      "--interval",
			      "200ms",
			      "--buffer",
			      "100",
			      "--metrics-port",
			      metrics_port,
			      "--redis-timeout",
			      "100",
			      NULL};

	snprintf(log, sizeof(log), "%s/agent.log", dir);
	snprintf(redis, sizeof(redis), "127.0.0.1:%s", redis_port);
	agent_pid = spawn(argv, log);
	assert_true(agent_pid > 0);
	for (int i = 0; i < 100 && access(sock_path, F_OK) != 0; i++)
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	assert_int_equal(access(sock_path, F_OK), 0);
}

/* ---- fixture */

static void netns_down(void);
static char bpf_addr_a[16];

static int setup(void **state)
{
	int st;
	const char *which[] = {"sh", "-c", "command -v redis-server && command -v redis-cli", NULL};
	char *out;

	agent_bin = getenv("ICE_AGENT");
	if (geteuid() != 0) {
		printf("skipped: needs root (the agent's /run and /dev/shm paths)\n");
		exit(77);
	}
	out = run_out(which, &st);
	free(out);
	if (st != 0) {
		printf("skipped: redis-server / redis-cli not installed\n");
		exit(77);
	}
	if (agent_bin == NULL) {
		printf("skipped: ICE_AGENT (path of ice-agent) not set\n");
		exit(77);
	}
	snprintf(dir, sizeof(dir), "/tmp/iceAG%d.XXXXXX", (int)getpid());
	assert_non_null(mkdtemp(dir));
	snprintf(addr, sizeof(addr), "127.77.%d.%d", (getpid() >> 8) & 255, getpid() & 255);
	snprintf(fabric, sizeof(fabric), "iceAG%d", (int)getpid());
	snprintf(host, sizeof(host), "icehost%d", (int)getpid());
	snprintf(sock_path, sizeof(sock_path), "%s/agent-%s.sock", dir, addr);
	snprintf(redis_port, sizeof(redis_port), "%d", free_port());
	snprintf(metrics_port, sizeof(metrics_port), "%d", free_port());
	redis_start();
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	stop_pid(&agent_pid, SIGKILL);
	stop_pid(&redis_pid, SIGKILL);
	if (ticking) {
		ticking = 0;
		pthread_join(ticker, NULL);
	}
	if (ctrl != NULL) {
		if (slot >= 0)
			ice_ctrl_release(ctrl, slot);
		ice_ctrl_close(ctrl);
	}
	ice_ctrl_unlink(addr);
	if (bpf_addr_a[0] != '\0')
		ice_ctrl_unlink(bpf_addr_a);
	netns_down();
	if (dir[0] != '\0' && getenv("ICE_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return 0;
}

/* ---- the fake transport */

static struct ice_event_tx *tx;

static void *ticker_main(void *arg);

static void transport_start(void)
{
	struct ice_ctrl_qp *q;

	setenv("ICE_AGENT_SOCK", sock_path, 1);
	setenv("ICE_JOB", "train-llama-70b-longer-than-16", 1); /* cut to 16 */
	tx = ice_event_tx_open(addr, "ice-test");
	unsetenv("ICE_JOB");
	assert_non_null(tx);
	ctrl = ice_ctrl_open(addr, NULL);
	assert_non_null(ctrl);
	slot = ice_ctrl_claim(ctrl, 17);
	assert_true(slot >= 0);
	q = &ctrl->qp[slot];
	q->rqpn = 33;
	inet_pton(AF_INET, addr, &q->local_ip);
	inet_pton(AF_INET, "127.77.0.2", &q->remote_ip);
	q->sport_now = 49999;
	ticking = 1;
	assert_int_equal(pthread_create(&ticker, NULL, ticker_main, NULL), 0);
}

/* One "interval" of traffic: counters go up. */
static void transport_tick(void)
{
	struct ice_ctrl_qp *q = &ctrl->qp[slot];

	__atomic_add_fetch(&q->tx_bytes, 1000000, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->tx_pkts, 250, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->rx_bytes, 10000, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->rx_pkts, 250, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->ce_rx, 3, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->cnps_tx, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->cnps_rx, 2, __ATOMIC_RELAXED);
}

/* The transport's traffic runs on its own thread, as in a real process. */
static void *ticker_main(void *arg)
{
	while (ticking) {
		transport_tick();
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	return NULL;
}

static void traffic_for(uint64_t ns)
{
	ice_sleep_ns(ns);
}

static void send_coll(enum ice_ev_kind kind, enum ice_coll_op op, uint64_t bytes)
{
	struct ice_event ev = {.kind = (uint16_t)kind,
			       .op = op,
			       .comm_id = 0xabcdef,
			       .rank = 1,
			       .nranks = 4,
			       .count = bytes / 4,
			       .bytes = bytes,
			       .dtype = 7,
			       .root = -1,
			       .peer = -1,
			       .prev = 0,
			       .next = 2};

	assert_int_equal(ice_event_send(tx, &ev), 0);
}

static void send_raw(const void *p, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	assert_true(sendto(fd, p, len, 0, (struct sockaddr *)&sa, sizeof(sa)) == (ssize_t)len);
	close(fd);
}

static char *http_get(const char *path)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)atoi(metrics_port))};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char req[128], *buf = calloc(1, 1 << 20);
	size_t len = 0;
	ssize_t n;

	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	assert_int_equal(write(fd, req, (size_t)n), n);
	while ((n = read(fd, buf + len, (1 << 20) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return buf;
}

/* The "seq" of every entry of a stream, in stream order. */
static size_t stream_seqs(const char *k, long *seq, size_t max)
{
	const char *argv[] = {"redis-cli", "-p", redis_port, "--raw", "XRANGE", k, "-", "+", NULL};
	char *out, *line, *save = NULL;
	size_t n = 0;
	int st;

	out = run_out(argv, &st);
	for (line = strtok_r(out, "\n", &save); line != NULL && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		json_t *o;

		if (line[0] != '{')
			continue;
		o = json_loads(line, 0, NULL);
		if (o != NULL)
			seq[n++] = (long)json_integer_value(json_object_get(o, "seq"));
		json_decref(o);
	}
	free(out);
	return n;
}

/* ---- the test, in steps that build on each other */

static void test_agent_redis(void **state)
{
	char *s, log[128], qk[64], *m;
	struct ice_event bad;
	long seqs[4096], last_before;
	size_t n;
	int st;

	snprintf(log, sizeof(log), "%s/agent.log", dir);
	agent_start();
	transport_start();

	/* events: good ones, and malformed ones that are counted and dropped */
	send_coll(ICE_EV_COMM_INIT, 0, 0);
	send_coll(ICE_EV_COLL_START, ICE_OP_ALLREDUCE, 1 << 20);
	send_coll(ICE_EV_COLL_END, ICE_OP_ALLREDUCE, 1 << 20);
	memset(&bad, 0, sizeof(bad));
	bad.magic = 0xdeadbeef;
	bad.version = ICE_EVENT_VERSION;
	bad.kind = ICE_EV_COLL_START;
	send_raw(&bad, sizeof(bad));
	send_raw("short", 5);
	{
		/* two records packed in one datagram (send_many), and a datagram
		 * of one and a half records: counted as one malformed */
		struct ice_event two[2] = {{.kind = ICE_EV_COLL_START, .op = ICE_OP_BROADCAST},
					   {.kind = ICE_EV_COLL_END, .op = ICE_OP_BROADCAST}};
		char half[sizeof(two[0]) * 3 / 2];

		assert_int_equal(ice_event_send_many(tx, two, 2), 2);
		memcpy(half, &two[0], sizeof(half));
		send_raw(half, sizeof(half));
	}
	traffic_for(1500 * ICE_NSEC_PER_MSEC);

	/* registration and liveness */
	s = rcli("GET", key("nic:lo:alive") + 0, NULL);
	assert_non_null(strstr(s, "\"pid\""));
	free(s);
	{
		char k[96];

		snprintf(k, sizeof(k), "ice:%s:hosts", fabric);
		assert_int_equal(rcli_long("SISMEMBER", k, host), 1);
		snprintf(k, sizeof(k), "ice:%s:schema", fabric);
		s = rcli("GET", k, NULL);
		assert_string_equal(s, "1");
		free(s);
	}
	assert_true(rcli_long("PTTL", key("nic:lo:alive"), NULL) > 0);
	s = rcli("HGET", key("nic:lo:agent"), "state", NULL);
	assert_string_equal(s, "online");
	free(s);
	s = rcli("HGET", key("nic:lo:agent"), "addr", NULL);
	assert_string_equal(s, addr);
	free(s);

	/* a QP that goes away is marked closed (the controller drops it at
	 * once), with the counters of its last sample kept */
	{
		int s2 = ice_ctrl_claim(ctrl, 18);
		long ts, closed;

		assert_true(s2 >= 0);
		ctrl->qp[s2].rqpn = 34;
		inet_pton(AF_INET, addr, &ctrl->qp[s2].local_ip);
		inet_pton(AF_INET, "127.77.0.3", &ctrl->qp[s2].remote_ip);
		ctrl->qp[s2].tx_bytes = 4242;
		snprintf(qk, sizeof(qk), "qp:%s:18", addr);
		/* published (up to 5 s: a loaded machine delays the agent) */
		for (int i = 0; i < 100 && rcli_long("HEXISTS", key("%s", qk), "ts_ms") == 0; i++)
			traffic_for(50 * ICE_NSEC_PER_MSEC);
		assert_int_equal(rcli_long("HEXISTS", key("%s", qk), "closed_ms"), 0);
		ice_ctrl_release(ctrl, s2);
		for (int i = 0; i < 100 && rcli_long("HEXISTS", key("%s", qk), "closed_ms") == 0;
		     i++)
			traffic_for(50 * ICE_NSEC_PER_MSEC);
		ts = rcli_long("HGET", key("%s", qk), "ts_ms");
		closed = rcli_long("HGET", key("%s", qk), "closed_ms");
		assert_true(ts > 0 && closed >= ts);
		assert_int_equal(rcli_long("HGET", key("%s", qk), "tx_bytes"), 4242);
	}

	/* per-QP stream and hash */
	snprintf(qk, sizeof(qk), "qp:%s:17", addr);
	assert_true(rcli_long("XLEN", key("%s:ts", qk), NULL) >= 5);
	s = rcli("HGET", key("%s", qk), "rqpn", NULL);
	assert_string_equal(s, "33");
	free(s);
	assert_true(rcli_long("HGET", key("%s", qk), "tx_bytes") >= 5000000);
	assert_true(rcli_long("ZSCORE", key("qps"), qk + 3) > 0);
	/* rates agree with the counters: rate * dt == delta of two entries */
	{
		const char *argv[] = {
			"redis-cli", "-p", redis_port, "--raw", "XREVRANGE", key("%s:ts", qk),
			"+",	     "-",  "COUNT",    "2",	NULL};
		char *out = run_out(argv, &st), *l1, *l2, *save = NULL;
		json_t *a, *b;
		double dt, rate, delta;

		strtok_r(out, "\n", &save);
		strtok_r(NULL, "\n", &save);
		l1 = strtok_r(NULL, "\n", &save);
		strtok_r(NULL, "\n", &save);
		strtok_r(NULL, "\n", &save);
		l2 = strtok_r(NULL, "\n", &save);
		assert_non_null(l1);
		assert_non_null(l2);
		a = json_loads(l1, 0, NULL);
		b = json_loads(l2, 0, NULL);
		assert_non_null(a);
		assert_non_null(b);
		dt = json_real_value(json_object_get(a, "dt"));
		rate = json_number_value(json_object_get(json_object_get(a, "rate"), "tx_bytes"));
		delta = (double)(json_integer_value(json_object_get(a, "tx_bytes")) -
				 json_integer_value(json_object_get(b, "tx_bytes")));
		assert_true(dt > 0.1 && dt < 0.5);
		assert_true(rate > 0);
		assert_true(rate * dt > delta * 0.99 && rate * dt < delta * 1.01);
		assert_int_equal(json_integer_value(json_object_get(a, "seq")),
				 json_integer_value(json_object_get(b, "seq")) + 1);
		json_decref(a);
		json_decref(b);
		free(out);
	}
	/* NIC summary */
	assert_int_equal(rcli_long("HGET", key("nic:lo"), "qps"), 1);
	assert_true(rcli_long("XLEN", key("nic:lo:ts"), NULL) >= 5);

	/* the collective events stream */
	assert_int_equal(rcli_long("XLEN", key("events"), NULL), 5);
	s = rcli("XRANGE", key("events"), "-", "+", NULL);
	assert_non_null(strstr(s, "\"kind\":\"coll_start\""));
	assert_non_null(strstr(s, "\"op\":\"allreduce\""));
	assert_non_null(strstr(s, "\"comm\":\"0000000000abcdef\""));
	assert_non_null(strstr(s, "\"lib\":\"ice-test\""));
	assert_non_null(strstr(s, "\"job\":\"train-llama-70b-\""));
	free(s);

	/* a collective the host has not run lately (here: at another
	 * power-of-two size) ends the interval early, 5 ms after the last
	 * sample, so the controller sees it within milliseconds instead of up
	 * to an interval (200 ms) later; the early sample starts a new
	 * interval, so without that each of the later tries would wait ~200 ms */
	for (int k = 0; k < 4; k++) {
		long n0 = rcli_long("XLEN", key("events"), NULL), n1 = n0;
		uint64_t t0 = ice_now_ns(), dt;

		send_coll(ICE_EV_COLL_START, ICE_OP_ALLTOALL, (uint64_t)1 << (21 + k));
		while (n1 == n0 && ice_now_ns() - t0 < ICE_NSEC_PER_SEC) {
			ice_sleep_ns(2 * ICE_NSEC_PER_MSEC);
			n1 = rcli_long("XLEN", key("events"), NULL);
		}
		dt = ice_now_ns() - t0;
		print_message("new collective %d in Redis after %.1f ms\n", k, (double)dt / 1e6);
		assert_int_equal(n1, n0 + 1);
		assert_true(dt < 100 * ICE_NSEC_PER_MSEC);
	}

	/* /metrics */
	m = http_get("/metrics");
	assert_non_null(strstr(m, "HTTP/1.0 200 OK"));
	assert_non_null(strstr(m, "ice_agent_events_malformed_total{host=\""));
	assert_non_null(strstr(m, "nic=\"lo\"} 3\n"));
	assert_non_null(strstr(m, "ice_agent_redis_up{"));
	assert_non_null(strstr(m, "ice_agent_cpu_seconds_total{"));
	assert_non_null(strstr(m, "ice_qp_tx_bytes_total{"));
	assert_non_null(strstr(m, "ice_nic_cnp_received_per_second{"));
	free(m);
	m = http_get("/nothing");
	assert_non_null(strstr(m, "404"));
	free(m);

	/* a second agent on the same NIC is refused */
	{
		char redis[64], want[96];
		const char *argv[] = {agent_bin,   "--nic", "lo",      "--addr", addr, "--no-bpf",
				      "--run-dir", dir,	    "--redis", redis,	 NULL};
		char log2[128];
		pid_t p;

		snprintf(redis, sizeof(redis), "127.0.0.1:%s", redis_port);
		snprintf(log2, sizeof(log2), "%s/agent2.log", dir);
		p = spawn(argv, log2);
		waitpid(p, &st, 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
		snprintf(want, sizeof(want), "another ice-agent (pid %d) already runs on NIC lo",
			 (int)agent_pid);
		assert_true(file_has(log2, want));
	}
	/* --once beside it reads the control block */
	{
		const char *argv[] = {agent_bin, "--nic",      "lo",	    "--addr",
				      addr,	 "--no-bpf",   "--run-dir", dir,
				      "--once",	 "--interval", "100ms",	    NULL};
		char *out = run_out(argv, &st);
		json_t *o = json_loads(out, 0, NULL);

		assert_int_equal(st, 0);
		assert_non_null(o);
		assert_int_equal(json_array_size(json_object_get(o, "qps")), 1);
		assert_true(json_is_object(
			json_object_get(json_array_get(json_object_get(o, "qps"), 0), "rate")));
		json_decref(o);
		free(out);
	}

	/* Redis goes away for a few intervals; the agent keeps sampling */
	n = stream_seqs(key("nic:lo:ts"), seqs, 4096);
	assert_true(n > 0);
	last_before = seqs[n - 1];
	stop_pid(&redis_pid, SIGKILL);
	traffic_for(400 * ICE_NSEC_PER_MSEC);
	send_coll(ICE_EV_COLL_START, ICE_OP_ALLGATHER, 4096); /* arrives while Redis is away */
	traffic_for(1200 * ICE_NSEC_PER_MSEC);
	assert_int_equal(kill(agent_pid, 0), 0); /* still alive */
	{
		char want[96];

		snprintf(want, sizeof(want), "redis at 127.0.0.1:%s unreachable: ", redis_port);
		assert_true(file_has(log, want));
		assert_true(file_has(log, "; retrying in "));
	}
	redis_start();
	/* the queue drains within the back-off (<= 8 s) plus a few intervals */
	for (int i = 0; i < 100; i++) {
		traffic_for(100 * ICE_NSEC_PER_MSEC);
		n = stream_seqs(key("nic:lo:ts"), seqs, 4096);
		if (n > 0 && seqs[n - 1] >= last_before + 12)
			break;
	}
	assert_true(n > 0 && seqs[n - 1] >= last_before + 12);
	/* every interval is there, in order: nothing lost within the bound */
	assert_int_equal(seqs[0], 1);
	for (size_t i = 1; i < n; i++)
		if (seqs[i] != seqs[i - 1] + 1)
			fail_msg("interval %ld follows %ld in the NIC stream", seqs[i],
				 seqs[i - 1]);
	s = rcli("XRANGE", key("events"), "-", "+", NULL);
	assert_non_null(strstr(s, "\"op\":\"allgather\""));
	free(s);
	s = rcli("HGET", key("nic:lo:agent"), "state", NULL);
	assert_string_equal(s, "online");
	free(s);

	/* SIGTERM: clean exit, socket gone, host offline */
	kill(agent_pid, SIGTERM);
	waitpid(agent_pid, &st, 0);
	agent_pid = -1;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_not_equal(access(sock_path, F_OK), 0);
	s = rcli("HGET", key("nic:lo:agent"), "state", NULL);
	assert_string_equal(s, "offline");
	free(s);
	assert_int_equal(rcli_long("EXISTS", key("nic:lo:alive"), NULL), 0);
	/* the transport still holds a slot: the block stays for the next agent */
	{
		char p[96];

		snprintf(p, sizeof(p), ICE_CTRL_PATH_FMT, addr);
		assert_int_equal(access(p, F_OK), 0);
	}
	ice_event_tx_close(tx);
}

/* ---- with the BPF programs: two namespaces joined by a veth pair */

static char ns_a[32], ns_b[32], bpf_addr_b[16], pin_dir[64];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void netns_down(void)
{
	if (ns_a[0] != '\0') {
		sh("ip netns del %s 2>/dev/null", ns_a);
		sh("ip netns del %s 2>/dev/null", ns_b);
	}
	if (pin_dir[0] != '\0')
		sh("rm -rf '%s'", pin_dir);
}

/* From namespace ns, n RoCEv2 SEND_ONLY packets (256 B payload) to dst:4791 for dqpn. */
static void roce_send(const char *ns, const char *dst, uint32_t dqpn, int n)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char path[64];
		uint8_t pkt[12 + 256 + 4] = {0};
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(4791)};
		int nsfd, fd;

		snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
		nsfd = open(path, O_RDONLY);
		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
			_exit(1);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		inet_pton(AF_INET, dst, &sa.sin_addr);
		pkt[0] = 0x04; /* RC SEND_ONLY */
		pkt[2] = 0xff; /* P_Key 0xffff */
		pkt[3] = 0xff;
		pkt[5] = (uint8_t)(dqpn >> 16);
		pkt[6] = (uint8_t)(dqpn >> 8);
		pkt[7] = (uint8_t)dqpn;
		for (int i = 0; i < n; i++) {
			pkt[9] = (uint8_t)(i >> 16);
			pkt[10] = (uint8_t)(i >> 8);
			pkt[11] = (uint8_t)i;
			if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				_exit(2);
		}
		_exit(0);
	}
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_agent_bpf(void **state)
{
	char log[128], redis[128], nic[16], run_dir[96], qk[160], hostb[32], *s;
	const char *argv[] = {agent_bin, "--nic",     nic,     "--run-dir", run_dir, "--redis",
			      redis,	 "--fabric",  fabric,  "--host",    hostb,   "--interval",
			      "200ms",	 "--pin-dir", pin_dir, NULL};
	struct ice_ctrl *c;
	pid_t pid;
	int sl, st, x = getpid() & 255;

	if (getenv("ICE_AGENT_BPF") == NULL || strcmp(getenv("ICE_AGENT_BPF"), "1") != 0) {
		printf("skipped: ice-agent was built without the BPF programs\n");
		skip();
	}
	snprintf(ns_a, sizeof(ns_a), "iceAG%da", (int)getpid());
	snprintf(ns_b, sizeof(ns_b), "iceAG%db", (int)getpid());
	snprintf(nic, sizeof(nic), "iceAG%d", (int)getpid());
	snprintf(bpf_addr_a, sizeof(bpf_addr_a), "10.78.%d.1", x);
	snprintf(bpf_addr_b, sizeof(bpf_addr_b), "10.78.%d.2", x);
	snprintf(pin_dir, sizeof(pin_dir), "/sys/fs/bpf/iceAG%d", (int)getpid());
	snprintf(run_dir, sizeof(run_dir), "%s/bpf", dir);
	snprintf(redis, sizeof(redis), "unix:%s/redis.sock", dir); /* not reachable by TCP */
	snprintf(hostb, sizeof(hostb), "icebpf%d", (int)getpid());
	snprintf(log, sizeof(log), "%s/agent-bpf.log", dir);
	assert_int_equal(sh("ip netns add %s && ip netns add %s && "
			    "ip link add %s netns %s type veth peer name %sb netns %s && "
			    "ip -n %s addr add %s/24 dev %s && ip -n %s link set %s up && "
			    "ip -n %s addr add %s/24 dev %sb && ip -n %s link set %sb up",
			    ns_a, ns_b, nic, ns_a, nic, ns_b, ns_a, bpf_addr_a, nic, ns_a, nic,
			    ns_b, bpf_addr_b, nic, ns_b, nic),
			 0);
	/* the agent in namespace a; addr defaults to the NIC's address */
	pid = spawn_in(ns_a, argv, log);
	agent_pid = pid;
	for (int i = 0; i < 200 && access(pin_dir, F_OK) != 0; i++)
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	ice_sleep_ns(300 * ICE_NSEC_PER_MSEC);
	assert_int_equal(kill(pid, 0), 0);
	c = ice_ctrl_open(bpf_addr_a, NULL);
	assert_non_null(c);
	sl = ice_ctrl_claim(c, 17);
	assert_true(sl >= 0);
	c->qp[sl].rqpn = 33;
	inet_pton(AF_INET, bpf_addr_a, &c->qp[sl].local_ip);
	inet_pton(AF_INET, bpf_addr_b, &c->qp[sl].remote_ip);
	c->qp[sl].tx_bytes = 1; /* the transport's own numbers: BPF's replace them */

	roce_send(ns_a, bpf_addr_b, 33, 100); /* egress of QP 17 */
	roce_send(ns_b, bpf_addr_a, 17, 50);  /* ingress of QP 17 */
	roce_send(ns_a, bpf_addr_b, 77, 7);   /* a flow no QP claims */
	ice_sleep_ns(800 * ICE_NSEC_PER_MSEC);

	snprintf(qk, sizeof(qk), "ice:%s:{%s}:qp:%s:17", fabric, hostb, bpf_addr_a);
	s = rcli("HGET", qk, "src", NULL);
	assert_non_null(strstr(s, "bpf"));
	assert_non_null(strstr(s, "ctrl"));
	free(s);
	assert_int_equal(rcli_long("HGET", qk, "tx_pkts"), 100);
	assert_int_equal(rcli_long("HGET", qk, "rx_pkts"), 50);
	assert_int_equal(rcli_long("HGET", qk, "tx_bytes"), 100 * (20 + 8 + 272));
	assert_int_equal(rcli_long("HGET", qk, "retx"), 0);
	snprintf(qk, sizeof(qk), "ice:%s:{%s}:qp:%s>%s:tx:77", fabric, hostb, bpf_addr_a,
		 bpf_addr_b);
	assert_int_equal(rcli_long("HGET", qk, "tx_pkts"), 7);

	/* SIGTERM: the programs leave the NIC, the pins go */
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	agent_pid = -1;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_not_equal(
		sh("ip netns exec %s bpftool net show dev %s | grep -q ice_host", ns_a, nic), 0);
	assert_int_not_equal(sh("ls %s/ice_host_flows >/dev/null 2>&1", pin_dir), 0);
	ice_ctrl_release(c, sl);
	ice_ctrl_close(c);
	ice_ctrl_unlink(bpf_addr_a);
	netns_down();
}

/* A failed test leaves its agent running: stop it before the next test
 * starts its own (the group teardown only knows the last one). */
static int stop_agent(void **state)
{
	(void)state;
	stop_pid(&agent_pid, SIGKILL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_agent_redis, stop_agent),
		cmocka_unit_test_teardown(test_agent_bpf, stop_agent),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
