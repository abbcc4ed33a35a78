// SPDX-License-Identifier: Apache-2.0
/*
 * tp_mem_hip: the HIP memory backend (TP_MEM_HIP). Host logic in
 * dev_kernels/tp_mem_gpu.c; the HIP runtime calls and kernels (the same
 * kernel source as CUDA) in the plugin libice-hip.so
 * (dev_kernels/tp_devrt_hip.hip, built by hipcc), loaded at run time.
 * meson defines ICE_HIP_BUILD_LIB / ICE_HIP_INSTALL_LIB.
 */
#include "tp_mem_dev.h"
#include "tp_mem_gpu.h"

#ifndef ICE_HIP_BUILD_LIB
#define ICE_HIP_BUILD_LIB NULL
#endif
#ifndef ICE_HIP_INSTALL_LIB
#define ICE_HIP_INSTALL_LIB NULL
#endif

static struct tp_gpu hip_gpu = {
	.kind = TP_MEM_HIP,
	.name = "hip",
	.vendor = "HIP",
	.runtime = "libamdhip64",
	.env = "ICE_HIP_LIB",
	.lib = "libice-hip.so",
	.build_path = ICE_HIP_BUILD_LIB,
	.install_path = ICE_HIP_INSTALL_LIB,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

TP_GPU_DEFINE_OPS(hip, &hip_gpu, TP_MEM_HIP);

const struct tp_mem_ops *tp_mem_hip_ops(void)
{
	return &hip_ops;
}
