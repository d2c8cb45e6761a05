// The AVX2 entry points of vmath (vmath_avx2.c is compiled with -mavx2
// -mfma; call them only when the CPU has AVX2 and FMA).
#ifndef HL_RUNTIME_VMATH_VMATH_AVX2_H_
#define HL_RUNTIME_VMATH_VMATH_AVX2_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/vmath/vmath.h"

bool hl_vmath_avx2_unary_f32(hl_vmath_fn_t fn, const float *x, float *y, int64_t n);
bool hl_vmath_avx2_unary_f64(hl_vmath_fn_t fn, const double *x, double *y, int64_t n);
hl_vmath_vector_fn_t hl_vmath_avx2_unary_vector_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_avx2_unary_vector_f64(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_avx2_binary_vector_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_avx2_binary_vector_f64(hl_vmath_fn_t fn);
bool hl_vmath_avx2_binary_f32(hl_vmath_fn_t fn, const float *a, const float *b, float *y,
                              int64_t n);
bool hl_vmath_avx2_binary_f64(hl_vmath_fn_t fn, const double *a, const double *b, double *y,
                              int64_t n);

#endif  // HL_RUNTIME_VMATH_VMATH_AVX2_H_
