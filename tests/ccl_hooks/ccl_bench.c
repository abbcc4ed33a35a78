// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_bench: the cost of libice-ccl.so per hooked call, in ns, over the
 * fake libnccl (so only the hook is measured). Runs itself once per setup:
 *   direct      no preload (the peer to compare with)
 *   agent       preloaded, an agent draining the socket
 *   dead        preloaded, the agent socket path does not exist
 *   events=0    preloaded, events off
 *   sample=100  preloaded, 1 of 100 calls reported
 * usage: ccl_bench LIBICE_CCL_SO [calls]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ice_event.h"

int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
int ncclSend(const void *s, size_t n, int t, int peer, void *c, void *st);
int ncclGroupStart(void);
int ncclGroupEnd(void);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int child(long calls)
{
	char b[8];
	double t0, t1, t2;

	for (long i = 0; i < 1000; i++) /* warm up: resolve, init */
		ncclAllReduce(b, b, 1024, 7, 0, NULL, NULL);
	t0 = now_ns();
	for (long i = 0; i < calls; i++)
		ncclAllReduce(b, b, 1024, 7, 0, NULL, NULL);
	t1 = now_ns();
	for (long i = 0; i < calls / 4; i++) {
		ncclGroupStart();
		ncclSend(b, 1024, 7, 1, NULL, NULL);
		ncclSend(b, 1024, 7, 2, NULL, NULL);
		ncclGroupEnd();
	}
	t2 = now_ns();
	printf("%10.1f %14.1f\n", (t1 - t0) / calls, (t2 - t1) / (calls / 4 * 4));
	return 0;
}

static volatile int stop;
static int agent_fd;
static long received;

static void *agent(void *arg)
{
	struct ice_event buf[ICE_EVENT_PER_DGRAM];
	ssize_t n;

	while (!stop)
		if ((n = recv(agent_fd, buf, sizeof(buf), 0)) > 0)
			received += n / (ssize_t)sizeof(buf[0]); /* records packed per datagram */
	return NULL;
}

static void run(const char *self, const char *label, const char *preload, const char *env1,
		const char *env2, const char *calls)
{
	pid_t pid;
	int st;

	printf("%-12s", label);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (preload != NULL)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		if (env1 != NULL)
			putenv((char *)env1);
		if (env2 != NULL)
			putenv((char *)env2);
		execl(self, self, "--child", calls, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tmo = {.tv_sec = 0, .tv_usec = 50000};
	char sock_env[160], dead_env[] = "ICE_AGENT_SOCK=/nonexistent/ice-agent.sock";
	const char *calls = argc > 2 ? argv[2] : "2000000";
	pthread_t th;

	if (argc > 2 && strcmp(argv[1], "--child") == 0)
		return child(atol(argv[2]));
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBICE_CCL_SO [calls]\n", argv[0]);
		return 2;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/ice-ccl-bench-%d.sock", (int)getpid());
	snprintf(sock_env, sizeof(sock_env), "ICE_AGENT_SOCK=%s", a.sun_path);
	agent_fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	unlink(a.sun_path);
	if (agent_fd < 0 || bind(agent_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("agent socket");
		return 1;
	}
	setsockopt(agent_fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	pthread_create(&th, NULL, agent, NULL);
	printf("ns per call, %s calls, fake libnccl (hook cost only)\n", calls);
	printf("%-12s%10s %14s\n", "setup", "allreduce", "send-in-group");
	run(argv[0], "direct", NULL, NULL, NULL, calls);
	run(argv[0], "agent", argv[1], sock_env, NULL, calls);
	run(argv[0], "dead", argv[1], dead_env, NULL, calls);
	run(argv[0], "events=0", argv[1], sock_env, "ICE_CCL_EVENTS=0", calls);
	run(argv[0], "sample=100", argv[1], sock_env, "ICE_CCL_SAMPLE=100", calls);
	stop = 1;
	pthread_join(th, NULL);
	printf("agent received %ld events\n", received);
	unlink(a.sun_path);
	return 0;
}
