// SPDX-License-Identifier: Apache-2.0
#include "ice_event.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

#define ICE_EVENT_BATCH_MAX 64

struct ice_event_tx {
	int fd;
	struct sockaddr_un to;
	uint64_t seq;
	uint64_t dropped;
	char lib[12];
	char job[16]; /* ICE_JOB, read once */
};

/* The socket there, when there is one, must be an agent's: a socket bound
 * by root or by our own user (only they can have made it). Who may send to
 * it is the kernel's business (its mode and group, set by the agent). */
static int peer_check(const char *path)
{
	struct stat st;
	uid_t me = geteuid();

	if (lstat(path, &st) < 0)
		return 0; /* no agent yet: sends fail until there is one */
	if (S_ISSOCK(st.st_mode) && (st.st_uid == 0 || st.st_uid == me))
		return 0;
	ice_warn(ICE_SUB_COMMON, "agent socket %s %s %u: not reporting to it", path,
		 !S_ISSOCK(st.st_mode) ? "is not a socket; owner uid" : "is owned by uid",
		 (unsigned)st.st_uid);
	return -EPERM;
}

struct ice_event_tx *ice_event_tx_open(const char *ipv4, const char *lib)
{
	struct ice_event_tx *tx = calloc(1, sizeof(*tx));
	const char *env = getenv("ICE_AGENT_SOCK");
	const char *job = getenv("ICE_JOB");
	int err;

	if (tx == NULL)
		return NULL;
	tx->to.sun_family = AF_UNIX;
	if (env != NULL && *env != '\0')
		snprintf(tx->to.sun_path, sizeof(tx->to.sun_path), "%s", env);
	else
		snprintf(tx->to.sun_path, sizeof(tx->to.sun_path), ICE_EVENT_SOCK_FMT, ipv4);
	err = peer_check(tx->to.sun_path);
	if (err == 0)
		tx->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (err < 0 || tx->fd < 0) {
		err = err < 0 ? -err : errno;
		free(tx);
		errno = err;
		return NULL;
	}
	snprintf(tx->lib, sizeof(tx->lib), "%s", lib);
	/* a label longer than the field is cut, not refused: it names, it
	 * does not identify (comm_id does) */
	if (job != NULL)
		memcpy(tx->job, job, strnlen(job, sizeof(tx->job)));
	return tx;
}

void ice_event_tx_close(struct ice_event_tx *tx)
{
	if (tx == NULL)
		return;
	close(tx->fd);
	free(tx);
}

int ice_event_send(struct ice_event_tx *tx, struct ice_event *ev)
{
	if (tx == NULL)
		return -EBADF;
	ev->magic = ICE_EVENT_MAGIC;
	ev->version = ICE_EVENT_VERSION;
	ev->pid = (uint32_t)getpid();
	ev->seq = ++tx->seq;
	ev->ts_ns = ice_wall_ns();
	memcpy(ev->lib, tx->lib, sizeof(ev->lib));
	if (ev->job[0] == '\0')
		memcpy(ev->job, tx->job, sizeof(ev->job));
	if (sendto(tx->fd, ev, sizeof(*ev), MSG_DONTWAIT, (struct sockaddr *)&tx->to,
		   sizeof(tx->to)) < 0) {
		tx->dropped++;
		return -errno;
	}
	return 0;
}

int ice_event_send_many(struct ice_event_tx *tx, struct ice_event *evs, unsigned int n)
{
	struct mmsghdr msg[ICE_EVENT_BATCH_MAX];
	struct iovec iov[ICE_EVENT_BATCH_MAX];
	unsigned int done = 0;
	uint64_t now = 0;
	int pid = getpid();

	if (tx == NULL)
		return -EBADF;
	for (unsigned int i = 0; i < n; i++) {
		struct ice_event *ev = &evs[i];

		if (ev->ts_ns == 0) {
			if (now == 0)
				now = ice_wall_ns();
			ev->ts_ns = now;
		}
		ev->magic = ICE_EVENT_MAGIC;
		ev->version = ICE_EVENT_VERSION;
		ev->pid = (uint32_t)pid;
		ev->seq = ++tx->seq;
		if (ev->lib[0] == '\0')
			memcpy(ev->lib, tx->lib, sizeof(ev->lib));
		if (ev->job[0] == '\0')
			memcpy(ev->job, tx->job, sizeof(ev->job));
	}
	while (done < n) {
		unsigned int k = 0, left = n - done, at = done;
		int r;

		/* up to ICE_EVENT_BATCH_MAX datagrams of up to ICE_EVENT_PER_DGRAM records */
		memset(msg, 0, sizeof(msg));
		while (left > 0 && k < ICE_EVENT_BATCH_MAX) {
			unsigned int c = left < ICE_EVENT_PER_DGRAM ? left : ICE_EVENT_PER_DGRAM;

			iov[k].iov_base = &evs[at];
			iov[k].iov_len = c * sizeof(evs[0]);
			msg[k].msg_hdr.msg_name = &tx->to;
			msg[k].msg_hdr.msg_namelen = sizeof(tx->to);
			msg[k].msg_hdr.msg_iov = &iov[k];
			msg[k].msg_hdr.msg_iovlen = 1;
			at += c;
			left -= c;
			k++;
		}
		r = sendmmsg(tx->fd, msg, k, MSG_DONTWAIT);
		if (r <= 0) {
			int err = r < 0 ? errno : EAGAIN;

			tx->dropped += n - done;
			if (done == 0)
				return -err;
			errno = err;
			break;
		}
		for (int i = 0; i < r; i++)
			done += (unsigned int)(iov[i].iov_len / sizeof(evs[0]));
	}
	return (int)done;
}

uint64_t ice_event_dropped(const struct ice_event_tx *tx)
{
	return tx != NULL ? tx->dropped : 0;
}
