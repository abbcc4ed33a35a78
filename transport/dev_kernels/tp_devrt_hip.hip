/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libice-hip.so: the HIP device runtime plugin (tp_devrt.h), built by
 * hipcc and loaded by tp_mem_gpu.c with dlopen. Same kernels and body as
 * the CUDA plugin (tp_dev_kernels.cuh, tp_devrt_impl.inc).
 */
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <string.h>

#include "tp_dev_kernels.cuh"

#define GPU(x)			 hip##x
#define DEVRT_NAME		 "hip"
#define DEVRT_HOST_ALLOC(p, len) hipHostMalloc(p, len, hipHostMallocDefault)
#define DEVRT_HOST_FREE(p)	 hipHostFree(p)
#define DEVRT_PROP		 hipDeviceProp_t

#include "tp_devrt.h"

static int devrt_classify(int native)
{
	switch ((hipError_t)native) {
	case hipSuccess:
		return TP_DEVRT_OK;
	case hipErrorOutOfMemory:
		return TP_DEVRT_ENOMEM;
	case hipErrorInvalidValue:
	case hipErrorInvalidDevicePointer:
	case hipErrorInvalidMemcpyDirection:
	case hipErrorInvalidHandle:
		return TP_DEVRT_EINVAL;
	case hipErrorNoDevice:
	case hipErrorInvalidDevice:
		return TP_DEVRT_ENODEV;
	case hipErrorInsufficientDriver:
	case hipErrorNotInitialized:
		return TP_DEVRT_ENODRV;
	case hipErrorNoBinaryForGpu:
	case hipErrorInvalidDeviceFunction:
	case hipErrorInvalidImage:
		return TP_DEVRT_ENOIMAGE;
	case hipErrorLaunchFailure:
	case hipErrorIllegalAddress:
	case hipErrorLaunchOutOfResources:
	case hipErrorInvalidConfiguration:
		return TP_DEVRT_ELAUNCH;
	default:
		return TP_DEVRT_EOTHER;
	}
}

/* "gfx90a" (gcnArchName also carries the target features: ":sramecc+:xnack-") */
static void devrt_arch_name(const hipDeviceProp_t &prop, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)strcspn(prop.gcnArchName, ":"), prop.gcnArchName);
}

#include "tp_devrt_impl.inc"
