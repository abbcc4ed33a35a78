/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libice-cuda.so: the CUDA device runtime plugin (tp_devrt.h), built by
 * nvcc and loaded by tp_mem_gpu.c with dlopen. Links libcudart (shared).
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "tp_dev_kernels.cuh"

#define GPU(x)			 cuda##x
#define DEVRT_NAME		 "cuda"
#define DEVRT_HOST_ALLOC(p, len) cudaMallocHost(p, len)
#define DEVRT_HOST_FREE(p)	 cudaFreeHost(p)
#define DEVRT_PROP		 cudaDeviceProp

#include "tp_devrt.h"

static int devrt_classify(int native)
{
	switch ((cudaError_t)native) {
	case cudaSuccess:
		return TP_DEVRT_OK;
	case cudaErrorMemoryAllocation:
		return TP_DEVRT_ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidMemcpyDirection:
	case cudaErrorInvalidResourceHandle:
		return TP_DEVRT_EINVAL;
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
	case cudaErrorDevicesUnavailable:
		return TP_DEVRT_ENODEV;
	case cudaErrorInsufficientDriver:
	case cudaErrorInitializationError:
	case cudaErrorCallRequiresNewerDriver:
	case cudaErrorSystemDriverMismatch:
		return TP_DEVRT_ENODRV;
	case cudaErrorNoKernelImageForDevice:
	case cudaErrorInvalidDeviceFunction:
		return TP_DEVRT_ENOIMAGE;
	case cudaErrorLaunchFailure:
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchOutOfResources:
	case cudaErrorInvalidConfiguration:
		return TP_DEVRT_ELAUNCH;
	default:
		return TP_DEVRT_EOTHER;
	}
}

/* "sm_75" */
static void devrt_arch_name(const cudaDeviceProp &prop, char *buf, size_t len)
{
	snprintf(buf, len, "sm_%d%d", prop.major, prop.minor);
}

#include "tp_devrt_impl.inc"
