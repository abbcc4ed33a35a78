// SPDX-License-Identifier: Apache-2.0
/*
 * tp_mem_cuda: the CUDA memory backend (TP_MEM_CUDA). Host logic in
 * dev_kernels/tp_mem_gpu.c; the CUDA runtime calls and kernels in the
 * plugin libice-cuda.so (dev_kernels/tp_devrt_cuda.cu, built by nvcc),
 * loaded at run time so binaries work where there is no GPU or no
 * libcudart. meson defines ICE_CUDA_BUILD_LIB / ICE_CUDA_INSTALL_LIB.
 */
#include "tp_mem_dev.h"
#include "tp_mem_gpu.h"

#ifndef ICE_CUDA_BUILD_LIB
#define ICE_CUDA_BUILD_LIB NULL
#endif
#ifndef ICE_CUDA_INSTALL_LIB
#define ICE_CUDA_INSTALL_LIB NULL
#endif

static struct tp_gpu cuda_gpu = {
	.kind = TP_MEM_CUDA,
	.name = "cuda",
	.vendor = "CUDA",
	.runtime = "libcudart",
	.env = "ICE_CUDA_LIB",
	.lib = "libice-cuda.so",
	.build_path = ICE_CUDA_BUILD_LIB,
	.install_path = ICE_CUDA_INSTALL_LIB,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

TP_GPU_DEFINE_OPS(cuda, &cuda_gpu, TP_MEM_CUDA);

const struct tp_mem_ops *tp_mem_cuda_ops(void)
{
	return &cuda_ops;
}
