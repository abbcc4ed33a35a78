/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libice-hip.so: the HIP device runtime plugin (dev_rt.h), built by
 * hipcc and loaded by dev_gpu.c with dlopen. Same kernels and body as
 * the CUDA plugin (dev_kernels.cuh, dev_rt_impl.inc).
 */
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <string.h>

#include "dev_kernels.cuh"

#define GPU(x)			 hip##x
#define DEVRT_NAME		 "hip"
#define DEVRT_HOST_ALLOC(p, len) hipHostMalloc(p, len, hipHostMallocDefault)
#define DEVRT_HOST_FREE(p)	 hipHostFree(p)
#define DEVRT_PROP		 hipDeviceProp_t

#include "dev_rt.h"

static int devrt_classify(int native)
{
	switch ((hipError_t)native) {
	case hipSuccess:
		return DEV_RT_OK;
	case hipErrorOutOfMemory:
		return DEV_RT_ENOMEM;
	case hipErrorInvalidValue:
	case hipErrorInvalidDevicePointer:
	case hipErrorInvalidMemcpyDirection:
	case hipErrorInvalidHandle:
		return DEV_RT_EINVAL;
	case hipErrorNoDevice:
	case hipErrorInvalidDevice:
		return DEV_RT_ENODEV;
	case hipErrorInsufficientDriver:
	case hipErrorNotInitialized:
		return DEV_RT_ENODRV;
	case hipErrorNoBinaryForGpu:
	case hipErrorInvalidDeviceFunction:
	case hipErrorInvalidImage:
		return DEV_RT_ENOIMAGE;
	case hipErrorLaunchFailure:
	case hipErrorIllegalAddress:
	case hipErrorLaunchOutOfResources:
	case hipErrorInvalidConfiguration:
		return DEV_RT_ELAUNCH;
	default:
		return DEV_RT_EOTHER;
	}
}

/* "gfx90a" (gcnArchName also carries the target features: ":sramecc+:xnack-") */
static void devrt_arch_name(const hipDeviceProp_t &prop, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)strcspn(prop.gcnArchName, ":"), prop.gcnArchName);
}

#include "dev_rt_impl.inc"
