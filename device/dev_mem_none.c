// SPDX-License-Identifier: Apache-2.0
/* Device backends that were not built (no nvcc / hipcc): dev_mem reports
 * ENODEV for their kinds. Each function is compiled only when its backend
 * is absent (meson passes ICE_HAVE_CUDA / ICE_HAVE_HIP). */
#include "dev_backends.h"

#ifndef ICE_HAVE_CUDA
const struct dev_mem_ops *dev_mem_cuda_ops(void)
{
	return NULL;
}
#endif

#ifndef ICE_HAVE_HIP
const struct dev_mem_ops *dev_mem_hip_ops(void)
{
	return NULL;
}
#endif
