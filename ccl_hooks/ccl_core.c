// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_core: configuration from the environment, the private logger, the
 * batched fail-open event sender and the communicator map. Shared by the
 * preload library and the profiler plugin.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "ccl_internal.h"

ICE_LOG_SUBSYSTEM(ccl_log_sub, "ccl");

struct ccl_cfg ccl_cfg = {.events = 1, .verbs = 1, .sample = 1, .flush_us = 2000};

/* ---- configuration: every environment control is one row */

struct ccl_env_row {
	const char *key;
	int *field;
	int min, max;
	const char *help;
};

static const struct ccl_env_row ccl_env_rows[] = {
	{"ICE_CCL_DISABLE", &ccl_cfg.disable, 0, 1, "1: forward every call, record nothing"},
	{"ICE_CCL_EVENTS", &ccl_cfg.events, 0, 1, "0: record nothing for the agent"},
	{"ICE_CCL_VERBS", &ccl_cfg.verbs, 0, 1, "0: leave verbs QPs alone"},
	{"ICE_CCL_SAMPLE", &ccl_cfg.sample, 1, 1 << 30, "report 1 of N operations"},
	{"ICE_CCL_DRY_RUN", &ccl_cfg.dry_run, 0, 1, "1: record QPs, never modify one"},
	{"ICE_CCL_FLUSH_US", &ccl_cfg.flush_us, 0, 10000000, "max age of a batched event"},
};

static void ccl_env_load(void)
{
	const char *f;

	for (size_t i = 0; i < sizeof(ccl_env_rows) / sizeof(ccl_env_rows[0]); i++) {
		const struct ccl_env_row *r = &ccl_env_rows[i];
		const char *v = getenv(r->key);
		char *end;
		long n;

		if (v == NULL || *v == '\0')
			continue;
		errno = 0;
		n = strtol(v, &end, 10);
		if (errno != 0 || *end != '\0' || n < r->min || n > r->max) {
			ice_warn(CCL_SUB, "%s=%s ignored: expected an integer in [%d, %d] (%s)",
				 r->key, v, r->min, r->max, r->help);
			continue;
		}
		*r->field = (int)n;
	}
	f = getenv("ICE_CCL_FAULT");
	if (f != NULL) {
		if (strstr(f, "alloc") != NULL)
			ccl_cfg.fault |= CCL_FAULT_ALLOC;
		if (strstr(f, "send") != NULL)
			ccl_cfg.fault |= CCL_FAULT_SEND;
	}
}

/* ---- logging: a file (ICE_CCL_LOG) or syslog; never stdout or stderr */

static int ccl_log_fd = -1;

static void ccl_log_sink(int level, uint32_t sub, const char *line, void *arg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	char buf[1024];
	int n;

	if (ccl_log_fd < 0) {
		if (level <= ICE_LOG_WARN)
			syslog(LOG_USER | prio[level], "ice-ccl[%d]: %s", (int)getpid(), line);
		return;
	}
	n = snprintf(buf, sizeof(buf), "ice-ccl[%d]: %s\n", (int)getpid(), line);
	if (n > 0) {
		ssize_t w = write(ccl_log_fd, buf,
				  (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		(void)w;
	}
}

/* ---- allocation with failure injection */

void *ccl_alloc(size_t n)
{
	if (ccl_cfg.fault & CCL_FAULT_ALLOC)
		return NULL;
	return malloc(n);
}

void *ccl_realloc(void *p, size_t n)
{
	if (ccl_cfg.fault & CCL_FAULT_ALLOC)
		return NULL;
	return realloc(p, n);
}

/* ---- the event sender
 *
 * Events wait in a bounded queue and leave in batches by one sendmmsg. The
 * agent's socket holds few datagrams (net.unix.max_dgram_qlen, 10 by
 * default), so a batch is small and what the socket refused (EAGAIN) stays
 * queued for the next flush; when the queue is full, new events are dropped
 * and counted. One thread flushes at a time; the others only append.
 */

#define CCL_QUEUE      256
#define CCL_BATCH      8
#define CCL_BACKOFF_NS 1000000000ull /* after "no agent", stop trying for 1 s */
#define CCL_BUSY_NS    200000ull     /* after "socket full", wait 200 us */

static struct {
	pthread_mutex_t lock;
	struct ice_event_tx *tx;
	bool explicit_path; /* ICE_AGENT_SOCK or ICE_CCL_NIC_IP named the agent */
	bool flushing;
	struct ice_event q[CCL_QUEUE];
	unsigned n;
	struct ice_event out[CCL_QUEUE]; /* the flusher's copy */
	uint64_t dead_until;
	uint64_t busy_until; /* the socket was full: no flush before this */
	uint64_t sent, dropped;
} ccl_q = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The agent to report to: ICE_AGENT_SOCK (ice_event_tx_open reads it), else
 * ICE_CCL_NIC_IP, else the first /run/ice/agent-<IPv4>.sock present. */
static struct ice_event_tx *ccl_tx_open(bool *explicit_path)
{
	const char *ip = getenv("ICE_CCL_NIC_IP");
	const char *sock = getenv("ICE_AGENT_SOCK");
	char found[64] = "none";
	glob_t g;

	*explicit_path = (sock != NULL && *sock != '\0') || (ip != NULL && *ip != '\0');
	if (ip == NULL || *ip == '\0') {
		ip = found;
		if ((sock == NULL || *sock == '\0') &&
		    glob("/run/ice/agent-*.sock", GLOB_NOSORT, NULL, &g) == 0) {
			const char *p = g.gl_pathv[0] + strlen("/run/ice/agent-");
			size_t len = strlen(p) - strlen(".sock");

			if (len < sizeof(found)) {
				memcpy(found, p, len);
				found[len] = '\0';
			}
			globfree(&g);
		}
	}
	return ice_event_tx_open(ip, "nccl");
}

/* At exit, give a busy agent a few milliseconds to make room (bounded). */
static void ccl_exit_flush(void)
{
	for (int i = 0; i < 50; i++) {
		unsigned left;

		ccl_flush();
		pthread_mutex_lock(&ccl_q.lock);
		left = ccl_q.dead_until == 0 ? ccl_q.n : 0;
		pthread_mutex_unlock(&ccl_q.lock);
		if (left == 0)
			break;
		usleep(1000);
	}
	ice_dbg(CCL_SUB, "exit: %llu events sent, %llu dropped", (unsigned long long)ccl_q.sent,
		(unsigned long long)ccl_q.dropped);
}

static pthread_once_t ccl_once = PTHREAD_ONCE_INIT;

static void ccl_init_once(void)
{
	const char *logpath = getenv("ICE_CCL_LOG");

	if (logpath != NULL && *logpath != '\0')
		ccl_log_fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ice_log_set_sink(ccl_log_sink, NULL);
	ice_log_set_level(ICE_LOG_WARN);
	ice_log_init_env();
	ccl_env_load();
	if (ccl_cfg.disable || !ccl_cfg.events)
		return;
	ccl_q.tx = ccl_tx_open(&ccl_q.explicit_path);
	if (ccl_q.tx == NULL)
		ice_warn(CCL_SUB, "no event socket (%s): events are dropped", strerror(errno));
	atexit(ccl_exit_flush);
	ice_dbg(CCL_SUB, "init: events %d verbs %d sample %d dry-run %d", ccl_cfg.events,
		ccl_cfg.verbs, ccl_cfg.sample, ccl_cfg.dry_run);
}

void ccl_init(void)
{
	pthread_once(&ccl_once, ccl_init_once);
}

/* Under the lock: after a back-off, look for an agent that started since. */
static void ccl_revive_locked(void)
{
	if (!ccl_q.explicit_path) {
		struct ice_event_tx *tx = ccl_tx_open(&ccl_q.explicit_path);

		if (tx != NULL) {
			ice_event_tx_close(ccl_q.tx);
			ccl_q.tx = tx;
		}
	}
	__atomic_store_n(&ccl_q.dead_until, 0, __ATOMIC_RELAXED);
}

/* Called with the lock held and flushing claimed; returns with the lock
 * held. Sends the queue outside the lock, puts back what the socket had no
 * room for. */
static void ccl_flush_locked(void)
{
	unsigned n = ccl_q.n, keep = 0;
	int r;

	memcpy(ccl_q.out, ccl_q.q, n * sizeof(ccl_q.out[0]));
	ccl_q.n = 0;
	pthread_mutex_unlock(&ccl_q.lock);
	if (ccl_cfg.fault & CCL_FAULT_SEND)
		r = -EIO;
	else
		r = ice_event_send_many(ccl_q.tx, ccl_q.out, n);
	pthread_mutex_lock(&ccl_q.lock);
	if (r > 0)
		ccl_q.sent += (unsigned)r;
	if (r == -EAGAIN || (r >= 0 && (unsigned)r < n && errno == EAGAIN)) {
		/* socket full: keep the rest, ahead of what arrived meanwhile */
		unsigned done = r > 0 ? (unsigned)r : 0;

		keep = n - done;
		if (keep > CCL_QUEUE - ccl_q.n)
			keep = CCL_QUEUE - ccl_q.n;
		memmove(&ccl_q.q[keep], &ccl_q.q[0], ccl_q.n * sizeof(ccl_q.q[0]));
		memcpy(&ccl_q.q[0], &ccl_q.out[done], keep * sizeof(ccl_q.q[0]));
		ccl_q.n += keep;
		ccl_q.dropped += n - done - keep;
		ccl_q.busy_until = ice_wall_ns() + CCL_BUSY_NS;
	} else if (r < 0) {
		ccl_q.dropped += n;
		/* no agent (or a broken sender): stop trying for a while */
		ccl_q.dropped += ccl_q.n;
		ccl_q.n = 0;
		__atomic_store_n(&ccl_q.dead_until, ice_wall_ns() + CCL_BACKOFF_NS,
				 __ATOMIC_RELAXED);
	} else {
		ccl_q.dropped += n - (unsigned)r;
	}
}

bool ccl_emit_idle(uint64_t now_ns)
{
	uint64_t until = __atomic_load_n(&ccl_q.dead_until, __ATOMIC_RELAXED);

	return until != 0 && now_ns < until;
}

void ccl_emit(struct ice_event *ev)
{
	ccl_init();
	if (ccl_cfg.disable || !ccl_cfg.events)
		return;
	pthread_mutex_lock(&ccl_q.lock);
	if (ccl_q.dead_until != 0) {
		if (ev->ts_ns < ccl_q.dead_until) {
			ccl_q.dropped++;
			goto out;
		}
		ccl_revive_locked();
	}
	if (ccl_q.n == CCL_QUEUE) {
		ccl_q.dropped++;
	} else {
		ccl_q.q[ccl_q.n++] = *ev;
	}
	if (!ccl_q.flushing && ev->ts_ns >= ccl_q.busy_until &&
	    (ccl_q.n >= CCL_BATCH ||
	     ev->ts_ns - ccl_q.q[0].ts_ns >= (uint64_t)ccl_cfg.flush_us * 1000u)) {
		ccl_q.flushing = true;
		ccl_flush_locked();
		ccl_q.flushing = false;
	}
out:
	pthread_mutex_unlock(&ccl_q.lock);
}

void ccl_flush(void)
{
	pthread_mutex_lock(&ccl_q.lock);
	if (!ccl_q.flushing && ccl_q.n != 0 && ccl_q.dead_until == 0) {
		ccl_q.flushing = true;
		ccl_flush_locked();
		ccl_q.flushing = false;
	}
	pthread_mutex_unlock(&ccl_q.lock);
}

uint64_t ccl_events_sent(void)
{
	return __atomic_load_n(&ccl_q.sent, __ATOMIC_RELAXED);
}

uint64_t ccl_events_dropped(void)
{
	return __atomic_load_n(&ccl_q.dropped, __ATOMIC_RELAXED);
}

/* ---- communicator map: open addressing, lock-free lookups, locked writes */

#define CCL_COMMS     4096 /* power of two */
#define CCL_COMM_TOMB ((uintptr_t)1)

static struct ccl_comm_slot {
	uintptr_t key; /* comm handle; 0 empty, CCL_COMM_TOMB deleted */
	struct ccl_comm_info info;
} ccl_comms[CCL_COMMS];
static pthread_mutex_t ccl_comms_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t ccl_comm_slot(uintptr_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 52) & (CCL_COMMS - 1);
}

int ccl_comm_put(const void *comm, const struct ccl_comm_info *info)
{
	uintptr_t key = (uintptr_t)comm;
	size_t i = ccl_comm_slot(key);
	int ret = -ENOSPC;

	if (key <= CCL_COMM_TOMB)
		return -EINVAL;
	ccl_comm_del(comm); /* a handle reused after a destroy we missed */
	pthread_mutex_lock(&ccl_comms_lock);
	for (size_t n = 0; n < CCL_COMMS; n++, i = (i + 1) & (CCL_COMMS - 1)) {
		uintptr_t k = __atomic_load_n(&ccl_comms[i].key, __ATOMIC_RELAXED);

		if (k != 0 && k != CCL_COMM_TOMB)
			continue;
		/* a reader may still probe a tombstone: publish info before key */
		ccl_comms[i].info = *info;
		__atomic_store_n(&ccl_comms[i].key, key, __ATOMIC_RELEASE);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&ccl_comms_lock);
	return ret;
}

bool ccl_comm_get(const void *comm, struct ccl_comm_info *out)
{
	uintptr_t key = (uintptr_t)comm;
	size_t i = ccl_comm_slot(key);

	for (size_t n = 0; n < CCL_COMMS; n++, i = (i + 1) & (CCL_COMMS - 1)) {
		uintptr_t k = __atomic_load_n(&ccl_comms[i].key, __ATOMIC_ACQUIRE);

		if (k == 0)
			return false;
		if (k == key) {
			*out = ccl_comms[i].info;
			return true;
		}
	}
	return false;
}

uint32_t ccl_comm_next_split(const void *comm)
{
	uintptr_t key = (uintptr_t)comm;
	size_t i = ccl_comm_slot(key);

	for (size_t n = 0; n < CCL_COMMS; n++, i = (i + 1) & (CCL_COMMS - 1)) {
		uintptr_t k = __atomic_load_n(&ccl_comms[i].key, __ATOMIC_ACQUIRE);

		if (k == 0)
			return 0;
		if (k == key)
			return __atomic_fetch_add(&ccl_comms[i].info.splits, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

void ccl_comm_del(const void *comm)
{
	uintptr_t key = (uintptr_t)comm;
	size_t i = ccl_comm_slot(key);

	pthread_mutex_lock(&ccl_comms_lock);
	for (size_t n = 0; n < CCL_COMMS; n++, i = (i + 1) & (CCL_COMMS - 1)) {
		uintptr_t k = ccl_comms[i].key;

		if (k == 0)
			break;
		if (k == key) {
			__atomic_store_n(&ccl_comms[i].key, CCL_COMM_TOMB, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&ccl_comms_lock);
}
