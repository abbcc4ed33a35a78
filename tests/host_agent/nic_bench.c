// SPDX-License-Identifier: Apache-2.0
/*
 * nic_bench: the CPU the real ice-agent uses with the NIC backend (backend
 * mlx5) on a fixture of 8 ports and 1,000 QPs at a 100 ms interval,
 * publishing to a real redis-server; target: under 3 % of a core.
 *
 *   nic_bench ICE_AGENT [SECONDS] [REPEATS] [ONLY_CHANGED]
 *
 * Each scenario moves the fixture's counters every 100 ms (all port
 * counters and ethtool statistics; the bound counters of 0, 100 or all
 * 1,000 QPs) and reads the agent's utime + stime from /proc/<pid>/stat
 * over SECONDS (default 10); REPEATS (default 3) runs, the median printed,
 * with the Redis commands per interval the agent sent.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nic_fixture.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	/* fields 14 and 15 (utime, stime) after "pid (comm)" */
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long long redis_cmds(const char *sock)
{
	redisContext *c = redisConnectUnix(sock);
	redisReply *r;
	long long n = -1;
	char *p;

	if (c == NULL || c->err) {
		if (c != NULL)
			redisFree(c);
		return -1;
	}
	r = redisCommand(c, "INFO stats");
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, "total_commands_processed:")) != NULL)
		n = atoll(p + strlen("total_commands_processed:"));
	if (r != NULL)
		freeReplyObject(r);
	redisFree(c);
	return n;
}

static pid_t spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		FILE *f = fopen(log, "w");

		if (f != NULL) {
			dup2(fileno(f), 1);
			dup2(fileno(f), 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ice-nicbench-XXXXXX", root[300], run[300], sock[300], redis[320],
	     log[300];
	unsigned secs = argc > 2 ? (unsigned)atoi(argv[2]) : 10;
	unsigned reps = argc > 3 ? (unsigned)atoi(argv[3]) : 3;
	static const unsigned changed[] = {0, 100, 1000};
	struct nic_fixture f;
	pid_t rpid, apid;
	int ret = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ICE_AGENT [SECONDS] [REPEATS]\n", argv[0]);
		return 2;
	}
	if (access("/usr/bin/redis-server", X_OK) != 0) {
		printf("SKIP: no redis-server\n");
		return 77;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(root, sizeof(root), "%s/sys", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
	snprintf(redis, sizeof(redis), "unix:%s", sock);
	if (nic_fixture_make(&f, root, NIC_FIXTURE_UPSTREAM, 8, 1000) != 0) {
		fprintf(stderr, "cannot build the fixture\n");
		goto out_dir;
	}
	snprintf(log, sizeof(log), "%s/redis.log", dir);
	{
		char *ra[] = {"redis-server", "--port", "0", "--unixsocket",
			      sock,	      "--save", "",  "--appendonly",
			      "no",	      "--dir",	dir, NULL};

		rpid = spawn(ra, log);
	}
	for (int i = 0; i < 50 && access(sock, F_OK) != 0; i++)
		usleep(100000);
	snprintf(log, sizeof(log), "%s/agent.log", dir);
	{
		char *aa[] = {argv[1],	    "--nic",	    f.ifname,	 "--addr",	 "10.9.0.1",
			      "--backend",  "mlx5",	    "--sysroot", root,		 "--nic-io",
			      "replay",	    "--run-dir",    run,	 "--redis",	 redis,
			      "--interval", "100ms",	    "--fabric",	 "icebench",	 "--host",
			      "icebench",   "--epoch-file", "none",	 "--stream-cap", "100",
			      NULL};

		mkdir(run, 0755);
		setenv("ICE_LOG", "warn", 1);
		apid = spawn(aa, log);
	}
	sleep(2);
	if (kill(apid, 0) != 0 || waitpid(apid, NULL, WNOHANG) != 0) {
		fprintf(stderr, "ice-agent did not start (see %s)\n", log);
		goto out;
	}
	printf("nic_bench: ice-agent, backend mlx5, fixture of 8 ports, 1000 QPs, %zu device "
	       "counters watched, 100 ms interval, %u s per run, median of %u\n",
	       (size_t)8 * (21 + 29) + 85, secs, reps);
	for (size_t s = 0; s < sizeof(changed) / sizeof(changed[0]); s++) {
		double pct[16], cmds[16];

		if (argc > 4 && (unsigned)atoi(argv[4]) != changed[s])
			continue;
		for (unsigned r = 0; r < reps && r < 16; r++) {
			double t0 = now_s(), c0 = cpu_s(apid), next = t0;
			long long k0 = redis_cmds(sock), k1;

			while (now_s() < t0 + secs) {
				nic_fixture_tick(&f, changed[s]);
				next += 0.1;
				while (now_s() < next)
					usleep(2000);
			}
			k1 = redis_cmds(sock);
			pct[r] = (cpu_s(apid) - c0) * 100.0 / (now_s() - t0);
			cmds[r] = (double)(k1 - k0) / (secs * 10.0);
		}
		qsort(pct, reps, sizeof(double), dcmp);
		qsort(cmds, reps, sizeof(double), dcmp);
		printf("  %4u of 1000 QPs changing: agent CPU %.2f %% of a core (runs %.2f..%.2f; "
		       "target < 3 %%: %s), %.0f Redis commands per interval\n",
		       changed[s], pct[reps / 2], pct[0], pct[reps - 1],
		       pct[reps / 2] < 3.0 ? "met" : "MISSED", cmds[reps / 2]);
	}
	ret = 0;
out:
	kill(apid, SIGTERM);
	waitpid(apid, NULL, 0);
	kill(rpid, SIGTERM);
	waitpid(rpid, NULL, 0);
	nic_fixture_remove(&f);
out_dir : {
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}
	return ret;
}
