// SPDX-License-Identifier: Apache-2.0
#include "ice_ctrl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ice_log.h"

/* shm_open(3) names: "/ice-ctrl-<IPv4>" is /dev/shm/ice-ctrl-<IPv4> */
static void ctrl_name(const char *ipv4, char *name, size_t nlen, char *path, size_t plen)
{
	snprintf(name, nlen, "/ice-ctrl-%s", ipv4);
	snprintf(path, plen, ICE_CTRL_PATH_FMT, ipv4);
}

static struct ice_ctrl *map_fd(int fd)
{
	void *p = mmap(NULL, sizeof(struct ice_ctrl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool ctrl_valid(const struct ice_ctrl *c)
{
	return c->magic == ICE_CTRL_MAGIC && c->version == ICE_CTRL_VERSION &&
	       c->nslots == ICE_CTRL_SLOTS;
}

/* Open the existing block name: not through a link (shm_open adds
 * O_NOFOLLOW), then the attributes (ice_ipc_check). fd, or -errno logged. */
static int ctrl_open_checked(const char *name, const char *path, const struct ice_ipc_perm *p,
			     struct stat *st)
{
	char why[160];
	int fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0), err;

	if (fd < 0) {
		err = errno;
		if (err == ELOOP)
			ice_err(ICE_SUB_COMMON, "control block %s is a symbolic link: refused",
				path);
		else if (err == EACCES)
			ice_warn(ICE_SUB_COMMON,
				 "control block %s: permission denied (uid %u, not in its group "
				 "'%s'?)",
				 path, (unsigned)geteuid(), p->group);
		return -err;
	}
	if (fstat(fd, st) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	if (ice_ipc_check(st, S_IFREG, p, why, sizeof(why)) < 0) {
		ice_err(ICE_SUB_COMMON, "control block %s %s: refused", path, why);
		close(fd);
		return -EPERM;
	}
	return fd;
}

struct ice_ctrl *ice_ctrl_create(const char *ipv4, const struct ice_ipc_perm *perm)
{
	char name[64], path[128];
	struct ice_ipc_perm def;
	struct ice_ctrl *c = NULL;
	struct stat st;
	int fd = -1, err;

	if (perm == NULL) {
		ice_ipc_perm_init(&def, NULL);
		perm = &def;
	}
	ctrl_name(ipv4, name, sizeof(name), path, sizeof(path));
	for (int tries = 0; c == NULL && tries < 2; tries++) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm->mode);
		if (fd >= 0) {
			err = -ice_ipc_fset(fd, perm); /* the group; the mode past umask */
			if (err != 0) {
				ice_err(ICE_SUB_COMMON,
					"control block %s: cannot give it group '%s' "
					"and mode %04o: %s",
					path, perm->group, (unsigned)perm->mode, strerror(err));
				shm_unlink(name);
				goto err;
			}
			if (ftruncate(fd, sizeof(struct ice_ctrl)) < 0) {
				err = errno;
				shm_unlink(name);
				goto err;
			}
			c = map_fd(fd);
			if (c == NULL) {
				err = errno;
				shm_unlink(name);
				goto err;
			}
			c->magic = ICE_CTRL_MAGIC;
			c->version = ICE_CTRL_VERSION;
			c->nslots = ICE_CTRL_SLOTS;
			break;
		}
		if (errno != EEXIST) {
			err = errno;
			ice_err(ICE_SUB_COMMON, "control block %s: cannot create: %s", path,
				strerror(err));
			errno = err;
			return NULL;
		}
		/* there already: an earlier agent's (taken over with its QPs) or
		 * junk; either way only after the checks */
		fd = ctrl_open_checked(name, path, perm, &st);
		if (fd < 0) {
			errno = -fd;
			return NULL;
		}
		if ((size_t)st.st_size == sizeof(struct ice_ctrl)) {
			c = map_fd(fd);
			if (c == NULL) {
				err = errno;
				goto err;
			}
			if (ctrl_valid(c)) {
				/* it passed the checks: now make it what we would create */
				err = -ice_ipc_fset(fd, perm);
				if (err != 0) {
					ice_err(ICE_SUB_COMMON,
						"control block %s: cannot give it group '%s' and "
						"mode %04o: %s",
						path, perm->group, (unsigned)perm->mode,
						strerror(err));
					munmap(c, sizeof(*c));
					goto err;
				}
				break;
			}
			munmap(c, sizeof(*c));
			c = NULL;
		}
		ice_warn(ICE_SUB_COMMON,
			 "control block %s is stale (size %lld, not a version %d "
			 "block): removed",
			 path, (long long)st.st_size, ICE_CTRL_VERSION);
		close(fd);
		fd = -1;
		if (shm_unlink(name) < 0 && errno != ENOENT) {
			err = errno;
			goto err;
		}
	}
	if (c == NULL) {
		err = EEXIST; /* created again in between: someone else is at work */
		goto err;
	}
	close(fd);
	/* a restarted agent takes over the block and the QPs in it */
	__atomic_store_n(&c->agent_pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
	return c;
err:
	if (fd >= 0)
		close(fd);
	errno = err;
	return NULL;
}

struct ice_ctrl *ice_ctrl_open(const char *ipv4, const struct ice_ipc_perm *perm)
{
	char name[64], path[128];
	struct ice_ipc_perm def;
	struct ice_ctrl *c;
	struct stat st;
	int fd;

	if (perm == NULL) {
		ice_ipc_perm_init(&def, NULL);
		perm = &def;
	}
	ctrl_name(ipv4, name, sizeof(name), path, sizeof(path));
	fd = ctrl_open_checked(name, path, perm, &st);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if ((size_t)st.st_size < sizeof(struct ice_ctrl)) {
		close(fd);
		errno = EPROTO;
		return NULL;
	}
	c = map_fd(fd);
	close(fd);
	if (c == NULL)
		return NULL;
	if (!ctrl_valid(c)) {
		munmap(c, sizeof(*c));
		errno = EPROTO;
		return NULL;
	}
	return c;
}

void ice_ctrl_close(struct ice_ctrl *c)
{
	if (c != NULL)
		munmap(c, sizeof(*c));
}

int ice_ctrl_unlink(const char *ipv4)
{
	char name[64], path[128];

	ctrl_name(ipv4, name, sizeof(name), path, sizeof(path));
	return shm_unlink(name) < 0 ? -errno : 0;
}

int ice_ctrl_claim(struct ice_ctrl *c, uint32_t qpn)
{
	for (uint32_t i = 0; i < ICE_CTRL_SLOTS; i++) {
		uint32_t zero = 0;

		if (__atomic_load_n(&c->qp[i].qpn, __ATOMIC_RELAXED) != 0)
			continue;
		if (__atomic_compare_exchange_n(&c->qp[i].qpn, &zero, qpn, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			struct ice_ctrl_qp *q = &c->qp[i];

			q->owner_pid = (uint32_t)getpid();
			/* the control half of a reused slot is stale: forget it */
			q->applied_seq = __atomic_load_n(&q->seq, __ATOMIC_ACQUIRE) & ~1u;
			q->flags = 0;
			__atomic_add_fetch(&c->qp_version, 1, __ATOMIC_RELEASE);
			return (int)i;
		}
	}
	return -ENOSPC;
}

void ice_ctrl_release(struct ice_ctrl *c, int slot)
{
	if (slot < 0 || slot >= ICE_CTRL_SLOTS)
		return;
	__atomic_store_n(&c->qp[slot].qpn, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->qp_version, 1, __ATOMIC_RELEASE);
}

bool ice_ctrl_reap(struct ice_ctrl *c, int slot, uint32_t qpn)
{
	uint32_t pid, want = qpn;

	if (slot < 0 || slot >= ICE_CTRL_SLOTS || qpn == 0)
		return false;
	pid = __atomic_load_n(&c->qp[slot].owner_pid, __ATOMIC_ACQUIRE);
	if (pid == 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return false;
	/* a new owner that claimed the slot since has another QPN: CAS fails */
	if (!__atomic_compare_exchange_n(&c->qp[slot].qpn, &want, 0, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	__atomic_add_fetch(&c->qp_version, 1, __ATOMIC_RELEASE);
	return true;
}

void ice_ctrl_set(struct ice_ctrl *c, int slot, uint32_t flags, uint16_t sport, uint32_t rate_mbps,
		  const struct ice_dcqcn_params *dcqcn, uint64_t epoch)
{
	struct ice_ctrl_qp *q = &c->qp[slot];
	uint32_t s = __atomic_load_n(&q->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&q->seq, s | 1u, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->flags = flags;
	q->sport = sport;
	q->rate_mbps = rate_mbps;
	q->epoch = epoch;
	if (dcqcn != NULL)
		q->dcqcn = *dcqcn;
	__atomic_store_n(&q->seq, (s | 1u) + 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->ctl_version, 1, __ATOMIC_RELEASE);
}

bool ice_ctrl_get(const struct ice_ctrl *c, int slot, struct ice_ctrl_qp *out)
{
	const struct ice_ctrl_qp *q = &c->qp[slot];
	uint32_t s1 = __atomic_load_n(&q->seq, __ATOMIC_ACQUIRE), s2;

	if (s1 & 1u)
		return false;
	out->flags = q->flags;
	out->sport = q->sport;
	out->rate_mbps = q->rate_mbps;
	out->epoch = q->epoch;
	out->dcqcn = q->dcqcn;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&q->seq, __ATOMIC_RELAXED);
	out->seq = s1;
	return s1 == s2;
}

uint64_t ice_ctrl_version(const struct ice_ctrl *c)
{
	return __atomic_load_n(&c->ctl_version, __ATOMIC_ACQUIRE);
}

int ice_ctrl_find(const struct ice_ctrl *c, uint32_t qpn)
{
	for (uint32_t i = 0; i < ICE_CTRL_SLOTS; i++)
		if (__atomic_load_n(&c->qp[i].qpn, __ATOMIC_ACQUIRE) == qpn)
			return (int)i;
	return -ENOENT;
}
