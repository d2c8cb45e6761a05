// vmath dispatch: the AVX2 loops when the CPU has AVX2 and FMA, otherwise
// SLEEF's scalar routines of the same (1.0-ULP) class, element by element.
#include "runtime/vmath/vmath.h"

#include <math.h>
#include <sleef.h>
#include <string.h>

#include "runtime/vmath/vmath_avx2.h"

static bool use_avx2(void) {
#if defined(__x86_64__) && defined(HL_VMATH_HAVE_AVX2)
  static int cached = -1;
  if (cached < 0) cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cached;
#else
  return false;
#endif
}

const char *hl_vmath_isa(void) { return use_avx2() ? "avx2" : "scalar"; }

const void *hl_vmath_library_code(void) {
  hl_vmath_vector_fn_t routine = (hl_vmath_vector_fn_t)Sleef_logf_u10;
  const void *p;
  memcpy(&p, &routine, sizeof(p));  // function to object pointer
  return p;
}

hl_vmath_vector_fn_t hl_vmath_unary_vector_f32(hl_vmath_fn_t fn) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_unary_vector_f32(fn);
#endif
  (void)fn;
  return NULL;
}

hl_vmath_vector_fn_t hl_vmath_unary_vector_f64(hl_vmath_fn_t fn) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_unary_vector_f64(fn);
#endif
  (void)fn;
  return NULL;
}

static float logistic_f(float x) {
  float e = Sleef_expf_u10(-fabsf(x));
  return x < 0 ? e / (1.0f + e) : 1.0f / (1.0f + e);
}
static double logistic_d(double x) {
  double e = Sleef_exp_u10(-fabs(x));
  return x < 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
}

#define LOOP_(f) for (int64_t i = 0; i < n; i++) y[i] = f(x[i])

#define FN_(f) return (hl_vmath_vector_fn_t)(f)
hl_vmath_vector_fn_t hl_vmath_unary_scalar_f32(hl_vmath_fn_t fn) {
  if (use_avx2()) return NULL;
  switch (fn) {  // the routines of hl_vmath_unary_f32 below
    case HL_VM_EXP: FN_(Sleef_expf_u10);
    case HL_VM_EXPM1: FN_(Sleef_expm1f_u10);
    case HL_VM_LOG: FN_(Sleef_logf_u10);
    case HL_VM_LOG1P: FN_(Sleef_log1pf_u10);
    case HL_VM_TANH: FN_(Sleef_tanhf_u35);
    case HL_VM_LOGISTIC: FN_(logistic_f);
    case HL_VM_SIN: FN_(Sleef_sinf_u10);
    case HL_VM_COS: FN_(Sleef_cosf_u10);
    case HL_VM_TAN: FN_(Sleef_tanf_u10);
    case HL_VM_ERF: FN_(Sleef_erff_u10);
    case HL_VM_CBRT: FN_(Sleef_cbrtf_u10);
    default: return NULL;
  }
}

hl_vmath_vector_fn_t hl_vmath_unary_scalar_f64(hl_vmath_fn_t fn) {
  if (use_avx2()) return NULL;
  switch (fn) {  // the routines of hl_vmath_unary_f64 below
    case HL_VM_EXP: FN_(Sleef_exp_u10);
    case HL_VM_EXPM1: FN_(Sleef_expm1_u10);
    case HL_VM_LOG: FN_(Sleef_log_u10);
    case HL_VM_LOG1P: FN_(Sleef_log1p_u10);
    case HL_VM_TANH: FN_(Sleef_tanh_u10);
    case HL_VM_LOGISTIC: FN_(logistic_d);
    case HL_VM_SIN: FN_(Sleef_sin_u10);
    case HL_VM_COS: FN_(Sleef_cos_u10);
    case HL_VM_TAN: FN_(Sleef_tan_u10);
    case HL_VM_ERF: FN_(Sleef_erf_u10);
    case HL_VM_CBRT: FN_(Sleef_cbrt_u10);
    default: return NULL;
  }
}

hl_vmath_vector_fn_t hl_vmath_binary_vector_f32(hl_vmath_fn_t fn) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_binary_vector_f32(fn);
#endif
  (void)fn;
  return NULL;
}

hl_vmath_vector_fn_t hl_vmath_binary_vector_f64(hl_vmath_fn_t fn) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_binary_vector_f64(fn);
#endif
  (void)fn;
  return NULL;
}

hl_vmath_vector_fn_t hl_vmath_binary_scalar_f32(hl_vmath_fn_t fn) {
  if (use_avx2()) return NULL;
  switch (fn) {  // the routines of hl_vmath_binary_f32 below
    case HL_VM_POW: FN_(Sleef_powf_u10);
    case HL_VM_ATAN2: FN_(Sleef_atan2f_u10);
    default: return NULL;
  }
}

hl_vmath_vector_fn_t hl_vmath_binary_scalar_f64(hl_vmath_fn_t fn) {
  if (use_avx2()) return NULL;
  switch (fn) {
    case HL_VM_POW: FN_(Sleef_pow_u10);
    case HL_VM_ATAN2: FN_(Sleef_atan2_u10);
    default: return NULL;
  }
}
#undef FN_

bool hl_vmath_unary_f32(hl_vmath_fn_t fn, const float *x, float *y, int64_t n) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_unary_f32(fn, x, y, n);
#endif
  switch (fn) {
    case HL_VM_EXP: LOOP_(Sleef_expf_u10); return true;
    case HL_VM_EXPM1: LOOP_(Sleef_expm1f_u10); return true;
    case HL_VM_LOG: LOOP_(Sleef_logf_u10); return true;
    case HL_VM_LOG1P: LOOP_(Sleef_log1pf_u10); return true;
    case HL_VM_TANH: LOOP_(Sleef_tanhf_u35); return true;  // as the AVX2 path
    case HL_VM_LOGISTIC: LOOP_(logistic_f); return true;
    case HL_VM_SIN: LOOP_(Sleef_sinf_u10); return true;
    case HL_VM_COS: LOOP_(Sleef_cosf_u10); return true;
    case HL_VM_TAN: LOOP_(Sleef_tanf_u10); return true;
    case HL_VM_ERF: LOOP_(Sleef_erff_u10); return true;
    case HL_VM_CBRT: LOOP_(Sleef_cbrtf_u10); return true;
    default: return false;
  }
}

bool hl_vmath_unary_f64(hl_vmath_fn_t fn, const double *x, double *y, int64_t n) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_unary_f64(fn, x, y, n);
#endif
  switch (fn) {
    case HL_VM_EXP: LOOP_(Sleef_exp_u10); return true;
    case HL_VM_EXPM1: LOOP_(Sleef_expm1_u10); return true;
    case HL_VM_LOG: LOOP_(Sleef_log_u10); return true;
    case HL_VM_LOG1P: LOOP_(Sleef_log1p_u10); return true;
    case HL_VM_TANH: LOOP_(Sleef_tanh_u10); return true;
    case HL_VM_LOGISTIC: LOOP_(logistic_d); return true;
    case HL_VM_SIN: LOOP_(Sleef_sin_u10); return true;
    case HL_VM_COS: LOOP_(Sleef_cos_u10); return true;
    case HL_VM_TAN: LOOP_(Sleef_tan_u10); return true;
    case HL_VM_ERF: LOOP_(Sleef_erf_u10); return true;
    case HL_VM_CBRT: LOOP_(Sleef_cbrt_u10); return true;
    default: return false;
  }
}
#undef LOOP_

#define LOOP_(f) for (int64_t i = 0; i < n; i++) y[i] = f(a[i], b[i])

bool hl_vmath_binary_f32(hl_vmath_fn_t fn, const float *a, const float *b, float *y, int64_t n) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_binary_f32(fn, a, b, y, n);
#endif
  switch (fn) {
    case HL_VM_POW: LOOP_(Sleef_powf_u10); return true;
    case HL_VM_ATAN2: LOOP_(Sleef_atan2f_u10); return true;
    default: return false;
  }
}

bool hl_vmath_binary_f64(hl_vmath_fn_t fn, const double *a, const double *b, double *y,
                         int64_t n) {
#if defined(HL_VMATH_HAVE_AVX2)
  if (use_avx2()) return hl_vmath_avx2_binary_f64(fn, a, b, y, n);
#endif
  switch (fn) {
    case HL_VM_POW: LOOP_(Sleef_pow_u10); return true;
    case HL_VM_ATAN2: LOOP_(Sleef_atan2_u10); return true;
    default: return false;
  }
}
#undef LOOP_
