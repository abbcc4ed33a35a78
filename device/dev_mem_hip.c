// SPDX-License-Identifier: Apache-2.0
/*
 * dev_mem_hip: the HIP memory backend (DEV_MEM_HIP). Host logic in
 * kernels/dev_gpu.c; the HIP runtime calls and kernels (the same
 * kernel source as CUDA) in the plugin libice-hip.so
 * (kernels/dev_rt_hip.hip, built by hipcc), loaded at run time.
 * meson defines ICE_HIP_BUILD_LIB / ICE_HIP_INSTALL_LIB.
 */
#include "dev_backends.h"
#include "dev_gpu.h"

#ifndef ICE_HIP_BUILD_LIB
#define ICE_HIP_BUILD_LIB NULL
#endif
#ifndef ICE_HIP_INSTALL_LIB
#define ICE_HIP_INSTALL_LIB NULL
#endif

static struct dev_gpu hip_gpu = {
	.kind = DEV_MEM_HIP,
	.name = "hip",
	.vendor = "HIP",
	.runtime = "libamdhip64",
	.env = "ICE_HIP_LIB",
	.lib = "libice-hip.so",
	.build_path = ICE_HIP_BUILD_LIB,
	.install_path = ICE_HIP_INSTALL_LIB,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

DEV_GPU_DEFINE_OPS(hip, &hip_gpu, DEV_MEM_HIP);

const struct dev_mem_ops *dev_mem_hip_ops(void)
{
	return &hip_ops;
}
