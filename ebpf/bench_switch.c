// SPDX-License-Identifier: Apache-2.0
/*
 * bench_switch: what the switch port programs cost per packet.
 *
 * Runs ice_sw_egress and ice_sw_ingress on fixed packets with
 * bpf_prog_test_run_opts() and prints two figures per scenario: the test
 * run's own per-run duration, and the kernel's BPF run-time statistics
 * (bpf_enable_stats(BPF_STATS_RUN_TIME); prog info run_time_ns / run_cnt),
 * which is what the programs cost when attached. Needs root; loads the
 * programs without pinning or attaching anything (the port key is ifindex 1,
 * the loopback that test_run binds packets to). Prints figures, asserts
 * nothing.
 *
 *   bench_switch [runs]     (default 1000000 per scenario)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>

#include "ice_roce.h"
#include "ice_log.h"
#include "ice_switch_loader.h"

#define PORT 1 /* lo: where test_run puts the skb */

static const char *const alg_names[] = {"crc32",      "crc32c", "crc16",
					"crc16-ansi", "xor",	"toeplitz"};

/* A 1042-byte UDP/IPv4 frame (ECT(0), TTL 255) to 10.3.1.1:4791. */
static size_t frame(uint8_t *b, size_t size, uint16_t sport)
{
	struct iphdr *ip = (void *)(b + ETH_HLEN);
	uint16_t *ports = (void *)(ip + 1);

	memset(b, 0, size);
	b[12] = 0x08; /* ETH_P_IP */
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 2;
	ip->tot_len = htons(1028);
	ip->ttl = 255;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = inet_addr("10.1.0.5");
	ip->daddr = inet_addr("10.3.1.1");
	ports[0] = htons(sport);
	ports[1] = htons(ICE_ROCE_UDP_PORT);
	return ETH_HLEN + 1028;
}

static int prog_stats(int fd, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	int err = bpf_obj_get_info_by_fd(fd, &info, &len);

	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return err;
}

/*
 * Run prog runs times in chunks of chunk (a fresh packet each chunk, as
 * the programs rewrite TTL and ECN) and print the figures.
 */
static void bench(const char *what, int fd, long runs, int chunk)
{
	static uint8_t pkt[2048], out[2048];
	uint64_t ns0, cnt0, ns1, cnt1, dur = 0;
	size_t len = frame(pkt, sizeof(pkt), 50000);
	long done = 0;
	int verdict = -1;

	prog_stats(fd, &ns0, &cnt0);
	while (done < runs) {
		DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
				    .data_out = out, .data_size_out = sizeof(out), .repeat = chunk);
		if (bpf_prog_test_run_opts(fd, &o) != 0) {
			printf("%-44s test_run failed: %s\n", what, strerror(errno));
			return;
		}
		dur += (uint64_t)o.duration * chunk;
		verdict = o.retval;
		done += chunk;
	}
	prog_stats(fd, &ns1, &cnt1);
	printf("%-44s %8.1f ns/run (test_run)  %8.1f ns/run (run-time stats)  verdict %d\n", what,
	       (double)dur / done, cnt1 > cnt0 ? (double)(ns1 - ns0) / (cnt1 - cnt0) : 0.0,
	       verdict);
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? atol(argv[1]) : 1000000;
	struct ice_ecmp_member m[4];
	struct ice_port_cfg cfg;
	struct ice_sw *sw;
	int stats_fd;

	ice_log_init_env();
	if (geteuid() != 0) {
		fprintf(stderr, "bench_switch: needs root (BPF)\n");
		return 1;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		fprintf(stderr, "bench_switch: run-time stats unavailable: %s\n", strerror(errno));
	sw = ice_sw_open(NULL, ICE_SW_F_ECMP_MODEL);
	if (sw == NULL) {
		fprintf(stderr, "bench_switch: cannot load the programs: %s\n", strerror(errno));
		return 1;
	}
	printf("%ld runs per scenario, 1042-byte UDP frames\n", runs);

	/* Egress. */
	bench("egress: port not modelled (lookup miss)", ice_sw_egress_fd(sw), runs, 1000);
	cfg = (struct ice_port_cfg){.rate_bps = 100000000000ull, .buffer = 1 << 20};
	ice_sw_port_config(sw, PORT, &cfg);
	ice_sw_port_reset(sw, PORT, 0, 0);
	bench("egress: FIFO model, no ECN, empty queue", ice_sw_egress_fd(sw), runs, 1000);
	cfg.kmin = 100000;
	cfg.kmax = 400000;
	cfg.pmax = 200000;
	ice_sw_port_config(sw, PORT, &cfg);
	bench("egress: FIFO + RED, below Kmin", ice_sw_egress_fd(sw), runs, 1000);
	/* One run per syscall, like the marking scenarios (which rewrite ECN). */
	bench("egress: FIFO + RED, below Kmin, 1 per call", ice_sw_egress_fd(sw), runs / 10, 1);
	cfg.rate_bps = 0; /* the queue stays where it is put */
	cfg.kmin = 0;
	cfg.kmax = 1;
	cfg.pmax = 1000000;
	ice_sw_port_config(sw, PORT, &cfg);
	ice_sw_port_reset(sw, PORT, 10, 0);
	bench("egress: above Kmax, CE mark each packet", ice_sw_egress_fd(sw), runs / 10, 1);
	cfg.loss_ppm = 10000;
	ice_sw_port_config(sw, PORT, &cfg);
	bench("egress: above Kmax + 1% injected loss", ice_sw_egress_fd(sw), runs / 10, 1);
	cfg = (struct ice_port_cfg){.rate_bps = 0, .buffer = 100};
	ice_sw_port_config(sw, PORT, &cfg);
	bench("egress: tail drop", ice_sw_egress_fd(sw), runs, 1000);

	/* Ingress (ECMP). */
	for (int i = 0; i < 4; i++)
		m[i] = (struct ice_ecmp_member){PORT, inet_addr("10.0.0.2") + htonl(i), 0};
	ice_sw_ecmp_set(sw, (struct in_addr){inet_addr("10.3.0.0")}, 16, m, 4);
	ice_sw_ecmp_set(sw, (struct in_addr){inet_addr("10.1.0.0")}, 16, m, 1);
	for (int alg = 0; alg < TOPO_HASH_ALG_MAX; alg++) {
		struct topo_hash_cfg hc = {
			.alg = alg, .seed = 0xabcd1234, .fields = TOPO_HF_5TUPLE};
		char what[64];

		ice_sw_hash_set(sw, &hc);
		snprintf(what, sizeof(what), "ingress: ECMP n=4, %s", alg_names[alg]);
		bench(what, ice_sw_ingress_fd(sw), runs, 200); /* TTL 255: 200 hops per packet */
	}
	ice_sw_ecmp_set(sw, (struct in_addr){inet_addr("10.3.0.0")}, 16, m, 1);
	bench("ingress: ECMP n=1 (no hash)", ice_sw_ingress_fd(sw), runs, 200);
	ice_sw_ecmp_del(sw, (struct in_addr){inet_addr("10.3.0.0")}, 16);
	bench("ingress: no route (pass)", ice_sw_ingress_fd(sw), runs, 1000);

	ice_sw_close(sw);
	if (stats_fd >= 0)
		close(stats_fd);
	return 0;
}
