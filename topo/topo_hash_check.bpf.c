// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Compile check: topo_hash.h builds for BPF (clang -target bpf -O2), so the
 * tc program that plays a switch in the test bed can share the hash models
 * with user space. tests/topo/meson.build compiles it; by hand the verifier
 * accepts it (bpftool prog load OBJ /sys/fs/bpf/ice_x type classifier).
 */
#include <linux/bpf.h>

#include "topo_hash.h"

__attribute__((section("tc"), used)) int topo_hash_check(struct __sk_buff *skb)
{
	struct topo_hash_cfg cfg = {
		.alg = skb->mark % TOPO_HASH_ALG_MAX, .seed = skb->hash, .fields = TOPO_HF_5TUPLE};
	struct topo_5tuple t = {
		.saddr = skb->cb[0],
		.daddr = skb->cb[1],
		.sport = (th_u16)skb->cb[2],
		.dport = (th_u16)skb->cb[3],
		.proto = 17,
	};

	return (int)topo_hash_pick(&cfg, &t, skb->priority + 1);
}

char _license[] __attribute__((section("license"), used)) = "GPL";
