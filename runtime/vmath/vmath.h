// Vectorized transcendental functions over arrays (SLEEF, 1.0-ULP variants),
// used by the element-wise kernels for f32 and f64 and, through f32, for the
// 16-bit float types. Measured errors are in docs/NUMERICS.md.
//
//   if (hl_vmath_unary_f32(HL_VM_EXP, x, y, n)) ...   // y[i] = exp(x[i])
//
// x and y may be the same array (in place); otherwise they must not overlap.
// On x86-64 with AVX2 the 8-lane (f32) / 4-lane (f64) SLEEF routines run;
// elsewhere SLEEF's scalar routines of the same accuracy class.
#ifndef HL_RUNTIME_VMATH_VMATH_H_
#define HL_RUNTIME_VMATH_VMATH_H_

#include <stdbool.h>
#include <stdint.h>

typedef enum hl_vmath_fn {
  HL_VM_NONE = 0,
  HL_VM_EXP, HL_VM_EXPM1, HL_VM_LOG, HL_VM_LOG1P, HL_VM_TANH, HL_VM_LOGISTIC,
  HL_VM_SIN, HL_VM_COS, HL_VM_TAN, HL_VM_ERF, HL_VM_CBRT,
  HL_VM_POW, HL_VM_ATAN2,  // binary
  HL_VM_COUNT_
} hl_vmath_fn_t;

// Unary functions: false (nothing written) when fn is not a unary one.
bool hl_vmath_unary_f32(hl_vmath_fn_t fn, const float *x, float *y, int64_t n);
bool hl_vmath_unary_f64(hl_vmath_fn_t fn, const double *x, double *y, int64_t n);
// Binary functions (pow, atan2): y[i] = fn(a[i], b[i]).
bool hl_vmath_binary_f32(hl_vmath_fn_t fn, const float *a, const float *b, float *y, int64_t n);
bool hl_vmath_binary_f64(hl_vmath_fn_t fn, const double *a, const double *b, double *y,
                         int64_t n);
// The one-vector routine the unary array loops above call on this CPU, for
// generated code (runtime/fusion/jit) that must give the same bits: an
// 8-lane f32 / 4-lane f64 SLEEF function, argument and result in ymm0 (SysV
// vector ABI). NULL where the arrays run scalar routines (no AVX2 + FMA) and
// for fns that are not a SLEEF routine of their own (logistic).
typedef void (*hl_vmath_vector_fn_t)(void);
hl_vmath_vector_fn_t hl_vmath_unary_vector_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_unary_vector_f64(hl_vmath_fn_t fn);
// Where the array loops run SLEEF's scalar routines instead (no AVX2 + FMA,
// aarch64, ...): the routine they call per element, float (*)(float) /
// double (*)(double); NULL where they run vector routines and for fns that
// are not unary.
hl_vmath_vector_fn_t hl_vmath_unary_scalar_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_unary_scalar_f64(hl_vmath_fn_t fn);
// The same for the binary fns (pow, atan2): the vector routine of two
// vectors (ymm0, ymm1) the binary array loops call, or their scalar
// routine, float (*)(float, float) / double (*)(double, double).
hl_vmath_vector_fn_t hl_vmath_binary_vector_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_binary_vector_f64(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_binary_scalar_f32(hl_vmath_fn_t fn);
hl_vmath_vector_fn_t hl_vmath_binary_scalar_f64(hl_vmath_fn_t fn);
// "avx2" or "scalar": which SLEEF routines run on this CPU.
const char *hl_vmath_isa(void);
// An address in the code of the library the routines come from (SLEEF's
// shared object, or the binary it is linked into), so that its pages can
// be made resident ahead (runtime/base/code_pages.h).
const void *hl_vmath_library_code(void);

#endif  // HL_RUNTIME_VMATH_VMATH_H_
