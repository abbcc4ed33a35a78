/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_table: the two tables ccl_hooks is generated from. Only macros: the
 * linker version script is made from this file by the C preprocessor
 * (libice-ccl.map.in), so it must stay free of C declarations.
 *
 *   CCL_VENDORS(V)   V(prefix, soname): one row per library prefix
 *   CCL_FUNCS(F, a)  F(a, Name): one row per hooked, exported entry point
 *   CCL_HELPERS(F, a) entry points the hooks call but do not export
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

#endif /* CCL_TABLE_H */
