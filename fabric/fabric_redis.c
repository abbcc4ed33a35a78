// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the fabric's Redis (up --redis): redis-server on the management
 * bridge, and the link states recorded there for the controller. The
 * commands go over a plain socket in RESP; nothing else here speaks Redis.
 */
#include "fabric_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

/* Can something listen on addr:port (TCP)? 0 or -errno (EADDRINUSE). */
static int port_free(const char *addr, unsigned int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int fab_redis_start(const char *fabric, unsigned int port)
{
	char portstr[16], bind[32], pid[300], dir[256], err[1024];
	char *argv[] = {"redis-server",
			"--port",
			portstr,
			"--bind",
			bind,
			"--protected-mode",
			"no",
			"--daemonize",
			"yes",
			"--pidfile",
			pid,
			"--dir",
			dir,
			"--save",
			"",
			"--appendonly",
			"no",
			NULL};
	int ret;

	snprintf(portstr, sizeof(portstr), "%u", port);
	snprintf(bind, sizeof(bind), FAB_MGMT_NET ".%u.1", fab_mgmt_byte(fabric));
	ret = port_free(bind, port);
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "--redis %u: cannot listen on %s:%u: %s", port, bind, port,
			strerror(-ret));
		return ret;
	}
	fab_state_path(fabric, "redis.pid", pid, sizeof(pid));
	fab_state_path(fabric, NULL, dir, sizeof(dir));
	ret = fab_run(argv, NULL, NULL, err, sizeof(err));
	if (ret != 0) {
		ice_err(ICE_SUB_COMMON, "redis-server on %s:%u did not start: %s", bind, port, err);
		return -EIO;
	}
	for (int i = 0; i < 150; i++) { /* the pid file appears once it serves */
		if (access(pid, F_OK) == 0)
			return 0;
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	}
	ice_err(ICE_SUB_COMMON, "redis-server on %s:%u did not come up within 3 s", bind, port);
	return -ETIMEDOUT;
}

bool fab_redis_port(const char *fabric, char port[16])
{
	char path[512];
	FILE *f;

	port[0] = '\0';
	fab_state_path(fabric, "redis.port", path, sizeof(path));
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fscanf(f, "%15s", port) != 1)
		port[0] = '\0';
	fclose(f);
	return port[0] != '\0';
}

/* With a fabric Redis (up --redis): record a link's state where the
 * controller reads it (docs/redis-schema.md, "Fabric"): HSET ice:<F>:links
 * <link> {"state","ts_ms"} and PUBLISH ice:<F>:links <link>. Best effort:
 * a failure is logged, the link change stands. */
void fab_redis_link_record(const char *name, const char *link, bool up)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct timeval tv = {.tv_sec = 1};
	char port[16], ip[32], val[96], key[128], cmd[768], rep[256];
	int fd, n, len = 0;

	if (!fab_redis_port(name, port))
		return;
	snprintf(ip, sizeof(ip), FAB_MGMT_NET ".%u.1", fab_mgmt_byte(name));
	sa.sin_port = htons((uint16_t)atoi(port));
	inet_pton(AF_INET, ip, &sa.sin_addr);
	snprintf(val, sizeof(val), "{\"state\":\"%s\",\"ts_ms\":%llu}", up ? "up" : "down",
		 (unsigned long long)ice_wall_ms());
	snprintf(key, sizeof(key), "ice:%s:links", name);
	len += snprintf(cmd + len, sizeof(cmd) - (size_t)len,
			"*4\r\n$4\r\nHSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
			strlen(key), key, strlen(link), link, strlen(val), val);
	len += snprintf(cmd + len, sizeof(cmd) - (size_t)len,
			"*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(key), key,
			strlen(link), link);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, cmd, (size_t)len) != len || (n = (int)read(fd, rep, sizeof(rep) - 1)) <= 0 ||
	    rep[0] == '-')
		ice_warn(ICE_SUB_COMMON, "link %s: cannot record its state in redis at %s:%s", link,
			 ip, port);
	close(fd);
}
