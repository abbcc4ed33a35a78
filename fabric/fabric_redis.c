// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the fabric's Redis (up --redis): redis-server on the management
 * bridge, and the link states recorded there for the controller (over
 * common/ice_redis).
 */
#include "fabric_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_redis.h"
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

int fab_redis_acl_render(const struct topo *t)
{
	struct topo_acl_hosts h;
	char dir[300], why[600] = "";
	int ret = topo_acl_hosts(t, &h);

	if (ret == 0) {
		fab_state_path(t->name, "acl", dir, sizeof(dir));
		ret = ice_redis_acl_render(dir, t->name, h.users, h.n, why, sizeof(why));
	}
	if (ret < 0)
		ice_err(FAB_SUB, "--redis-acl: %s", why[0] ? why : strerror(-ret));
	topo_acl_hosts_free(&h);
	return ret < 0 ? ret : 0;
}

bool fab_redis_acl(const char *fabric, const char *user, char *path, size_t len)
{
	char dir[300], file[ICE_REDIS_USER_MAX + 16];

	fab_state_path(fabric, "acl/users.acl", dir, sizeof(dir));
	if (access(dir, F_OK) < 0)
		return false;
	fab_state_path(fabric, "acl", dir, sizeof(dir));
	ice_redis_acl_auth_name(file, sizeof(file), user);
	snprintf(path, len, "%s/%s", dir, file);
	return true;
}

void fab_redis_auth_exporter(const char *fabric)
{
	char path[512];

	if (fab_redis_acl(fabric, "ice-exporter", path, sizeof(path)))
		setenv(ICE_REDIS_AUTH_ENV, path, 1);
}

int fab_redis_start(const char *fabric, unsigned int port, bool acl)
{
	char portstr[16], bind[32], pid[300], dir[256], err[1024], aclfile[300];
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
			NULL, /* --aclfile */
			NULL,
			NULL};
	int ret;

	snprintf(portstr, sizeof(portstr), "%u", port);
	snprintf(bind, sizeof(bind), FAB_MGMT_NET ".%u.1", fab_mgmt_byte(fabric));
	ret = port_free(bind, port);
	if (ret < 0) {
		ice_err(FAB_SUB, "--redis %u: cannot listen on %s:%u: %s", port, bind, port,
			strerror(-ret));
		return ret;
	}
	fab_state_path(fabric, "redis.pid", pid, sizeof(pid));
	fab_state_path(fabric, NULL, dir, sizeof(dir));
	if (acl) { /* its first line turns the default user off */
		fab_state_path(fabric, "acl/users.acl", aclfile, sizeof(aclfile));
		argv[17] = "--aclfile";
		argv[18] = aclfile;
	}
	ret = fab_run(argv, NULL, NULL, err, sizeof(err));
	if (ret != 0) {
		ice_err(FAB_SUB, "redis-server on %s:%u did not start: %s", bind, port, err);
		return -EIO;
	}
	for (int i = 0; i < 150; i++) { /* the pid file appears once it serves */
		if (access(pid, F_OK) == 0)
			return 0;
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	}
	ice_err(FAB_SUB, "redis-server on %s:%u did not come up within 3 s", bind, port);
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
	char port[16], addr[48], val[96], key[ICE_RKEY_MAX], why[160];
	uint32_t errors = 0;
	redisContext *c;

	if (!fab_redis_port(name, port) ||
	    ice_rkey(key, sizeof(key), ICE_RK_LINKS, name, NULL, NULL) < 0)
		return;
	snprintf(addr, sizeof(addr), FAB_MGMT_NET ".%u.1:%s", fab_mgmt_byte(name), port);
	snprintf(val, sizeof(val), "{\"state\":\"%s\",\"ts_ms\":%llu}", up ? "up" : "down",
		 (unsigned long long)ice_wall_ms());
	fab_redis_auth_exporter(name);
	c = ice_redis_connect(addr, ICE_NSEC_PER_SEC, why, sizeof(why));
	if (c == NULL) {
		ice_warn(FAB_SUB, "link %s: cannot record its state in redis at %s: %s", link, addr,
			 why);
		return;
	}
	redisAppendCommand(c, "HSET %s %s %s", key, link, val);
	redisAppendCommand(c, "PUBLISH %s %s", key, link);
	if (ice_redis_replies(c, 2, NULL, &errors) < 0 || errors != 0)
		ice_warn(FAB_SUB, "link %s: cannot record its state in redis at %s: %s", link, addr,
			 c->errstr[0] ? c->errstr : "error reply");
	redisFree(c);
}
