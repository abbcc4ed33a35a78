/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_launch: start the ranks of a job on this machine, for the tools
 * (ice-bench, ice-perf). Either N local ranks on consecutive loopback-range
 * addresses, or one rank inside each named network namespace (the test
 * bed's hosts), using the namespace's first IPv4 address. Rank 0's TCP
 * rendezvous socket is opened before the fork (inside rank 0's namespace),
 * so no rank can race it.
 */
#ifndef TP_LAUNCH_H
#define TP_LAUNCH_H

#include "tp.h"

struct tp_launch {
	const char *tool;      /* prefix of messages, e.g. "ice-bench" */
	int nranks;	       /* local mode: ranks to start */
	char *netns;	       /* "a,b,c": one rank per namespace (modified), or NULL */
	const char *addr_base; /* local mode: rank r binds addr_base + r */
};

/* Run fn in one process per rank with cc->rank, cc->nranks, cc->bootstrap,
 * cc->listen_fd and cc->eng.addr set; fn's return is the rank's exit status.
 * When a rank fails the others are stopped. Returns 0 when all exited 0,
 * 1 when one failed, 2 on bad arguments (after a message on stderr). */
int tp_launch_ranks(const struct tp_launch *l, struct tp_comm_cfg *cc, int (*fn)(void *arg),
		    void *arg);

/* Enter network namespace /run/netns/NAME; 0 or -errno (message printed). */
int tp_launch_enter_netns(const char *tool, const char *name);
/* First IPv4 address of an interface that is up and not loopback. */
int tp_launch_local_addr(struct in_addr *out);
/* A TCP socket listening on addr, any port; bootstrap gets "addr:port".
 * The fd or -errno. */
int tp_launch_listen(struct in_addr addr, char *bootstrap, size_t len);
/* Parse an IPv4 address for a flag; -EINVAL with a message naming it. */
int tp_launch_parse_addr(const char *tool, const char *flag, const char *s, struct in_addr *out);

#endif /* TP_LAUNCH_H */
