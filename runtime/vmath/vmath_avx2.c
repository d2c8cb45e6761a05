// vmath's 8-lane f32 / 4-lane f64 loops over SLEEF's AVX2 routines. This
// file alone is compiled with -mavx2 -mfma (runtime/CMakeLists.txt); vmath.c
// calls it only after checking the CPU.
#if defined(__x86_64__) && defined(__AVX2__)
#include "runtime/vmath/vmath_avx2.h"

#include <immintrin.h>
#include <sleef.h>
#include <string.h>

// SLEEF's AVX2 routines by name rather than through its dispatchers: a
// dispatcher's first call detects the CPU with cpuid, which exits to the
// hypervisor on a virtual machine (4-7 us per cpuid on the shared
// Firecracker VM, some 30 us for the first routine called), a fixed cost in
// the first run of every program with a transcendental op (issue 24: most
// of a small program's first run). vmath.c calls this file only after
// checking AVX2 and FMA, where the dispatchers pick these same routines
// (SLEEF 3.5's dispavx: avx2 when AVX2 and FMA), so the bits are the same.
#define Sleef_atan2d4_u10 Sleef_atan2d4_u10avx2
#define Sleef_atan2f8_u10 Sleef_atan2f8_u10avx2
#define Sleef_cbrtd4_u10 Sleef_cbrtd4_u10avx2
#define Sleef_cbrtf8_u10 Sleef_cbrtf8_u10avx2
#define Sleef_cosd4_u10 Sleef_cosd4_u10avx2
#define Sleef_cosf8_u10 Sleef_cosf8_u10avx2
#define Sleef_erfd4_u10 Sleef_erfd4_u10avx2
#define Sleef_erff8_u10 Sleef_erff8_u10avx2
#define Sleef_expd4_u10 Sleef_expd4_u10avx2
#define Sleef_expf8_u10 Sleef_expf8_u10avx2
#define Sleef_expm1d4_u10 Sleef_expm1d4_u10avx2
#define Sleef_expm1f8_u10 Sleef_expm1f8_u10avx2
#define Sleef_log1pd4_u10 Sleef_log1pd4_u10avx2
#define Sleef_log1pf8_u10 Sleef_log1pf8_u10avx2
#define Sleef_logd4_u10 Sleef_logd4_u10avx2
#define Sleef_logf8_u10 Sleef_logf8_u10avx2
#define Sleef_powd4_u10 Sleef_powd4_u10avx2
#define Sleef_powf8_u10 Sleef_powf8_u10avx2
#define Sleef_sind4_u10 Sleef_sind4_u10avx2
#define Sleef_sinf8_u10 Sleef_sinf8_u10avx2
#define Sleef_tand4_u10 Sleef_tand4_u10avx2
#define Sleef_tanf8_u10 Sleef_tanf8_u10avx2
#define Sleef_tanhd4_u10 Sleef_tanhd4_u10avx2
#define Sleef_tanhf8_u35 Sleef_tanhf8_u35avx2

// exp on SLEEF's routine with x first clamped to [-105, 101]: the routine
// answers 0 below -104 and inf above 100 whatever the argument (every f32
// of magnitude 99 or more, both signs, inf and NaN payloads: the same bits
// clamped or not, checked exhaustively), but takes 2.5x as long out there,
// where masked softmax rows (x - max of -1e9) and saturated logistics put
// many arguments. min/max with x second return x itself when it is NaN.
static __m256 exp_f32(__m256 x) {
  __m256 c = _mm256_max_ps(_mm256_set1_ps(-105.0f), _mm256_min_ps(_mm256_set1_ps(101.0f), x));
  return Sleef_expf8_u10(c);
}

// logistic(x) = 1 / (1 + e^-x), computed from e = e^-|x| so that neither
// branch overflows: x >= 0 gives 1 / (1 + e), x < 0 gives e / (1 + e).
static __m256 logistic_f32(__m256 x) {
  __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  __m256 e = exp_f32(_mm256_sub_ps(_mm256_setzero_ps(), ax));
  __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
  __m256 pos = _mm256_div_ps(_mm256_set1_ps(1.0f), den), neg = _mm256_div_ps(e, den);
  return _mm256_blendv_ps(pos, neg, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}
static __m256d logistic_f64(__m256d x) {
  __m256d ax = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
  __m256d e = Sleef_expd4_u10(_mm256_sub_pd(_mm256_setzero_pd(), ax));
  __m256d den = _mm256_add_pd(_mm256_set1_pd(1.0), e);
  __m256d pos = _mm256_div_pd(_mm256_set1_pd(1.0), den), neg = _mm256_div_pd(e, den);
  return _mm256_blendv_pd(pos, neg, _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_LT_OQ));
}

// tanh on SLEEF's 3.5-ULP routine with |x| first clamped to 9: for every
// f32 of magnitude 8.5 or more (inf and NaN payloads included, both signs:
// checked exhaustively) the routine returns the same bits for x and for the
// clamped x (it answers +-1 from |x| > 8.664), but arguments in the
// hundreds take it twice as long (0.55 -> 1.2 ms for 512 Ki values), and
// pre-activations that large are common in a GELU of a training step.
// min/max with x second return x itself when it is NaN.
static __m256 tanh_f32(__m256 x) {
  __m256 c = _mm256_max_ps(_mm256_set1_ps(-9.0f), _mm256_min_ps(_mm256_set1_ps(9.0f), x));
  return Sleef_tanhf8_u35(c);
}

// Lane independence. SLEEF 3.5.1's sin/cos/tan (sleefsimdsp.c,
// sleefsimddp.c, non-DETERMINISTIC build as Debian ships it) pick one
// argument reduction for the WHOLE vector: f32 Cody-Waite when every
// |lane| < TRIGRANGEMAX2f = 125, else Payne-Hanek (rempif) for all lanes;
// f64 three tiers, every |lane| < TRIGRANGEMAX2 = 15, every one < TRIGRANGEMAX
// = 1e14, else rempi. NaN compares false, so it is in the last tier. The
// tiers give other bits for the same lane, so a result would depend on which
// elements share its vector (op-by-op, blocked fusions, thread splits and the
// JIT group lanes differently). Each lane gets the bits of the routine on
// (x, 0, 0, ...) instead: the lanes of each tier present run together, the
// others zeroed (0 is in the first tier and so changes no path). Cost when
// every lane is in one tier: a compare and a movemask. No other routine vmath
// calls has a vector-wide branch (the rest are branch-free blends).
// (Macros, not a function pointer parameter: sleef.h declares the routines
// const, which clang counts as part of their type.)
#define HL_VM_TIERS_F32_(name, f)                                                         \
  static __m256 name(__m256 x) {                                                          \
    __m256 first = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),              \
                                 _mm256_set1_ps(125.0f), _CMP_LT_OQ);                     \
    int m = _mm256_movemask_ps(first);                                                    \
    if (m == 0xff || m == 0) return f(x); /* one tier */                                  \
    return _mm256_blendv_ps(f(_mm256_andnot_ps(first, x)), f(_mm256_and_ps(x, first)),   \
                            first);                                                       \
  }
#define HL_VM_TIERS_F64_(name, f)                                                         \
  static __m256d name(__m256d x) {                                                        \
    __m256d ax = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);                               \
    __m256d lt15 = _mm256_cmp_pd(ax, _mm256_set1_pd(15.0), _CMP_LT_OQ);                   \
    __m256d lt1e14 = _mm256_cmp_pd(ax, _mm256_set1_pd(1e14), _CMP_LT_OQ);                 \
    int m1 = _mm256_movemask_pd(lt15), m2 = _mm256_movemask_pd(lt1e14);                   \
    if (m1 == 0xf || m2 == 0 || (m1 == 0 && m2 == 0xf)) return f(x); /* one tier */      \
    __m256d mid = _mm256_andnot_pd(lt15, lt1e14);                                         \
    __m256d y = f(_mm256_andnot_pd(lt1e14, x)); /* lanes of the last tier */              \
    if (m1) y = _mm256_blendv_pd(y, f(_mm256_and_pd(x, lt15)), lt15);                     \
    if (m2 & ~m1) y = _mm256_blendv_pd(y, f(_mm256_and_pd(x, mid)), mid);                 \
    return y;                                                                             \
  }
HL_VM_TIERS_F32_(sin_f32, Sleef_sinf8_u10)
HL_VM_TIERS_F32_(cos_f32, Sleef_cosf8_u10)
HL_VM_TIERS_F32_(tan_f32, Sleef_tanf8_u10)
HL_VM_TIERS_F64_(sin_f64, Sleef_sind4_u10)
HL_VM_TIERS_F64_(cos_f64, Sleef_cosd4_u10)
HL_VM_TIERS_F64_(tan_f64, Sleef_tand4_u10)
#undef HL_VM_TIERS_F32_
#undef HL_VM_TIERS_F64_

// One loop per lane type; the tail runs on a zero-padded copy.
#define HL_VM_UNARY_LOOP_(T, VT, L, LOAD, STORE, f)         \
  do {                                                      \
    int64_t i = 0;                                          \
    for (; i + (L) <= n; i += (L)) STORE(y + i, f(LOAD(x + i))); \
    if (i < n) {                                            \
      T t[L];                                               \
      memset(t, 0, sizeof(t));                              \
      memcpy(t, x + i, (size_t)(n - i) * sizeof(T));        \
      STORE(t, f(LOAD(t)));                                 \
      memcpy(y + i, t, (size_t)(n - i) * sizeof(T));        \
    }                                                       \
  } while (0)

#define HL_VM_BINARY_LOOP_(T, VT, L, LOAD, STORE, f)                  \
  do {                                                                \
    int64_t i = 0;                                                    \
    for (; i + (L) <= n; i += (L)) STORE(y + i, f(LOAD(a + i), LOAD(b + i))); \
    if (i < n) {                                                      \
      T s[L], t[L];                                                   \
      memset(s, 0, sizeof(s));                                        \
      memset(t, 0, sizeof(t));                                        \
      memcpy(s, a + i, (size_t)(n - i) * sizeof(T));                  \
      memcpy(t, b + i, (size_t)(n - i) * sizeof(T));                  \
      STORE(t, f(LOAD(s), LOAD(t)));                                  \
      memcpy(y + i, t, (size_t)(n - i) * sizeof(T));                  \
    }                                                                 \
  } while (0)

#define F32_(f) HL_VM_UNARY_LOOP_(float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, f)
#define F64_(f) HL_VM_UNARY_LOOP_(double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, f)

bool hl_vmath_avx2_unary_f32(hl_vmath_fn_t fn, const float *x, float *y, int64_t n) {
  switch (fn) {
    case HL_VM_EXP: F32_(exp_f32); return true;
    case HL_VM_EXPM1: F32_(Sleef_expm1f8_u10); return true;
    case HL_VM_LOG: F32_(Sleef_logf8_u10); return true;
    case HL_VM_LOG1P: F32_(Sleef_log1pf8_u10); return true;
    case HL_VM_TANH: F32_(tanh_f32); return true;  // 2.86 ULP max: NUMERICS.md
    case HL_VM_LOGISTIC: F32_(logistic_f32); return true;
    case HL_VM_SIN: F32_(sin_f32); return true;
    case HL_VM_COS: F32_(cos_f32); return true;
    case HL_VM_TAN: F32_(tan_f32); return true;
    case HL_VM_ERF: F32_(Sleef_erff8_u10); return true;
    case HL_VM_CBRT: F32_(Sleef_cbrtf8_u10); return true;
    default: return false;
  }
}

bool hl_vmath_avx2_unary_f64(hl_vmath_fn_t fn, const double *x, double *y, int64_t n) {
  switch (fn) {
    case HL_VM_EXP: F64_(Sleef_expd4_u10); return true;
    case HL_VM_EXPM1: F64_(Sleef_expm1d4_u10); return true;
    case HL_VM_LOG: F64_(Sleef_logd4_u10); return true;
    case HL_VM_LOG1P: F64_(Sleef_log1pd4_u10); return true;
    case HL_VM_TANH: F64_(Sleef_tanhd4_u10); return true;
    case HL_VM_LOGISTIC: F64_(logistic_f64); return true;
    case HL_VM_SIN: F64_(sin_f64); return true;
    case HL_VM_COS: F64_(cos_f64); return true;
    case HL_VM_TAN: F64_(tan_f64); return true;
    case HL_VM_ERF: F64_(Sleef_erfd4_u10); return true;
    case HL_VM_CBRT: F64_(Sleef_cbrtd4_u10); return true;
    default: return false;
  }
}
#undef F32_
#undef F64_

// The same routines as the loops above, one vector at a time.
#define VEC_(f) return (hl_vmath_vector_fn_t)(f)
hl_vmath_vector_fn_t hl_vmath_avx2_unary_vector_f32(hl_vmath_fn_t fn) {
  switch (fn) {
    case HL_VM_EXP: VEC_(exp_f32);
    case HL_VM_EXPM1: VEC_(Sleef_expm1f8_u10);
    case HL_VM_LOG: VEC_(Sleef_logf8_u10);
    case HL_VM_LOG1P: VEC_(Sleef_log1pf8_u10);
    case HL_VM_TANH: VEC_(tanh_f32);
    case HL_VM_SIN: VEC_(sin_f32);
    case HL_VM_COS: VEC_(cos_f32);
    case HL_VM_TAN: VEC_(tan_f32);
    case HL_VM_ERF: VEC_(Sleef_erff8_u10);
    case HL_VM_CBRT: VEC_(Sleef_cbrtf8_u10);
    default: return NULL;
  }
}

hl_vmath_vector_fn_t hl_vmath_avx2_unary_vector_f64(hl_vmath_fn_t fn) {
  switch (fn) {
    case HL_VM_EXP: VEC_(Sleef_expd4_u10);
    case HL_VM_EXPM1: VEC_(Sleef_expm1d4_u10);
    case HL_VM_LOG: VEC_(Sleef_logd4_u10);
    case HL_VM_LOG1P: VEC_(Sleef_log1pd4_u10);
    case HL_VM_TANH: VEC_(Sleef_tanhd4_u10);
    case HL_VM_SIN: VEC_(sin_f64);
    case HL_VM_COS: VEC_(cos_f64);
    case HL_VM_TAN: VEC_(tan_f64);
    case HL_VM_ERF: VEC_(Sleef_erfd4_u10);
    case HL_VM_CBRT: VEC_(Sleef_cbrtd4_u10);
    default: return NULL;
  }
}
#undef VEC_

#define F32_(f) HL_VM_BINARY_LOOP_(float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, f)
#define F64_(f) HL_VM_BINARY_LOOP_(double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, f)

bool hl_vmath_avx2_binary_f32(hl_vmath_fn_t fn, const float *a, const float *b, float *y,
                              int64_t n) {
  switch (fn) {
    case HL_VM_POW: F32_(Sleef_powf8_u10); return true;
    case HL_VM_ATAN2: F32_(Sleef_atan2f8_u10); return true;
    default: return false;
  }
}

bool hl_vmath_avx2_binary_f64(hl_vmath_fn_t fn, const double *a, const double *b, double *y,
                              int64_t n) {
  switch (fn) {
    case HL_VM_POW: F64_(Sleef_powd4_u10); return true;
    case HL_VM_ATAN2: F64_(Sleef_atan2d4_u10); return true;
    default: return false;
  }
}
#undef F32_
#undef F64_

#define VEC_(f) return (hl_vmath_vector_fn_t)(f)
hl_vmath_vector_fn_t hl_vmath_avx2_binary_vector_f32(hl_vmath_fn_t fn) {
  switch (fn) {  // the routines of hl_vmath_avx2_binary_f32
    case HL_VM_POW: VEC_(Sleef_powf8_u10);
    case HL_VM_ATAN2: VEC_(Sleef_atan2f8_u10);
    default: return NULL;
  }
}

hl_vmath_vector_fn_t hl_vmath_avx2_binary_vector_f64(hl_vmath_fn_t fn) {
  switch (fn) {
    case HL_VM_POW: VEC_(Sleef_powd4_u10);
    case HL_VM_ATAN2: VEC_(Sleef_atan2d4_u10);
    default: return NULL;
  }
}
#undef VEC_
#else
// Not x86-64 with AVX2: vmath.c never calls this file (an empty unit is not
// allowed in ISO C).
typedef int hl_vmath_avx2_unused_t;
#endif
