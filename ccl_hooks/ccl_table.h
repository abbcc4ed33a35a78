/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_table: the two tables ccl_hooks is generated from. Only macros: the
 * linker version script is made from this file by the C preprocessor
 * (libice-ccl.map.in), so it must stay free of C declarations.
 *
 *   CCL_VENDORS(V)   V(prefix, soname): one row per library prefix
 *   CCL_FUNCS(F, a)  F(a, Name): one row per hooked, exported entry point
 *   CCL_HELPERS(F, a) entry points the hooks call but do not export
 *   CCL_HCCL_FUNCS, CCL_CNCL_FUNCS (and _HELPERS): the same for libraries
 *                    with their own names, one whole name per row
 */
#ifndef CCL_TABLE_H
#define CCL_TABLE_H

/* Prefixes: V(prefix, soname tried when the symbols are not yet visible). */
#define CCL_VENDORS(V)                                                                             \
	V(nccl, "libnccl.so.2") /* NVIDIA NCCL; RCCL, Iluvatar, Hygon DTK use it too */            \
	V(mccl, "libmccl.so")	/* MetaX, Moore Threads */                                         \
	V(succl, "libsuccl.so") /* Biren */                                                        \
	V(eccl, "libeccl.so")	/* Enflame */

/* Hooked (exported) entry points. */
#define CCL_FUNCS(F, a)                                                                            \
	F(a, CommInitRank)                                                                         \
	F(a, CommInitAll)                                                                          \
	F(a, CommInitRankConfig)                                                                   \
	F(a, CommSplit)                                                                            \
	F(a, CommDestroy)                                                                          \
	F(a, CommAbort)                                                                            \
	F(a, AllReduce)                                                                            \
	F(a, ReduceScatter)                                                                        \
	F(a, AllGather)                                                                            \
	F(a, Broadcast)                                                                            \
	F(a, Reduce)                                                                               \
	F(a, AlltoAll)                                                                             \
	F(a, Send)                                                                                 \
	F(a, Recv)                                                                                 \
	F(a, GroupStart)                                                                           \
	F(a, GroupEnd)

/* Resolved but not exported: helpers the hooks call themselves. */
#define CCL_HELPERS(F, a)                                                                          \
	F(a, CommCount)                                                                            \
	F(a, CommUserRank)

/* Libraries with an API of their own (names, argument orders and types
 * differ from NCCL's; ccl_native.c): F(a, whole name), the exported entry
 * points first, then the helpers the hooks call (HELPERS: not exported). */
#define CCL_HCCL_FUNCS(F, a)                                                                       \
	F(a, HcclCommInitRootInfo)                                                                 \
	F(a, HcclCommInitRootInfoConfig)                                                           \
	F(a, HcclCommInitClusterInfo)                                                              \
	F(a, HcclCommInitClusterInfoConfig)                                                        \
	F(a, HcclCommInitAll)                                                                      \
	F(a, HcclCommDestroy)                                                                      \
	F(a, HcclAllReduce)                                                                        \
	F(a, HcclBroadcast)                                                                        \
	F(a, HcclReduceScatter)                                                                    \
	F(a, HcclAllGather)                                                                        \
	F(a, HcclReduce)                                                                           \
	F(a, HcclAlltoAll)                                                                         \
	F(a, HcclSend)                                                                             \
	F(a, HcclRecv)                                                                             \
	F(a, HcclGroupStart)                                                                       \
	F(a, HcclGroupEnd)
#define CCL_HCCL_HELPERS(F, a) F(a, HcclGetRankSize)

#define CCL_CNCL_FUNCS(F, a)                                                                       \
	F(a, cnclInitComms)                                                                        \
	F(a, cnclFreeComm)                                                                         \
	F(a, cnclDestroyComms)                                                                     \
	F(a, cnclAbortComm)                                                                        \
	F(a, cnclAllReduce)                                                                        \
	F(a, cnclBroadcast)                                                                        \
	F(a, cnclBcast)                                                                            \
	F(a, cnclReduceScatter)                                                                    \
	F(a, cnclAllGather)                                                                        \
	F(a, cnclReduce)                                                                           \
	F(a, cnclAlltoAll)                                                                         \
	F(a, cnclSend)                                                                             \
	F(a, cnclRecv)                                                                             \
	F(a, cnclGroupStart)                                                                       \
	F(a, cnclGroupEnd)
#define CCL_CNCL_HELPERS(F, a)

#endif /* CCL_TABLE_H */
