/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dev_mem_dev: how device backends register with dev_mem. Each returns its
 * ops table when built in (ICE_HAVE_CUDA / ICE_HAVE_HIP), NULL otherwise
 * (dev_mem_none.c provides the NULL versions).
 */
#ifndef DEV_BACKENDS_H
#define DEV_BACKENDS_H

#include "dev.h"

const struct dev_mem_ops *dev_mem_cuda_ops(void);
const struct dev_mem_ops *dev_mem_hip_ops(void);

#endif /* DEV_BACKENDS_H */
