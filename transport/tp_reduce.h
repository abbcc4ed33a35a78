/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_reduce: datatypes and reduction operators for the collectives, on host
 * memory. Loops are written so the compiler vectorises them (-O2 -ftree-
 * vectorize; f16/bf16 convert through f32 in blocks).
 */
#ifndef TP_REDUCE_H
#define TP_REDUCE_H

#include <stddef.h>
#include <stdint.h>

enum tp_dtype {
	TP_INT8 = 0, /* nccl ncclInt8 */
	TP_UINT8,
	TP_INT32,
	TP_UINT32,
	TP_INT64,
	TP_UINT64,
	TP_FLOAT16,
	TP_FLOAT32,
	TP_FLOAT64,
	TP_BFLOAT16,
	TP_DTYPE_MAX,
};

enum tp_redop {
	TP_SUM = 0,
	TP_PROD,
	TP_MAX,
	TP_MIN,
	TP_AVG, /* sum, then divided by nranks in the final step */
	TP_REDOP_MAX,
};

size_t tp_dtype_size(enum tp_dtype t);
/* nccl-tests names: "int8", "uint8", "int32", "uint32", "int64", "uint64",
 * "half", "float", "double", "bfloat16"; also accepts "f32", "f16", "bf16",
 * "f64", "i32", "i64", "u8". Returns -1 when unknown. */
int tp_dtype_parse(const char *s);
const char *tp_dtype_name(enum tp_dtype t);
/* "sum", "prod", "max", "min", "avg"; -1 when unknown. */
int tp_redop_parse(const char *s);
const char *tp_redop_name(enum tp_redop op);

/* dst[i] = dst[i] op src[i] for count elements (TP_AVG reduces as a sum).
 * dst and src may be equal but must not otherwise overlap. */
void tp_reduce(void *dst, const void *src, size_t count, enum tp_dtype t, enum tp_redop op);
/* dst[i] = a[i] op b[i]; dst may equal a or b. */
void tp_reduce3(void *dst, const void *a, const void *b, size_t count, enum tp_dtype t,
		enum tp_redop op);
/* dst[i] /= n, for TP_AVG's final step (integers: truncating division). */
void tp_scale_div(void *buf, size_t count, enum tp_dtype t, int n);

/* Scalar conversions for tests and for filling buffers. */
float tp_half_to_float(uint16_t h);
uint16_t tp_float_to_half(float f); /* round to nearest even */
float tp_bf16_to_float(uint16_t b);
uint16_t tp_float_to_bf16(float f); /* round to nearest even */

/* Store the value v (as double) at element i of buf of type t (saturating
 * conversion for integers), and read element i back as double. */
void tp_elem_set(void *buf, size_t i, enum tp_dtype t, double v);
double tp_elem_get(const void *buf, size_t i, enum tp_dtype t);

#endif /* TP_REDUCE_H */
