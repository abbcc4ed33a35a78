// SPDX-License-Identifier: Apache-2.0
/*
 * ice-host-bench: what the host NIC programs cost per packet.
 *
 * Runs ice_host_egress on fixed frames with bpf_prog_test_run_opts() and
 * prints, per scenario, the kernel's BPF run-time statistics
 * (bpf_enable_stats(BPF_STATS_RUN_TIME); prog info run_time_ns / run_cnt:
 * what the program costs when attached) next to test_run's own per-run
 * duration (which adds the test harness' loop). Scenarios: a data packet of
 * a known flow (the common case), a new flow each packet (map insert and
 * ring-buffer event; the LRU recycles), a UDP packet to another port, and
 * the known-flow case with sampling 1/16; and an empty tc program, the floor
 * that the run-time statistics add to any program. Needs root; loads the programs
 * without pinning or attaching anything. Prints figures, asserts nothing.
 *
 *   ice-host-bench [runs]     (default 1000000 per scenario)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "ice_roce.h"
#include "ice_host_loader.h"
#include "ice_log.h"

/* A 1082-byte RoCEv2 SEND_MIDDLE frame (IPv4, ECT(0), 1024 payload bytes). */
static size_t frame(uint8_t *b, size_t size, uint16_t dport, uint32_t qpn)
{
	uint8_t *ip = b + 14, *udp = ip + 20, *bth = udp + 8;
	size_t l4 = 8 + 12 + 1024 + 4;

	memset(b, 0, size);
	b[12] = 0x08; /* ETH_P_IP */
	ip[0] = 0x45;
	ip[1] = 2;
	ip[2] = (20 + l4) >> 8;
	ip[3] = (20 + l4) & 0xff;
	ip[8] = 64;
	ip[9] = 17;
	*(uint32_t *)(ip + 12) = inet_addr("10.1.0.5");
	*(uint32_t *)(ip + 16) = inet_addr("10.2.0.7");
	udp[0] = 0xc0;
	udp[2] = dport >> 8;
	udp[3] = dport & 0xff;
	udp[4] = l4 >> 8;
	udp[5] = l4 & 0xff;
	bth[0] = 0x01;
	bth[5] = qpn >> 16;
	bth[6] = qpn >> 8;
	bth[7] = qpn;
	return 14 + 20 + l4;
}

static void prog_stats(int fd, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
		memset(&info, 0, sizeof(info));
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
}

/* "return TC_ACT_UNSPEC": what run-time stats measure around any program. */
static int empty_prog(void)
{
	const struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = -1},
		{.code = BPF_JMP | BPF_EXIT},
	};

	return bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "ice_bench_empty", "GPL", insns, 2, NULL);
}

/* Drain the ring buffer so new-flow events never find it full. */
static void drain(struct ice_host *h)
{
	while (ice_host_poll_events(h, 0, NULL, NULL) > 0)
		;
}

/*
 * Run the egress program `runs` times in chunks of `chunk` repeats of one
 * frame; new_flow: a different QPN each run (chunk 1).
 */
static void bench(struct ice_host *h, int fd, const char *what, uint16_t dport, int new_flow,
		  long runs)
{
	static uint8_t pkt[2048];
	int chunk = new_flow ? 1 : 1000;
	uint64_t ns0, cnt0, ns1, cnt1, dur = 0;
	size_t len = frame(pkt, sizeof(pkt), dport, 1);
	long done = 0;

	/* Warm: the flow exists, the code is hot. */
	{
		DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
				    .repeat = 100);
		bpf_prog_test_run_opts(fd, &o);
	}
	prog_stats(fd, &ns0, &cnt0);
	while (done < runs) {
		DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
				    .repeat = chunk);
		if (new_flow) {
			uint32_t qpn = 0x10000 + (uint32_t)done;

			pkt[14 + 20 + 8 + 5] = qpn >> 16;
			pkt[14 + 20 + 8 + 6] = qpn >> 8;
			pkt[14 + 20 + 8 + 7] = qpn;
			if ((done & 1023) == 0) {
				uint64_t a, b;

				prog_stats(fd, &a, &b);
				drain(h); /* user space time: not in the figures */
				prog_stats(fd, &ns1, &cnt1);
				ns0 += ns1 - a;
				cnt0 += cnt1 - b;
			}
		}
		if (bpf_prog_test_run_opts(fd, &o) != 0) {
			printf("%-36s test_run failed: %s\n", what, strerror(errno));
			return;
		}
		dur += (uint64_t)o.duration * chunk;
		done += chunk;
	}
	prog_stats(fd, &ns1, &cnt1);
	printf("| %-36s | %10.1f | %10.1f | %10llu |\n", what,
	       cnt1 > cnt0 ? (double)(ns1 - ns0) / (cnt1 - cnt0) : 0.0, (double)dur / done,
	       (unsigned long long)(cnt1 - cnt0));
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? atol(argv[1]) : 1000000;
	struct ice_host_opts so = {.sample = 16};
	uint64_t st[ICE_HS_MAX];
	struct ice_host *h, *hs;
	int stats_fd, empty_fd;

	ice_log_init_env();
	if (geteuid() != 0) {
		fprintf(stderr, "ice-host-bench: needs root (BPF)\n");
		return 1;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "ice-host-bench: run-time stats unavailable: %s\n",
			strerror(errno));
		return 1;
	}
	empty_fd = empty_prog();
	h = ice_host_open(NULL, NULL);
	hs = ice_host_open(NULL, &so);
	if (h == NULL || hs == NULL) {
		fprintf(stderr, "ice-host-bench: cannot load the programs: %s\n", strerror(errno));
		return 1;
	}
	printf("ice_host_egress, %ld runs per scenario, 1082-byte RoCEv2 frames, %ld CPUs\n\n",
	       runs, sysconf(_SC_NPROCESSORS_ONLN));
	printf("| %-36s | %10s | %10s | %10s |\n", "scenario", "ns/pkt", "test_run", "runs");
	printf("|--------------------------------------|------------|------------|------------|\n");
	if (empty_fd >= 0)
		bench(h, empty_fd, "empty tc program (the stats' floor)", ICE_ROCE_UDP_PORT, 0,
		      runs);
	bench(h, ice_host_egress_fd(h), "data packet, known flow", ICE_ROCE_UDP_PORT, 0, runs);
	bench(h, ice_host_egress_fd(h), "data packet, new flow each packet", ICE_ROCE_UDP_PORT, 1,
	      runs / 10);
	bench(h, ice_host_egress_fd(h), "UDP to another port (not RoCE)", 4792, 0, runs);
	bench(hs, ice_host_egress_fd(hs), "data packet, known flow, sample 16", ICE_ROCE_UDP_PORT,
	      0, runs);
	printf("\nns/pkt: BPF run-time stats (run_time_ns / run_cnt), the attached cost.\n"
	       "test_run: bpf_prog_test_run's own per-run duration (includes its loop).\n");
	if (ice_host_stats(h, st) == 0)
		printf("outcomes: pkts %llu roce %llu not_roce %llu map_full %llu "
		       "ringbuf_full %llu\n",
		       (unsigned long long)st[ICE_HS_PKTS], (unsigned long long)st[ICE_HS_ROCE],
		       (unsigned long long)st[ICE_HS_NOT_ROCE],
		       (unsigned long long)st[ICE_HS_MAP_FULL],
		       (unsigned long long)st[ICE_HS_RINGBUF_FULL]);
	ice_host_close(hs);
	ice_host_close(h);
	if (empty_fd >= 0)
		close(empty_fd);
	close(stats_fd);
	return 0;
}
