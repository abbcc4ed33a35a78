/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libice-cuda.so: the CUDA device runtime plugin (dev_rt.h), built by
 * nvcc and loaded by dev_gpu.c with dlopen. Links libcudart (shared).
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "dev_kernels.cuh"

#define GPU(x)			 cuda##x
#define DEVRT_NAME		 "cuda"
#define DEVRT_HOST_ALLOC(p, len) cudaMallocHost(p, len)
#define DEVRT_HOST_FREE(p)	 cudaFreeHost(p)
#define DEVRT_PROP		 cudaDeviceProp

#include "dev_rt.h"

static int devrt_classify(int native)
{
	switch ((cudaError_t)native) {
	case cudaSuccess:
		return DEV_RT_OK;
	case cudaErrorMemoryAllocation:
		return DEV_RT_ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidMemcpyDirection:
	case cudaErrorInvalidResourceHandle:
		return DEV_RT_EINVAL;
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
	case cudaErrorDevicesUnavailable:
		return DEV_RT_ENODEV;
	case cudaErrorInsufficientDriver:
	case cudaErrorInitializationError:
	case cudaErrorCallRequiresNewerDriver:
	case cudaErrorSystemDriverMismatch:
		return DEV_RT_ENODRV;
	case cudaErrorNoKernelImageForDevice:
	case cudaErrorInvalidDeviceFunction:
		return DEV_RT_ENOIMAGE;
	case cudaErrorLaunchFailure:
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchOutOfResources:
	case cudaErrorInvalidConfiguration:
		return DEV_RT_ELAUNCH;
	default:
		return DEV_RT_EOTHER;
	}
}

/* "sm_75" */
static void devrt_arch_name(const cudaDeviceProp &prop, char *buf, size_t len)
{
	snprintf(buf, len, "sm_%d%d", prop.major, prop.minor);
}

#include "dev_rt_impl.inc"
