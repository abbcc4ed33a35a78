// SPDX-License-Identifier: Apache-2.0
/*
 * dev_mem_cuda: the CUDA memory backend (DEV_MEM_CUDA). Host logic in
 * kernels/dev_gpu.c; the CUDA runtime calls and kernels in the
 * plugin libice-cuda.so (kernels/dev_rt_cuda.cu, built by nvcc),
 * loaded at run time so binaries work where there is no GPU or no
 * libcudart. meson defines ICE_CUDA_BUILD_LIB / ICE_CUDA_INSTALL_LIB.
 */
#include "dev_backends.h"
#include "dev_gpu.h"

#ifndef ICE_CUDA_BUILD_LIB
#define ICE_CUDA_BUILD_LIB NULL
#endif
#ifndef ICE_CUDA_INSTALL_LIB
#define ICE_CUDA_INSTALL_LIB NULL
#endif

static struct dev_gpu cuda_gpu = {
	.kind = DEV_MEM_CUDA,
	.name = "cuda",
	.vendor = "CUDA",
	.runtime = "libcudart",
	.env = "ICE_CUDA_LIB",
	.lib = "libice-cuda.so",
	.build_path = ICE_CUDA_BUILD_LIB,
	.install_path = ICE_CUDA_INSTALL_LIB,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

DEV_GPU_DEFINE_OPS(cuda, &cuda_gpu, DEV_MEM_CUDA);

const struct dev_mem_ops *dev_mem_cuda_ops(void)
{
	return &cuda_ops;
}
