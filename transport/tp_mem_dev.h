/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_mem_dev: how device backends register with tp_mem. Each returns its
 * ops table when built in (ICE_HAVE_CUDA / ICE_HAVE_HIP), NULL otherwise
 * (tp_mem_none.c provides the NULL versions).
 */
#ifndef TP_MEM_DEV_H
#define TP_MEM_DEV_H

#include "tp_mem.h"

const struct tp_mem_ops *tp_mem_cuda_ops(void);
const struct tp_mem_ops *tp_mem_hip_ops(void);

#endif /* TP_MEM_DEV_H */
