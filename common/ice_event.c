// SPDX-License-Identifier: Apache-2.0
#include "ice_event.h"

#include <errno.h>
#include <stdbool.h>
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

/* How often a sender without an agent looks for one again. */
#define ICE_EVENT_RELINK_NS ICE_NSEC_PER_SEC

/*
 * The socket is connected to the agent's: a send then skips the kernel's
 * path lookup (unix_find_other), which an unconnected sendto pays on every
 * datagram, agent or not (a pipeline rank sends an event per message).
 * Without an agent, or after it went away (ECONNREFUSED), events are
 * dropped without a system call until the next look, at most once every
 * ICE_EVENT_RELINK_NS; an agent that went away is looked for at once.
 */
struct ice_event_tx {
	int fd;
	bool linked;	    /* connected to the agent's socket */
	bool warned;	    /* peer_check refused once: said so */
	int err;	    /* why the last look failed (positive errno) */
	uint64_t relink_ns; /* not linked: look again from then on */
	struct sockaddr_un to;
	uint64_t seq;
	uint64_t dropped;
	char lib[12];
	char job[16]; /* ICE_JOB, read once */
};

/* The socket there, when there is one, must be an agent's: a socket bound
 * by root or by our own user (only they can have made it). Who may send to
 * it is the kernel's business (its mode and group, set by the agent). */
static int peer_check(const char *path, bool quiet)
{
	struct stat st;
	uid_t me = geteuid();

	if (lstat(path, &st) < 0)
		return -ENOENT; /* no agent yet: sends are dropped until there is one */
	if (S_ISSOCK(st.st_mode) && (st.st_uid == 0 || st.st_uid == me))
		return 0;
	if (!quiet)
		ice_warn(ICE_SUB_COMMON, "agent socket %s %s %u: not reporting to it", path,
			 !S_ISSOCK(st.st_mode) ? "is not a socket; owner uid" : "is owned by uid",
			 (unsigned)st.st_uid);
	return -EPERM;
}

/* Connect to the agent's socket when it is time to look: 0 when linked,
 * else -errno (the event is to be dropped). */
static int link_agent(struct ice_event_tx *tx)
{
	uint64_t now;
	int err;

	if (tx->linked)
		return 0;
	now = ice_now_ns();
	if (now < tx->relink_ns)
		return -tx->err;
	tx->relink_ns = now + ICE_EVENT_RELINK_NS;
	err = peer_check(tx->to.sun_path, tx->warned);
	if (err == -EPERM)
		tx->warned = true;
	if (err == 0 && connect(tx->fd, (struct sockaddr *)&tx->to, sizeof(tx->to)) < 0)
		err = -errno;
	tx->err = -err;
	tx->linked = err == 0;
	return err;
}

/* After a send failed with err (positive): the agent went away (its
 * socket closed, ECONNREFUSED; then ENOTCONN) or was replaced: look again
 * at once. A full queue (EAGAIN) keeps the link. */
static void unlink_agent(struct ice_event_tx *tx, int err)
{
	if (err != ECONNREFUSED && err != ENOTCONN && err != ECONNRESET)
		return;
	tx->linked = false;
	tx->relink_ns = 0;
	tx->err = err;
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
	err = peer_check(tx->to.sun_path, false);
	if (err == -EPERM) {
		free(tx);
		errno = EPERM;
		return NULL;
	}
	tx->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tx->fd < 0) {
		err = errno;
		free(tx);
		errno = err;
		return NULL;
	}
	link_agent(tx);
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
	for (int tries = 0;; tries++) {
		int err = link_agent(tx);

		if (err == 0) {
			ssize_t n = send(tx->fd, ev, sizeof(*ev), MSG_DONTWAIT);

			if (n == (ssize_t)sizeof(*ev))
				return 0;
			err = n < 0 ? -errno : -EMSGSIZE; /* a datagram goes whole or not at all */
			unlink_agent(tx, -err);
		}
		/* a new agent's socket is tried once more, at once */
		if (tx->linked || tx->relink_ns != 0 || tries > 0) {
			tx->dropped++;
			return err;
		}
	}
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
	/* every event numbered, sent or not: the agent sees the gaps */
	if (n > 0 && link_agent(tx) < 0) {
		tx->dropped += n;
		return -tx->err;
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
			msg[k].msg_hdr.msg_iov = &iov[k];
			msg[k].msg_hdr.msg_iovlen = 1;
			at += c;
			left -= c;
			k++;
		}
		r = sendmmsg(tx->fd, msg, k, MSG_DONTWAIT);
		if (r <= 0) {
			int err = r < 0 ? errno : EAGAIN;

			unlink_agent(tx, err);
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
