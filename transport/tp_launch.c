// SPDX-License-Identifier: Apache-2.0
#include "tp_launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

#define MAX_RANKS 4096

int tp_launch_local_addr(struct in_addr *out)
{
	struct ifaddrs *ifa, *i;
	int ret = -ENOENT;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
			continue;
		*out = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

int tp_launch_enter_netns(const char *tool, const char *name)
{
	char path[256];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "%s: network namespace '%s': %s (see `ip netns list`)\n", tool,
			name, strerror(-err));
		return err;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		err = -errno;
		fprintf(stderr, "%s: cannot enter namespace '%s': %s\n", tool, name,
			strerror(-err));
	}
	close(fd);
	return err;
}

int tp_launch_parse_addr(const char *tool, const char *flag, const char *s, struct in_addr *out)
{
	if (inet_pton(AF_INET, s, out) != 1) {
		fprintf(stderr, "%s: %s '%s': expected an IPv4 address\n", tool, flag, s);
		return -EINVAL;
	}
	return 0;
}

int tp_launch_listen(struct in_addr addr, char *bootstrap, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr};
	socklen_t salen = sizeof(sa);
	char a[INET_ADDRSTRLEN];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	inet_ntop(AF_INET, &addr, a, sizeof(a));
	snprintf(bootstrap, len, "%s:%u", a, ntohs(sa.sin_port));
	return fd;
}

/* Rank 0's rendezvous, opened inside its namespace. */
static int rendezvous_in_netns(const struct tp_launch *l, const char *ns, struct tp_comm_cfg *cc)
{
	struct in_addr a;
	int self, fd;

	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	fd = tp_launch_enter_netns(l->tool, ns);
	if (fd == 0) {
		fd = tp_launch_local_addr(&a);
		if (fd < 0)
			fprintf(stderr, "%s: namespace %s has no IPv4 address\n", l->tool, ns);
		else
			fd = tp_launch_listen(a, cc->bootstrap, sizeof(cc->bootstrap));
	}
	if (setns(self, CLONE_NEWNET) < 0 && fd >= 0) {
		close(fd);
		fd = -errno;
	}
	close(self);
	return fd;
}

int tp_launch_ranks(const struct tp_launch *l, struct tp_comm_cfg *cc, int (*fn)(void *arg),
		    void *arg)
{
	static char *names[MAX_RANKS];
	static pid_t pids[MAX_RANKS];
	struct in_addr base = {0};
	int n = 0, lfd, failed = 0, started = 0;

	if (l->netns != NULL) {
		for (char *s = strtok(l->netns, ","); s != NULL; s = strtok(NULL, ",")) {
			if (n == MAX_RANKS) {
				fprintf(stderr, "%s: --netns: at most %d namespaces\n", l->tool,
					MAX_RANKS);
				return 2;
			}
			names[n++] = s;
		}
		if (n == 0) {
			fprintf(stderr, "%s: --netns: expected a comma-separated list\n", l->tool);
			return 2;
		}
		lfd = rendezvous_in_netns(l, names[0], cc);
	} else {
		n = l->nranks;
		if (tp_launch_parse_addr(l->tool, "--addr-base", l->addr_base, &base) < 0)
			return 2;
		lfd = tp_launch_listen(base, cc->bootstrap, sizeof(cc->bootstrap));
	}
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot open the rendezvous socket: %s\n", l->tool,
			strerror(-lfd));
		return 1;
	}
	cc->nranks = n;
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < n; r++) {
		pid_t launcher = getpid(), pid = fork();

		if (pid < 0) {
			perror("fork");
			failed = 1;
			break;
		}
		if (pid == 0) {
			char tag[32];

			/* a rank ends with its launcher: a killed ice-perf or
			 * ice-bench leaves no rank behind holding its port */
			if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != launcher)
				_exit(1);
			snprintf(tag, sizeof(tag), "rank %d", r);
			ice_log_set_tag(tag);
			cc->rank = r;
			cc->listen_fd = r == 0 ? lfd : -1;
			if (r != 0)
				close(lfd);
			if (l->netns != NULL) {
				if (tp_launch_enter_netns(l->tool, names[r]) < 0)
					_exit(1);
				if (tp_launch_local_addr(&cc->eng.addr) < 0) {
					fprintf(stderr, "%s: namespace %s has no IPv4 address\n",
						l->tool, names[r]);
					_exit(1);
				}
			} else {
				cc->eng.addr.s_addr = htonl(ntohl(base.s_addr) + (uint32_t)r);
			}
			_exit(fn(arg));
		}
		pids[started++] = pid;
	}
	close(lfd);
	for (int alive = started; alive > 0; alive--) {
		int status;
		pid_t pid = wait(&status);

		if (pid < 0)
			break;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (!failed) {
				/* one rank failed: the others cannot finish */
				ice_sleep_ns(2 * ICE_NSEC_PER_SEC);
				for (int r = 0; r < started; r++)
					if (pids[r] != pid)
						kill(pids[r], SIGTERM);
			}
			failed = 1;
		}
	}
	return failed;
}
