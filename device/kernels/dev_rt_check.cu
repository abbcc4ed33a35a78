/* SPDX-License-Identifier: Apache-2.0 */
/* Configure-time check that the device compiler (nvcc or hipcc) works. */
#ifdef __HIP__
#include <hip/hip_runtime.h>
#endif

__global__ void dev_rt_check(int *p)
{
	p[threadIdx.x] = (int)threadIdx.x;
}
