// Lane independence of runtime/vmath: an element's result must not depend
// on which other elements share its SIMD vector. SLEEF's trig routines pick
// a fast or a slow argument reduction for the WHOLE vector when any lane is
// out of the fast range (|x| >= 125 f32; 15 and 1e14 f64; NaN, inf), and the
// slow path gives other bits for in-range lanes. The op-by-op kernels, the
// blocked fusions, thread splits and the JIT group lanes differently, so
// without lane independence the same element could get different bits.
//
// The reference for x is SLEEF's own vector routine on (x, 0, 0, ...): x
// alone, with in-range neighbours (called directly, not through vmath). Every
// element of mixed arrays, at every lane alignment, must match it bit for bit.
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/vmath/vmath.h"
#include "tests/unit/test_util.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_RAW_AVX2 1
// sleef.h declares its AVX2 routines only to AVX2 units; this test runs on
// any CPU, so it declares the ones it calls (called only from AVX2 code).
#define RAW_(f, T) T f(T);
#define RAW_BOTH_(f8, d4) RAW_(f8, __m256) RAW_(d4, __m256d)
RAW_BOTH_(Sleef_expf8_u10, Sleef_expd4_u10)
RAW_BOTH_(Sleef_expm1f8_u10, Sleef_expm1d4_u10)
RAW_BOTH_(Sleef_logf8_u10, Sleef_logd4_u10)
RAW_BOTH_(Sleef_log1pf8_u10, Sleef_log1pd4_u10)
RAW_BOTH_(Sleef_tanhf8_u35, Sleef_tanhd4_u10)
RAW_BOTH_(Sleef_sinf8_u10, Sleef_sind4_u10)
RAW_BOTH_(Sleef_cosf8_u10, Sleef_cosd4_u10)
RAW_BOTH_(Sleef_tanf8_u10, Sleef_tand4_u10)
RAW_BOTH_(Sleef_erff8_u10, Sleef_erfd4_u10)
RAW_BOTH_(Sleef_cbrtf8_u10, Sleef_cbrtd4_u10)
#undef RAW_BOTH_
#undef RAW_
#endif

typedef struct lane_case {
  const char *name;
  hl_vmath_fn_t fn;
  bool binary;
} lane_case_t;

static const lane_case_t kCases[] = {
    {"exp", HL_VM_EXP, false},   {"expm1", HL_VM_EXPM1, false}, {"log", HL_VM_LOG, false},
    {"log1p", HL_VM_LOG1P, false}, {"tanh", HL_VM_TANH, false},
    {"logistic", HL_VM_LOGISTIC, false}, {"sin", HL_VM_SIN, false},
    {"cos", HL_VM_COS, false},   {"tan", HL_VM_TAN, false},     {"erf", HL_VM_ERF, false},
    {"cbrt", HL_VM_CBRT, false}, {"pow", HL_VM_POW, true},      {"atan2", HL_VM_ATAN2, true},
};
#define NCASES (sizeof(kCases) / sizeof(kCases[0]))

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (next_u32() / 4294967296.0); }

// Values at the edges of every SLEEF range test, and beyond (f64 bank; the
// f32 bank is its conversion, with f32 denormals added).
static const double kSpecial[] = {
    1e30, -1e30, INFINITY, -INFINITY, NAN, -NAN, 124.9, 125.0, -125.0, 200.0,
    14.99, 15.0, -15.0, 1e5, -3e7, 9.9e13, 1e14, 1e20, 39000.0, 8e6,
    1e-40, -1e-42, 4.9e-324, 1e-310, 0.0, -0.0, 88.0, -104.0, 1e300, -1e300,
};
#define NSPECIAL (sizeof(kSpecial) / sizeof(kSpecial[0]))

// Mostly ordinary values, a few specials at random (rarely aligned) places.
static double sample(void) {
  if (next_u32() % 6 == 0) return kSpecial[next_u32() % NSPECIAL];
  return (next_u32() & 1) ? uniform(-10, 10) : uniform(-124, 124);
}

#if HAVE_RAW_AVX2
typedef __m256 (*raw8_t)(__m256);
typedef __m256d (*raw4_t)(__m256d);
// SLEEF's own routines, as vmath maps them (NULL: not one routine).
static raw8_t raw_f32(hl_vmath_fn_t fn) {
  switch (fn) {
    case HL_VM_EXP: return Sleef_expf8_u10;
    case HL_VM_EXPM1: return Sleef_expm1f8_u10;
    case HL_VM_LOG: return Sleef_logf8_u10;
    case HL_VM_LOG1P: return Sleef_log1pf8_u10;
    case HL_VM_TANH: return Sleef_tanhf8_u35;
    case HL_VM_SIN: return Sleef_sinf8_u10;
    case HL_VM_COS: return Sleef_cosf8_u10;
    case HL_VM_TAN: return Sleef_tanf8_u10;
    case HL_VM_ERF: return Sleef_erff8_u10;
    case HL_VM_CBRT: return Sleef_cbrtf8_u10;
    default: return NULL;
  }
}
static raw4_t raw_f64(hl_vmath_fn_t fn) {
  switch (fn) {
    case HL_VM_EXP: return Sleef_expd4_u10;
    case HL_VM_EXPM1: return Sleef_expm1d4_u10;
    case HL_VM_LOG: return Sleef_logd4_u10;
    case HL_VM_LOG1P: return Sleef_log1pd4_u10;
    case HL_VM_TANH: return Sleef_tanhd4_u10;
    case HL_VM_SIN: return Sleef_sind4_u10;
    case HL_VM_COS: return Sleef_cosd4_u10;
    case HL_VM_TAN: return Sleef_tand4_u10;
    case HL_VM_ERF: return Sleef_erfd4_u10;
    case HL_VM_CBRT: return Sleef_cbrtd4_u10;
    default: return NULL;
  }
}
__attribute__((target("avx2,fma"))) static float raw_alone_f32(raw8_t f, float x) {
  float t[8] = {x};
  _mm256_storeu_ps(t, f(_mm256_loadu_ps(t)));
  return t[0];
}
__attribute__((target("avx2,fma"))) static double raw_alone_f64(raw4_t f, double x) {
  double t[4] = {x};
  _mm256_storeu_pd(t, f(_mm256_loadu_pd(t)));
  return t[0];
}
// The JIT's entry: one vector through hl_vmath_unary_vector_*.
__attribute__((target("avx2,fma"))) static void jit_vec_f32(hl_vmath_vector_fn_t f, float *v) {
  _mm256_storeu_ps(v, ((raw8_t)f)(_mm256_loadu_ps(v)));
}
__attribute__((target("avx2,fma"))) static void jit_vec_f64(hl_vmath_vector_fn_t f, double *v) {
  _mm256_storeu_pd(v, ((raw4_t)f)(_mm256_loadu_pd(v)));
}
#endif

#if HAVE_RAW_AVX2
static bool avx2(void) { return strcmp(hl_vmath_isa(), "avx2") == 0; }
#endif

#define N 53  // not a multiple of 8 or 4
#define TRIALS 300

static uint32_t bits32(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }
static uint64_t bits64(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }

// The reference: x alone (zero neighbours); b for binary functions.
static float alone_f32(const lane_case_t *c, float x, float b) {
  float y;
#if HAVE_RAW_AVX2
  raw8_t r = avx2() ? raw_f32(c->fn) : NULL;
  if (r) return raw_alone_f32(r, x);
#endif
  if (c->binary) hl_vmath_binary_f32(c->fn, &x, &b, &y, 1);
  else hl_vmath_unary_f32(c->fn, &x, &y, 1);
  return y;
}
static double alone_f64(const lane_case_t *c, double x, double b) {
  double y;
#if HAVE_RAW_AVX2
  raw4_t r = avx2() ? raw_f64(c->fn) : NULL;
  if (r) return raw_alone_f64(r, x);
#endif
  if (c->binary) hl_vmath_binary_f64(c->fn, &x, &b, &y, 1);
  else hl_vmath_unary_f64(c->fn, &x, &y, 1);
  return y;
}

static void test_arrays_f32(void) {
  for (size_t k = 0; k < NCASES; k++) {
    const lane_case_t *c = &kCases[k];
    int bad = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
      float x[N], b[N], y[N], ref[N];
      for (int i = 0; i < N; i++) {
        x[i] = (float)sample();
        if (next_u32() % 9 == 0) x[i] = (next_u32() & 1) ? 1e-40f : -3e-39f;  // f32 denormals
        b[i] = (float)uniform(-3, 3);
        ref[i] = alone_f32(c, x[i], b[i]);
      }
      for (int s = 0; s < 8; s++) {  // every lane alignment
        bool ok = c->binary ? hl_vmath_binary_f32(c->fn, x + s, b + s, y, N - s)
                            : hl_vmath_unary_f32(c->fn, x + s, y, N - s);
        CU_ASSERT_TRUE_FATAL(ok);
        for (int i = 0; i < N - s; i++)
          if (bits32(y[i]) != bits32(ref[i + s]) && bad++ < 3)
            fprintf(stderr, "  %s f32: x=%a shift %d: %a, alone %a\n", c->name, x[i + s], s,
                    y[i], ref[i + s]);
      }
    }
    if (bad)
      fprintf(stderr, "LANES %s f32: %d elements depend on their neighbours\n", c->name, bad);
    CU_ASSERT_EQUAL(bad, 0);
  }
}

static void test_arrays_f64(void) {
  for (size_t k = 0; k < NCASES; k++) {
    const lane_case_t *c = &kCases[k];
    int bad = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
      double x[N], b[N], y[N], ref[N];
      for (int i = 0; i < N; i++) {
        x[i] = sample();
        b[i] = uniform(-3, 3);
        ref[i] = alone_f64(c, x[i], b[i]);
      }
      for (int s = 0; s < 4; s++) {
        bool ok = c->binary ? hl_vmath_binary_f64(c->fn, x + s, b + s, y, N - s)
                            : hl_vmath_unary_f64(c->fn, x + s, y, N - s);
        CU_ASSERT_TRUE_FATAL(ok);
        for (int i = 0; i < N - s; i++)
          if (bits64(y[i]) != bits64(ref[i + s]) && bad++ < 3)
            fprintf(stderr, "  %s f64: x=%a shift %d: %a, alone %a\n", c->name, x[i + s], s,
                    y[i], ref[i + s]);
      }
    }
    if (bad)
      fprintf(stderr, "LANES %s f64: %d elements depend on their neighbours\n", c->name, bad);
    CU_ASSERT_EQUAL(bad, 0);
  }
}

// The one-vector routines the fusion JIT calls give the same bits.
static void test_jit_vector_routines(void) {
#if HAVE_RAW_AVX2
  if (!avx2()) return;
  for (size_t k = 0; k < NCASES; k++) {
    const lane_case_t *c = &kCases[k];
    if (c->binary) continue;
    hl_vmath_vector_fn_t f32 = hl_vmath_unary_vector_f32(c->fn);
    hl_vmath_vector_fn_t f64 = hl_vmath_unary_vector_f64(c->fn);
    int bad = 0;
    for (int trial = 0; trial < TRIALS && f32 && f64; trial++) {
      float v[8], x[8];
      double w[4], xd[4];
      for (int i = 0; i < 8; i++) x[i] = v[i] = (float)sample();
      for (int i = 0; i < 4; i++) xd[i] = w[i] = sample();
      jit_vec_f32(f32, v);
      jit_vec_f64(f64, w);
      for (int i = 0; i < 8; i++) bad += bits32(v[i]) != bits32(alone_f32(c, x[i], 0));
      for (int i = 0; i < 4; i++) bad += bits64(w[i]) != bits64(alone_f64(c, xd[i], 0));
    }
    if (bad) fprintf(stderr, "LANES %s vector routine: %d lanes depend on others\n", c->name, bad);
    CU_ASSERT_EQUAL(bad, 0);
  }
#endif
}

// f32 tanh and exp clamp their argument before SLEEF's routine
// (vmath_avx2.c: tanh to +-9, exp to [-105, 101]; arguments far out take the
// routines 2-2.5x as long): every 4099th f32 bit pattern from the clamp's
// neighbourhood up through inf and the NaNs, both signs, in whole vectors
// of such values, through the array loop and the JIT's vector routine,
// equals SLEEF on the unclamped value.
static void check_clamp_keeps_bits(hl_vmath_fn_t fn, uint32_t from, const char *name) {
#if HAVE_RAW_AVX2
  if (!avx2()) return;
  hl_vmath_vector_fn_t vec = hl_vmath_unary_vector_f32(fn);
  raw8_t raw = raw_f32(fn);
  CU_ASSERT_PTR_NOT_NULL_FATAL(vec);
  CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
  int bad = 0;
  for (uint64_t u = from; u <= 0x7fffffffu && bad < 3; u += 8 * 4099) {
    float x[8], y[8], v[8];
    for (int k = 0; k < 8; k++) {
      uint32_t m = (uint32_t)(u + (uint64_t)k * 511);
      if (m > 0x7fffffffu) m = 0x7fffffffu;
      if (k & 1) m |= 0x80000000u;
      memcpy(&x[k], &m, 4);
    }
    memcpy(v, x, sizeof v);
    CU_ASSERT_TRUE_FATAL(hl_vmath_unary_f32(fn, x, y, 8));
    jit_vec_f32(vec, v);
    for (int k = 0; k < 8; k++) {
      float want = raw_alone_f32(raw, x[k]);
      if ((bits32(y[k]) != bits32(want) || bits32(v[k]) != bits32(want)) && bad++ < 3)
        fprintf(stderr, "  %s x=%08x: array %08x vector %08x, SLEEF %08x\n", name, bits32(x[k]),
                bits32(y[k]), bits32(v[k]), bits32(want));
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
#else
  (void)fn;
  (void)from;
  (void)name;
#endif
}

static void test_clamps_keep_bits(void) {
  check_clamp_keeps_bits(HL_VM_TANH, 0x41080000u, "tanh");  // from 8.5
  check_clamp_keeps_bits(HL_VM_EXP, 0x42c60000u, "exp");    // from 99
}

static CU_TestInfo tests[] = {
    {"arrays_f32", test_arrays_f32},
    {"clamps_keep_bits", test_clamps_keep_bits},
    {"arrays_f64", test_arrays_f64},
    {"jit_vector_routines", test_jit_vector_routines},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("vmath_lanes", tests)
