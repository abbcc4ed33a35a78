// SPDX-License-Identifier: Apache-2.0
#include "tp_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ice_config.h"
#include "ice_time.h"
#include "tp_launch.h"

void tp_opts_init(struct tp_opts *t, const char *tool, int max_rank, const char *addr_base)
{
	memset(t, 0, sizeof(*t));
	tp_comm_cfg_default(&t->cc);
	t->tool = tool;
	t->max_rank = max_rank;
	t->rank = -1;
	snprintf(t->addr_base, sizeof(t->addr_base), "%s", addr_base);
}

void tp_opts_die(const struct tp_opts *t, const char *opt, const char *val, const char *expect)
{
	fprintf(stderr, "%s: %s '%s': expected %s\n", t->tool, opt, val, expect);
	exit(2);
}

long tp_opts_long(const struct tp_opts *t, const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max) {
		char buf[96];

		snprintf(buf, sizeof(buf), "an integer in [%ld, %ld]", min, max);
		tp_opts_die(t, opt, s, buf);
	}
	return v;
}

uint64_t tp_opts_size(const struct tp_opts *t, const char *opt, const char *s)
{
	uint64_t v;

	if (ice_parse_size(s, &v) < 0)
		tp_opts_die(t, opt, s, "a size like 8, 4K, 64M or 1G");
	return v;
}

bool tp_opts_handle(struct tp_opts *t, int c, const char *arg)
{
	struct tp_engine_cfg *e = &t->cc.eng;

	switch (c) {
	case 'q':
		t->cc.qps_per_conn = (uint32_t)tp_opts_long(t, "--qps", arg, 1, 64);
		break;
	case TP_OPT_RANK:
		t->rank = (int)tp_opts_long(t, "--rank", arg, 0, t->max_rank);
		break;
	case TP_OPT_BOOT:
		snprintf(t->bootstrap, sizeof(t->bootstrap), "%s", arg);
		break;
	case TP_OPT_ADDR:
		snprintf(t->addr, sizeof(t->addr), "%s", arg);
		break;
	case TP_OPT_ADDR_BASE:
		snprintf(t->addr_base, sizeof(t->addr_base), "%s", arg);
		break;
	case TP_OPT_NETNS:
		t->netns = (char *)arg;
		break;
	case TP_OPT_PORT:
		e->port = (uint16_t)tp_opts_long(t, "--port", arg, 1, 65535);
		break;
	case TP_OPT_MTU: {
		long m = tp_opts_long(t, "--mtu", arg, 256, 4096);

		if (m & (m - 1))
			tp_opts_die(t, "--mtu", arg, "256, 512, 1024, 2048 or 4096");
		e->mtu = (uint32_t)m;
		break;
	}
	case TP_OPT_LINE:
		if (ice_parse_rate(arg, &e->line_rate_bps) < 0)
			tp_opts_die(t, "--line-rate", arg, "a rate like 200mbit or 10gbit");
		break;
	case TP_OPT_DCQCN: {
		size_t nf;
		const struct ice_cfg_field *df = ice_dcqcn_fields(&nf);
		struct ice_cfg_err ce;
		char buf[512];

		if (ice_cfg_set_kv(df, nf, &e->dcqcn, arg, &ce) < 0) {
			fprintf(stderr, "%s: --dcqcn %s: %s\n", t->tool, arg,
				ice_cfg_err_str(&ce, buf, sizeof(buf)));
			exit(2);
		}
		break;
	}
	case TP_OPT_NODCQCN:
		e->dcqcn.enable = 0;
		break;
	case TP_OPT_NOICRC:
		e->icrc_verify = false;
		break;
	case TP_OPT_DROP:
		e->rx_drop_ppm = (uint32_t)tp_opts_long(t, "--drop-ppm", arg, 0, 500000);
		break;
	case TP_OPT_RTO_MIN:
		if (ice_parse_duration(arg, ICE_NSEC_PER_MSEC, &e->retx_timeout_ns) < 0 ||
		    e->retx_timeout_ns == 0 || e->retx_timeout_ns > e->rto_max_ns)
			tp_opts_die(t, "--rto-min", arg, "a time like 100ms, above 0 and up to 1s");
		break;
	case TP_OPT_PEER_TIMEOUT:
		if (ice_parse_duration(arg, ICE_NSEC_PER_SEC, &e->peer_timeout_ns) < 0 ||
		    e->peer_timeout_ns == 0)
			tp_opts_die(t, "--peer-timeout", arg, "a time like 5s, above 0");
		break;
	default:
		return false;
	}
	return true;
}

void tp_opts_usage(FILE *f, const char *addr_base)
{
	fprintf(f,
		"      --rank R           run only rank R (needs --bootstrap and --addr)\n"
		"      --bootstrap IP:PORT  rank 0's rendezvous address\n"
		"      --addr IP          this rank's RoCEv2 address\n"
		"      --addr-base IP     local ranks use IP, IP+1, ... (default %s)\n"
		"      --netns A,B,...    start one rank in each network namespace\n"
		"      --port N           RoCEv2 UDP port (default 4791)\n"
		"  -q, --qps N            QPs per connection (default 1)\n"
		"      --mtu N            RoCE payload MTU: 256, 512, ... 4096 (default 4096)\n"
		"      --line-rate RATE   NIC line rate for DCQCN and the pacer, e.g. 200mbit\n"
		"                         (default none)\n"
		"      --dcqcn KEY=VALUE  set a DCQCN parameter (mlx5 names); repeatable\n"
		"      --no-dcqcn         no congestion control (send at line rate)\n"
		"      --no-icrc-verify   do not check received ICRCs (like a NIC offload)\n"
		"      --drop-ppm N       drop N per million received packets (loss tests)\n"
		"      --rto-min TIME     retransmission timer floor, above the fabric's worst\n"
		"                         queueing delay (default 67ms, a NIC's timeout 14)\n"
		"      --peer-timeout TIME  a QP fails after this long without progress (5s)\n",
		addr_base);
}

int tp_opts_run(struct tp_opts *t, int nranks, int (*fn)(void *arg), void *arg)
{
	struct tp_launch l = {
		.tool = t->tool, .nranks = nranks, .netns = t->netns, .addr_base = t->addr_base};

	if (t->rank < 0)
		return tp_launch_ranks(&l, &t->cc, fn, arg);
	if (t->bootstrap[0] == '\0' || t->addr[0] == '\0') {
		fprintf(stderr, "%s: --rank needs --bootstrap IP:PORT and --addr IP\n", t->tool);
		return 2;
	}
	if (t->rank >= nranks) {
		fprintf(stderr, "%s: --rank %d: expected 0..%d\n", t->tool, t->rank, nranks - 1);
		return 2;
	}
	snprintf(t->cc.bootstrap, sizeof(t->cc.bootstrap), "%s", t->bootstrap);
	t->cc.rank = t->rank;
	t->cc.nranks = nranks;
	if (tp_launch_parse_addr(t->tool, "--addr", t->addr, &t->cc.eng.addr) < 0)
		return 2;
	return fn(arg);
}
