/* SPDX-License-Identifier: Apache-2.0 */
/* ice_bpf_util: what every ICE BPF loader needs — libbpf's messages routed
 * to ice_log, pin paths, bpffs directories, pinning an object's maps. */
#ifndef ICE_BPF_UTIL_H
#define ICE_BPF_UTIL_H

#include <stddef.h>
#include <stdint.h>

extern uint32_t bpf_log_sub; /* ICE_LOG=...,debug=bpf */

struct bpf_object;

#define ICE_BPFFS_ROOT "/sys/fs/bpf"

/* Route libbpf's messages through ice_log (one line each; the expected
 * noise of tc hook create/query/detach is demoted to debug). Idempotent. */
void ice_bpf_log_init(void);
/* "dir/name" into buf; -ENAMETOOLONG (logged) when it does not fit. */
int ice_bpf_path(char *buf, size_t size, const char *dir, const char *name);
/* mkdir -p under bpffs, mounting bpffs on /sys/fs/bpf first when needed. */
int ice_bpf_pin_dir_create(const char *dir);
/* Give every non-internal map of obj the pin path dir/<map name>, so a
 * reload reuses the pinned maps and their contents. */
int ice_bpf_pin_maps(struct bpf_object *obj, const char *dir);

#endif /* ICE_BPF_UTIL_H */
