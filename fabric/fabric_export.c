// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the switch telemetry exporter, `ice-fabric export`. Every
 * interval it reads every switch port's counters from the pinned BPF maps
 * (ebpf/'s ice_sw_reader, the maps kept open) and its interface's flags
 * (an ioctl on a socket made once in the switch's namespace), turns them
 * into records (fabric_telem.c) and writes them to Redis in one round trip
 * (docs/redis-schema.md, "Switch telemetry"). A dead Redis never stops it:
 * it keeps reading, counts the intervals it could not write, and says how
 * many when it is back. Between readings it checks the ports' interface
 * flags every oper_poll (10 ms): a port whose oper-status changed makes a
 * reading at once (gNMI's ON_CHANGE), counted in the exporter's
 * `oper_changes`, which the controller watches. `up --redis` starts it in the background with its
 * pid in FAB_STATE_DIR/<fabric>/export.pid (locked while it runs); `down`
 * stops it by that pid.
 */
#include "fabric_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric_telem.h"
#include "ice_log.h"
#include "ice_redis.h"
#include "ice_switch_loader.h"
#include "ice_time.h"

#define EXP_BACKOFF_MAX_NS ICE_NSEC_PER_SEC /* retry Redis at least once a second */
#define EXP_ALIVE_CHECK_NS ICE_NSEC_PER_SEC /* how often it checks its fabric is still up */

struct exp_port {
	char ifname[IFNAMSIZ];
	const char *peer; /* topology node name (the exporter's topology owns it) */
	int ifindex;	  /* 0: not resolved (absent, or the switch's maps are new) */
	bool absent;	  /* the interface was missing at the last reading */
	struct fab_telem_port t;
	struct fab_telem_read r; /* this interval's reading */
	char key[ICE_RKEY_MAX], key_ts[ICE_RKEY_MAX], member[160];
};

struct exp_switch {
	const char *name;
	char pin[512];
	int sock; /* AF_INET datagram socket in the switch's namespace, for ioctls */
	struct ice_sw_reader *rd;
	struct exp_port *ports;
	uint32_t nports;
};

struct exporter {
	const char *fabric;
	const struct fab_export_opts *o;
	char redis[128];
	struct topo *t;
	struct exp_switch *sw;
	uint32_t nsw, nports;
	struct ice_redis link;
	bool up;	  /* connected and registered */
	bool down_logged; /* this outage's first failure was logged */
	uint64_t started_ms;
	uint64_t seq;	 /* intervals read */
	uint64_t missed; /* intervals not written in the current outage */
	uint64_t missed_last, missed_total;
	uint64_t resets, overruns, read_errors;
	uint64_t oper_changes; /* ports whose oper-status changed, read at once */
	uint32_t errors;       /* error replies */
	char key_exp[ICE_RKEY_MAX], key_ports[ICE_RKEY_MAX];
};

static volatile sig_atomic_t exp_stop;

static void exp_on_signal(int sig)
{
	(void)sig;
	exp_stop = 1;
}

/* ---- the pid file ---------------------------------------------------------------- */

pid_t fab_export_pid(const char *name)
{
	char path[512];
	int fd, pid = 0;
	FILE *f;

	fab_state_path(name, "export.pid", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* held: the exporter that wrote the file runs; free: it is gone (its
	 * pid may belong to another process by now) */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd);
		return 0;
	}
	f = fdopen(fd, "r");
	if (f == NULL) {
		close(fd);
		return 0;
	}
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid;
}

/* Lock and fill the pid file; its fd (kept open while the exporter runs), or
 * -errno (-EBUSY: another exporter of the fabric runs). */
static int exp_pidfile(const char *name, char *path, size_t len)
{
	char buf[24];
	int fd, n;

	fab_state_path(name, "export.pid", path, len);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* a few tries: fab_export_pid() takes a shared lock for a moment */
	for (int i = 0; i < 50 && flock(fd, LOCK_EX | LOCK_NB) != 0; i++)
		ice_sleep_ns(2 * ICE_NSEC_PER_MSEC);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		pid_t other = fab_export_pid(name);

		close(fd);
		ice_err(FAB_SUB, "fabric %s: an exporter runs already (pid %d)", name, (int)other);
		return -EBUSY;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 || write(fd, buf, (size_t)n) != n) {
		n = -errno;
		close(fd);
		return n;
	}
	return fd;
}

/* ---- reading the ports ------------------------------------------------------------ */

struct sock_arg {
	int fd;
};

static int make_sock(void *arg)
{
	struct sock_arg *a = arg;

	a->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	return a->fd < 0 ? -errno : 0;
}

static int exp_open(struct exporter *e)
{
	uint32_t nsw = 0;
	char ns[64];
	int ret;

	for (uint32_t i = 0; i < e->t->nnodes; i++)
		nsw += e->t->nodes[i].kind == TOPO_SWITCH;
	e->sw = calloc(nsw ? nsw : 1, sizeof(*e->sw));
	if (e->sw == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->t->nnodes; i++) {
		const struct topo_node *n = &e->t->nodes[i];
		struct exp_switch *s = &e->sw[e->nsw];
		struct sock_arg sa = {.fd = -1};

		if (n->kind != TOPO_SWITCH)
			continue;
		e->nsw++;
		s->name = n->name;
		s->sock = -1;
		fab_pin_path(e->fabric, n->name, s->pin, sizeof(s->pin));
		fab_ns_name(e->t, n, ns, sizeof(ns));
		ret = fab_in_netns(ns, make_sock, &sa);
		if (ret < 0) {
			ice_err(FAB_SUB, "switch %s: no socket in %s: %s", n->name, ns,
				strerror(-ret));
			return ret;
		}
		s->sock = sa.fd;
		s->ports = calloc(n->nports ? n->nports : 1, sizeof(*s->ports));
		if (s->ports == NULL)
			return -ENOMEM;
		s->nports = n->nports;
		for (uint32_t j = 0; j < n->nports; j++) {
			const struct topo_port *p = &e->t->ports[n->ports[j]];
			struct exp_port *ep = &s->ports[j];

			snprintf(ep->ifname, sizeof(ep->ifname), "%s", p->ifname);
			ep->peer = e->t->nodes[e->t->ports[p->peer].node].name;
			ice_rkey_str(ep->key, sizeof(ep->key), ICE_RK_SW_PORT, e->fabric, s->name,
				     ep->ifname);
			ice_rkey_str(ep->key_ts, sizeof(ep->key_ts), ICE_RK_SW_PORT_TS, e->fabric,
				     s->name, ep->ifname);
			snprintf(ep->member, sizeof(ep->member), "%s:%s", s->name, ep->ifname);
		}
		e->nports += n->nports;
	}
	return 0;
}

static void exp_close(struct exporter *e)
{
	for (uint32_t i = 0; i < e->nsw; i++) {
		ice_sw_reader_close(e->sw[i].rd);
		if (e->sw[i].sock >= 0)
			close(e->sw[i].sock);
		free(e->sw[i].ports);
	}
	free(e->sw);
	e->sw = NULL;
	e->nsw = 0;
}

/* One port: its flags, then its counters when the switch has the model. */
static void read_port(struct exporter *e, struct exp_switch *s, struct exp_port *p, uint64_t mono,
		      uint64_t wall)
{
	struct fab_telem_read *r = &p->r;
	struct ice_port_stats st;
	struct ifreq ifr = {0};
	int ret;

	memset(r, 0, sizeof(*r));
	r->mono_ns = mono;
	r->wall_ms = wall;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->ifname);
	if (ioctl(s->sock, SIOCGIFFLAGS, &ifr) != 0) {
		if (!p->absent)
			ice_warn(FAB_SUB, "%s: no interface %s in the switch: %s", p->member,
				 p->ifname, strerror(errno));
		p->absent = true;
		r->oper = FAB_OPER_NOT_PRESENT;
		p->ifindex = 0;
		return;
	}
	if (p->absent)
		ice_info(FAB_SUB, "%s: interface %s is back", p->member, p->ifname);
	p->absent = false;
	r->admin_up = (ifr.ifr_flags & IFF_UP) != 0;
	r->oper = r->admin_up && (ifr.ifr_flags & IFF_RUNNING) ? FAB_OPER_UP : FAB_OPER_DOWN;
	if (s->rd == NULL)
		return;
	if (p->ifindex == 0) {
		if (ioctl(s->sock, SIOCGIFINDEX, &ifr) != 0)
			return;
		p->ifindex = ifr.ifr_ifindex;
	}
	ret = ice_sw_reader_port(s->rd, p->ifindex, mono, &st);
	if (ret < 0) {
		e->read_errors += ret != -ENOENT;
		return;
	}
	r->counters = true;
	r->map_id = ice_sw_reader_id(s->rd);
	r->octets = st.c.bytes;
	r->pkts = st.c.packets;
	r->ecn_marked = st.c.ce_marked;
	r->tail_drops = st.c.drops;
	r->wred_drops = st.c.wred_drops;
	r->injected_drops = st.c.injected_drops;
	r->depth = st.depth_now;
	r->peak_depth = st.c.peak_depth;
	r->depth_area = st.c.depth_area;
}

static void read_all(struct exporter *e)
{
	e->seq++;
	for (uint32_t i = 0; i < e->nsw; i++) {
		struct exp_switch *s = &e->sw[i];
		uint64_t mono, wall;

		/* a switch reloaded (maps pinned anew), or not loaded yet */
		if (s->rd != NULL && ice_sw_reader_stale(s->rd)) {
			ice_info(FAB_SUB, "switch %s: its maps were pinned anew; reading those",
				 s->name);
			ice_sw_reader_close(s->rd);
			s->rd = NULL;
		}
		if (s->rd == NULL) {
			s->rd = ice_sw_reader_open(s->pin);
			for (uint32_t j = 0; j < s->nports; j++)
				s->ports[j].ifindex = 0;
		}
		mono = ice_now_ns();
		wall = ice_wall_ms();
		for (uint32_t j = 0; j < s->nports; j++) {
			struct exp_port *p = &s->ports[j];

			read_port(e, s, p, mono, wall);
			if (!fab_telem_update(&p->t, &p->r))
				continue;
			e->resets++;
			if (p->t.resets == 1) /* once per port; `resets` counts the rest */
				ice_warn(
					FAB_SUB,
					"%s: counters went back (switch reloaded?): counted in "
					"its `resets` field, this interval from zero; later resets "
					"of this port are not logged",
					p->member);
		}
	}
}

/* Ports whose oper-status differs from their last reading's: flags only,
 * one ioctl each. */
static uint32_t oper_changed(struct exporter *e)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < e->nsw; i++)
		for (uint32_t j = 0; j < e->sw[i].nports; j++) {
			const struct exp_port *p = &e->sw[i].ports[j];
			struct ifreq ifr = {0};
			enum fab_oper o = FAB_OPER_NOT_PRESENT;

			snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->ifname);
			if (ioctl(e->sw[i].sock, SIOCGIFFLAGS, &ifr) == 0)
				o = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING)
					    ? FAB_OPER_UP
					    : FAB_OPER_DOWN;
			n += o != p->r.oper;
		}
	return n;
}

/* ---- writing them ------------------------------------------------------------------- */

/* Append one command of argc words. */
static void cmd(struct exporter *e, unsigned *n, int argc, const char **argv)
{
	if (ice_redis_appendv(&e->link, argc, argv, NULL) == 0)
		(*n)++;
}

static int exp_register(struct exporter *e)
{
	const char *argv[24];
	char pid[16], ims[24], st[24], con[16], ml[24], mt[24];
	unsigned n = 0;
	int argc;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(ims, sizeof(ims), "%" PRIu64, (uint64_t)(e->o->interval_ns / ICE_NSEC_PER_MSEC));
	snprintf(st, sizeof(st), "%" PRIu64, e->started_ms);
	snprintf(con, sizeof(con), "%u", e->link.connects);
	snprintf(ml, sizeof(ml), "%" PRIu64, e->missed_last);
	snprintf(mt, sizeof(mt), "%" PRIu64, e->missed_total);
	for (uint32_t i = 0; i < e->nsw; i++)
		for (uint32_t j = 0; j < e->sw[i].nports; j++) {
			struct exp_port *p = &e->sw[i].ports[j];
			const char *sadd[] = {"SADD", e->key_ports, p->member};
			const char *hset[] = {"HSET", p->key,	 "switch", e->sw[i].name,
					      "port", p->ifname, "peer",   p->peer};

			cmd(e, &n, 3, sadd);
			cmd(e, &n, 8, hset);
		}
	argc = 0;
	argv[argc++] = "HSET";
	argv[argc++] = e->key_exp;
	argv[argc++] = "fabric";
	argv[argc++] = e->fabric;
	argv[argc++] = "pid";
	argv[argc++] = pid;
	argv[argc++] = "interval_ms";
	argv[argc++] = ims;
	argv[argc++] = "started_ms";
	argv[argc++] = st;
	argv[argc++] = "state";
	argv[argc++] = "running";
	argv[argc++] = "connects";
	argv[argc++] = con;
	argv[argc++] = "missed_last";
	argv[argc++] = ml;
	argv[argc++] = "missed_total";
	argv[argc++] = mt;
	cmd(e, &n, argc, argv);
	argv[0] = "HDEL";
	argv[2] = "stopped_ms";
	cmd(e, &n, 3, argv);
	return ice_redis_pipe(&e->link, n, NULL, &e->errors);
}

static int exp_publish(struct exporter *e)
{
	char cap[16], seq[24], ts[24], ports[16], rs[24], ov[24], re[24], oc[24];
	const char *argv[6 + 2 * FAB_TELEM_MAX_FIELDS];
	uint64_t wall = 0;
	unsigned n = 0;

	snprintf(cap, sizeof(cap), "%u", e->o->stream_cap);
	for (uint32_t i = 0; i < e->nsw; i++)
		for (uint32_t j = 0; j < e->sw[i].nports; j++) {
			struct exp_port *p = &e->sw[i].ports[j];
			struct fab_telem_field f[FAB_TELEM_MAX_FIELDS];
			int k = fab_telem_fields(&p->t, &p->r, f), argc = 6;

			for (int x = 0; x < k; x++) {
				argv[argc++] = f[x].name;
				argv[argc++] = f[x].val;
			}
			argv[0] = "XADD";
			argv[1] = p->key_ts;
			argv[2] = "MAXLEN";
			argv[3] = "~";
			argv[4] = cap;
			argv[5] = "*";
			cmd(e, &n, argc, argv);
			argv[4] = "HSET";
			argv[5] = p->key;
			cmd(e, &n, argc - 4, argv + 4);
			wall = p->r.wall_ms;
		}
	snprintf(seq, sizeof(seq), "%" PRIu64, e->seq);
	snprintf(ts, sizeof(ts), "%" PRIu64, wall ? wall : ice_wall_ms());
	snprintf(ports, sizeof(ports), "%u", e->nports);
	snprintf(rs, sizeof(rs), "%" PRIu64, e->resets);
	snprintf(ov, sizeof(ov), "%" PRIu64, e->overruns);
	snprintf(re, sizeof(re), "%" PRIu64, e->read_errors);
	snprintf(oc, sizeof(oc), "%" PRIu64, e->oper_changes);
	{
		const char *h[] = {"HSET",	  e->key_exp, "seq",	      seq, "ts_ms",    ts,
				   "ports",	  ports,      "resets",	      rs,  "overruns", ov,
				   "read_errors", re,	      "oper_changes", oc};

		cmd(e, &n, sizeof(h) / sizeof(h[0]), h);
	}
	return ice_redis_pipe(&e->link, n, NULL, &e->errors);
}

static void exp_down(struct exporter *e, const char *why)
{
	uint64_t now = ice_now_ns();

	ice_redis_down(&e->link, now, why);
	e->up = false;
	if (!e->down_logged)
		ice_warn(FAB_SUB, "redis at %s unreachable: %s; still reading, retrying in %g s",
			 e->redis, e->link.why, (double)(e->link.next_try_ns - now) / 1e9);
	e->down_logged = true;
}

/* This interval's records, or one more missed interval. */
static void exp_write(struct exporter *e)
{
	uint64_t now = ice_now_ns();

	if (!e->up) {
		int ret = ice_redis_up(&e->link, now);

		if (ret == -ECONNREFUSED && !e->down_logged) {
			ice_warn(FAB_SUB, "redis at %s unreachable: %s; still reading, retrying",
				 e->redis, e->link.why);
			e->down_logged = true;
		}
		if (ret >= 0) {
			uint64_t missed = e->missed;

			/* what was missed goes into the registration */
			e->missed_last = missed;
			e->missed_total += missed;
			e->missed = 0;
			if (exp_register(e) < 0) {
				e->missed = missed; /* still the same outage */
				e->missed_total -= missed;
				exp_down(e, NULL);
			} else {
				e->up = true;
				e->down_logged = false;
				if (e->link.connects > 1 || missed > 0)
					ice_info(FAB_SUB,
						 "redis at %s: back after %" PRIu64
						 " missed intervals (%.1f s); %" PRIu64
						 " missed in all",
						 e->redis, missed,
						 (double)(missed * e->o->interval_ns) / 1e9,
						 e->missed_total);
				else
					ice_info(FAB_SUB,
						 "redis at %s: connected; exporting %u ports of %u "
						 "switches every %" PRIu64 " ms",
						 e->redis, e->nports, e->nsw,
						 (uint64_t)(e->o->interval_ns / ICE_NSEC_PER_MSEC));
			}
		}
	}
	if (!e->up) {
		e->missed++;
		return;
	}
	if (exp_publish(e) < 0) {
		e->missed++;
		exp_down(e, NULL);
	}
}

/* A clean stop: say so in Redis (one try). */
static void exp_offline(struct exporter *e)
{
	char now[24];
	unsigned n = 0;

	if (!e->up)
		return;
	snprintf(now, sizeof(now), "%" PRIu64, ice_wall_ms());
	{
		const char *h[] = {"HSET", e->key_exp, "state", "stopped", "stopped_ms", now};

		cmd(e, &n, 6, h);
	}
	ice_redis_pipe(&e->link, n, NULL, NULL);
}

/* ---- the process -------------------------------------------------------------------- */

int fab_export_run(const char *name, const struct fab_export_opts *o)
{
	struct exporter e = {.fabric = name, .o = o};
	struct sigaction sa = {.sa_handler = exp_on_signal};
	char pidpath[512], topo_path[512], port[16];
	uint64_t next, alive_check;
	int pidfd, ret;

	if (o->redis[0] != '\0') {
		snprintf(e.redis, sizeof(e.redis), "%s", o->redis);
	} else if (fab_redis_port(name, port)) {
		fab_redis_auth_exporter(name);
		snprintf(e.redis, sizeof(e.redis), FAB_MGMT_NET ".%u.1:%s", fab_mgmt_byte(name),
			 port);
	} else {
		ice_err(FAB_SUB,
			"fabric %s has no Redis (`up --redis PORT`): name one with --redis "
			"HOST:PORT",
			name);
		return -EINVAL;
	}
	e.t = fab_topo(name);
	if (e.t == NULL)
		return -ENOENT;
	ice_rkey_str(e.key_exp, sizeof(e.key_exp), ICE_RK_SW_EXPORTER, name, NULL, NULL);
	ice_rkey_str(e.key_ports, sizeof(e.key_ports), ICE_RK_SW_PORTS, name, NULL, NULL);
	pidfd = exp_pidfile(name, pidpath, sizeof(pidpath));
	if (pidfd < 0) {
		ret = pidfd;
		goto err_topo;
	}
	ret = exp_open(&e);
	if (ret < 0)
		goto err_close;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ice_redis_init(&e.link, e.redis, o->redis_timeout_ns);
	e.link.backoff_max_ns = EXP_BACKOFF_MAX_NS;
	e.started_ms = ice_wall_ms();
	fab_state_path(name, "topo.yaml", topo_path, sizeof(topo_path));
	ice_info(FAB_SUB,
		 "fabric %s: exporter pid %d, %u switches, %u ports, every %" PRIu64
		 " ms, to redis at %s",
		 name, (int)getpid(), e.nsw, e.nports,
		 (uint64_t)(o->interval_ns / ICE_NSEC_PER_MSEC), e.redis);

	next = ice_now_ns();
	alive_check = next + EXP_ALIVE_CHECK_NS;
	while (!exp_stop) {
		struct timespec ts;
		uint64_t now;

		read_all(&e);
		exp_write(&e);
		now = ice_now_ns();
		if (now >= alive_check) {
			alive_check = now + EXP_ALIVE_CHECK_NS;
			if (access(topo_path, F_OK) != 0) {
				ice_info(FAB_SUB, "fabric %s is down: the exporter stops", name);
				break;
			}
		}
		next += o->interval_ns;
		if (now >= next) { /* late (a stall, a slow Redis): skip, and count */
			uint64_t late = (now - next) / o->interval_ns + 1;

			e.overruns += late;
			next += late * o->interval_ns;
		}
		/* until the next reading, or a port's oper-status changes */
		for (;;) {
			uint64_t wake = next;
			uint32_t changed;

			if (o->oper_poll_ns != 0 && now + o->oper_poll_ns < next)
				wake = now + o->oper_poll_ns;
			ts.tv_sec = (time_t)(wake / ICE_NSEC_PER_SEC);
			ts.tv_nsec = (long)(wake % ICE_NSEC_PER_SEC);
			while (!exp_stop &&
			       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			now = ice_now_ns();
			if (exp_stop || now >= next)
				break;
			changed = oper_changed(&e);
			if (changed != 0) { /* read now; the next reading an interval on */
				e.oper_changes += changed;
				next = now;
				break;
			}
		}
	}
	exp_offline(&e);
	{
		struct rusage ru;
		double cpu = 0, wall = (double)(ice_wall_ms() - e.started_ms) / 1e3;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
			      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
		ice_info(FAB_SUB,
			 "fabric %s: exporter stops after %" PRIu64 " intervals (%" PRIu64
			 " missed, %" PRIu64 " overrun, %" PRIu64
			 " counter resets); CPU %.2f s in %.1f s (%.2f %% of a core)",
			 name, e.seq, e.missed_total + e.missed, e.overruns, e.resets, cpu, wall,
			 wall > 0 ? 100 * cpu / wall : 0.0);
	}
	ice_redis_fini(&e.link);
	ret = 0;
err_close:
	exp_close(&e);
	unlink(pidpath); /* while it is still locked: no successor has it yet */
	close(pidfd);
err_topo:
	topo_free(e.t);
	return ret;
}

/* ---- starting it from `up` ------------------------------------------------------------ */

int fab_export_start(const char *name, uint64_t interval_ns)
{
	char log[512], ival[32], err[512] = "", exe[PATH_MAX];
	pid_t pid;
	int status;

	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (k <= 0 || (size_t)k >= sizeof(exe) - 1)
		snprintf(exe, sizeof(exe), "/proc/self/exe");
	else
		exe[k] = '\0';
	fab_state_path(name, "export.log", log, sizeof(log));
	if (interval_ns % ICE_NSEC_PER_MSEC == 0)
		snprintf(ival, sizeof(ival), "%" PRIu64 "ms",
			 (uint64_t)(interval_ns / ICE_NSEC_PER_MSEC));
	else
		snprintf(ival, sizeof(ival), "%" PRIu64 "us",
			 (uint64_t)(interval_ns / ICE_NSEC_PER_USEC));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644),
		    nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setsid();
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		/* nothing of the caller's (a pipe, a lock) stays held by the daemon */
		for (int i = 3; i < 1024; i++)
			close(i);
		/* this program's own `export` command (ice-fabric), by its path so
		 * that ps names it */
		execl(exe, "ice-fabric", "export", name, "--interval", ival, (char *)NULL);
		fprintf(stderr, "cannot run %s export: %s\n", exe, strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 300; i++) { /* up to 3 s for its pid file */
		if (fab_export_pid(name) == pid)
			return 0;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		ice_sleep_ns(10 * ICE_NSEC_PER_MSEC);
	}
	{
		FILE *f = fopen(log, "r");

		if (f != NULL) {
			size_t got = fread(err, 1, sizeof(err) - 1, f);

			err[got] = '\0';
			fclose(f);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ice_err(FAB_SUB, "fabric %s: the switch telemetry exporter did not start: %s", name,
		err[0] ? err : "(no output)");
	return -EIO;
}
