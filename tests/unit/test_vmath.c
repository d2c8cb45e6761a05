// Accuracy of runtime/vmath (SLEEF) against long double references (x87,
// 64-bit mantissa: 40 bits more than f32, 11 more than f64): every function
// must stay within 3 ULP, StableHLO's conformance tolerance
// (check.expect_close). The measured maxima are printed as
// "VMATH <fn> <type> <max ulp>" lines; docs/NUMERICS.md lists them. Also the
// 16-bit types, computed in f32 by the element-wise kernels, and the
// special values (NaN, infinities, signed zeros) each function must keep.
#include <CUnit/CUnit.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/minifloat.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/vmath/vmath.h"
#include "tests/unit/test_util.h"

#define SAMPLES 200000
#define TOLERANCE_ULP 3.0

typedef long double (*ref1_fn)(long double);
typedef long double (*ref2_fn)(long double, long double);

static long double logisticl(long double x) { return 1.0L / (1.0L + expl(-x)); }

typedef struct fn_case {
  const char *name;
  hl_vmath_fn_t fn;
  hl_opcode_t op;
  ref1_fn ref1;
  ref2_fn ref2;
  double lo, hi;      // sample range of x (a, for binary)
  double lo2, hi2;    // binary: range of b
  bool log_scale;     // sample |x| log-uniformly in [lo, hi] (lo > 0)
} fn_case_t;

static const fn_case_t kCases[] = {
    {"exp", HL_VM_EXP, HL_OP_EXP, expl, NULL, -87, 88, 0, 0, false},
    {"expm1", HL_VM_EXPM1, HL_OP_EXPM1, expm1l, NULL, -20, 20, 0, 0, false},
    {"expm1_small", HL_VM_EXPM1, HL_OP_EXPM1, expm1l, NULL, 1e-7, 1e-1, 0, 0, true},
    {"log", HL_VM_LOG, HL_OP_LOG, logl, NULL, 1e-30, 1e30, 0, 0, true},
    {"log1p", HL_VM_LOG1P, HL_OP_LOG1P, log1pl, NULL, -0.999, 1e6, 0, 0, false},
    {"log1p_small", HL_VM_LOG1P, HL_OP_LOG1P, log1pl, NULL, 1e-8, 1e-1, 0, 0, true},
    {"tanh", HL_VM_TANH, HL_OP_TANH, tanhl, NULL, -12, 12, 0, 0, false},
    {"tanh_small", HL_VM_TANH, HL_OP_TANH, tanhl, NULL, 1e-6, 1, 0, 0, true},
    {"logistic", HL_VM_LOGISTIC, HL_OP_LOGISTIC, logisticl, NULL, -80, 30, 0, 0, false},
    {"sin", HL_VM_SIN, HL_OP_SIN, sinl, NULL, -100, 100, 0, 0, false},
    {"cos", HL_VM_COS, HL_OP_COS, cosl, NULL, -100, 100, 0, 0, false},
    {"tan", HL_VM_TAN, HL_OP_TAN, tanl, NULL, -100, 100, 0, 0, false},
    {"erf", HL_VM_ERF, HL_OP_ERF, erfl, NULL, -5, 5, 0, 0, false},
    {"cbrt", HL_VM_CBRT, HL_OP_CBRT, cbrtl, NULL, 1e-20, 1e20, 0, 0, true},
    {"pow", HL_VM_POW, HL_OP_POWER, NULL, powl, 1e-3, 1e3, -8, 8, true},
    {"atan2", HL_VM_ATAN2, HL_OP_ATAN2, NULL, atan2l, -10, 10, -10, 10, false},
};

static unsigned long long rng_state = 88172645463325252ULL;
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double sample(double lo, double hi, bool log_scale) {
  if (!log_scale) return lo + (hi - lo) * uniform();
  double v = exp(log(lo) + (log(hi) - log(lo)) * uniform());
  return v;
}

// The error of y in units of the last place of the format (p significant
// bits, emin the smallest normal exponent) at the exact value ref.
static double ulp_error(long double y, long double ref, int p, int emin) {
  if (isnan(ref)) return isnan(y) ? 0 : INFINITY;
  if (isinf(ref)) return y == ref ? 0 : INFINITY;
  int e;
  frexpl(ref, &e);  // ref = m * 2^e, 0.5 <= |m| < 1
  if (ref == 0) e = emin;
  if (e - 1 < emin) e = emin + 1;
  long double ulp = ldexpl(1.0L, e - p);
  return (double)(fabsl(y - ref) / ulp);
}

static double measure_f32(const fn_case_t *c) {
  static float x[SAMPLES], b[SAMPLES], y[SAMPLES];
  for (int i = 0; i < SAMPLES; i++) {
    x[i] = (float)sample(c->lo, c->hi, c->log_scale);
    b[i] = (float)sample(c->lo2, c->hi2, false);
  }
  bool ok = c->ref1 ? hl_vmath_unary_f32(c->fn, x, y, SAMPLES)
                    : hl_vmath_binary_f32(c->fn, x, b, y, SAMPLES);
  CU_ASSERT_TRUE(ok);
  double worst = 0;
  for (int i = 0; i < SAMPLES; i++) {
    long double ref = c->ref1 ? c->ref1(x[i]) : c->ref2(x[i], b[i]);
    if (fabsl(ref) > FLT_MAX) continue;  // overflows in f32: not a precision question
    double e = ulp_error(y[i], ref, 24, -126);
    if (e > worst) worst = e;
  }
  return worst;
}

static double measure_f64(const fn_case_t *c) {
  static double x[SAMPLES], b[SAMPLES], y[SAMPLES];
  double scale = c->fn == HL_VM_EXP ? 8 : 1;  // exp: the wider f64 range
  for (int i = 0; i < SAMPLES; i++) {
    x[i] = sample(c->lo * (c->log_scale ? 1 : scale), c->hi * (c->log_scale ? 1 : scale),
                  c->log_scale);
    b[i] = sample(c->lo2, c->hi2, false);
  }
  bool ok = c->ref1 ? hl_vmath_unary_f64(c->fn, x, y, SAMPLES)
                    : hl_vmath_binary_f64(c->fn, x, b, y, SAMPLES);
  CU_ASSERT_TRUE(ok);
  double worst = 0;
  for (int i = 0; i < SAMPLES; i++) {
    long double ref = c->ref1 ? c->ref1(x[i]) : c->ref2(x[i], b[i]);
    if (fabsl(ref) > DBL_MAX) continue;
    double e = ulp_error(y[i], ref, 53, -1022);
    if (e > worst) worst = e;
  }
  return worst;
}

// f16 / bf16 through the element-wise kernels' array loop (f32 inside).
static double measure_half(const fn_case_t *c, hl_dtype_t t) {
  enum { N = 20000 };
  static uint16_t x[N], b[N], y[N];
  float lo = (float)c->lo, hi = (float)c->hi;
  if (t == HL_F16) {  // f16 tops out at 65504
    if (c->fn == HL_VM_EXP) { lo = -16; hi = 11; }
    if (hi > 6e4f) hi = 6e4f;
    if (lo < -6e4f) lo = -6e4f;
    if (c->log_scale && lo < 1e-4f) lo = 1e-4f;
  }
  for (int i = 0; i < N; i++) {
    float v = (float)sample(lo, hi, c->log_scale), w = (float)sample(c->lo2, c->hi2, false);
    x[i] = t == HL_F16 ? hl_f64_to_f16(v) : hl_f64_to_bf16(v);
    b[i] = t == HL_F16 ? hl_f64_to_f16(w) : hl_f64_to_bf16(w);
  }
  if (c->ref1) hl_ew_unary_array(c->op, t, t, x, y, N);
  else hl_ew_binary_array(c->op, t, t, x, b, y, N);
  double worst = 0;
  int p = t == HL_F16 ? 11 : 8, emin = t == HL_F16 ? -14 : -126;
  double maxv = t == HL_F16 ? 65504 : 3.38e38;
  for (int i = 0; i < N; i++) {
    float xv = t == HL_F16 ? hl_f16_to_f32(x[i]) : hl_bf16_to_f32(x[i]);
    float bv = t == HL_F16 ? hl_f16_to_f32(b[i]) : hl_bf16_to_f32(b[i]);
    float yv = t == HL_F16 ? hl_f16_to_f32(y[i]) : hl_bf16_to_f32(y[i]);
    long double ref = c->ref1 ? c->ref1(xv) : c->ref2(xv, bv);
    if (fabsl(ref) > maxv) continue;
    double e = ulp_error(yv, ref, p, emin);
    if (e > worst) worst = e;
  }
  return worst;
}

static void test_within_tolerance(void) {
  printf("\n");
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) {
    const fn_case_t *c = &kCases[i];
    double e32 = measure_f32(c), e64 = measure_f64(c);
    double e16 = measure_half(c, HL_F16), eb16 = measure_half(c, HL_BF16);
    printf("VMATH %-12s f32 %.3f  f64 %.3f  f16 %.3f  bf16 %.3f ulp (%s)\n", c->name, e32, e64,
           e16, eb16, hl_vmath_isa());
    CU_ASSERT_TRUE(e32 <= TOLERANCE_ULP);
    CU_ASSERT_TRUE(e64 <= TOLERANCE_ULP);
    CU_ASSERT_TRUE(e16 <= TOLERANCE_ULP);
    CU_ASSERT_TRUE(eb16 <= TOLERANCE_ULP);
    if (e32 > TOLERANCE_ULP || e64 > TOLERANCE_ULP || e16 > TOLERANCE_ULP ||
        eb16 > TOLERANCE_ULP)
      fprintf(stderr, "  %s exceeds %.0f ulp\n", c->name, TOLERANCE_ULP);
  }
}

// NaN stays NaN, infinities and zeros map as C99 Annex F says.
static void test_special_values(void) {
  const float in[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  float out[5];
  hl_vmath_unary_f32(HL_VM_EXP, in, out, 5);
  CU_ASSERT_TRUE(isnan(out[0]));
  CU_ASSERT_TRUE(isinf(out[1]) && out[1] > 0);
  CU_ASSERT_EQUAL(out[2], 0.0f);
  CU_ASSERT_EQUAL(out[3], 1.0f);
  hl_vmath_unary_f32(HL_VM_TANH, in, out, 5);
  CU_ASSERT_TRUE(isnan(out[0]));
  CU_ASSERT_EQUAL(out[1], 1.0f);
  CU_ASSERT_EQUAL(out[2], -1.0f);
  CU_ASSERT_TRUE(out[4] == 0.0f && signbit(out[4]));
  hl_vmath_unary_f32(HL_VM_LOG, in, out, 5);
  CU_ASSERT_TRUE(isnan(out[0]));
  CU_ASSERT_TRUE(isinf(out[1]) && out[1] > 0);
  CU_ASSERT_TRUE(isnan(out[2]));
  CU_ASSERT_TRUE(isinf(out[3]) && out[3] < 0);
  hl_vmath_unary_f32(HL_VM_LOGISTIC, in, out, 5);
  CU_ASSERT_TRUE(isnan(out[0]));
  CU_ASSERT_EQUAL(out[1], 1.0f);
  CU_ASSERT_EQUAL(out[2], 0.0f);
  CU_ASSERT_EQUAL(out[3], 0.5f);
  // Tails of every length (the vector loop pads the last partial vector).
  for (int n = 0; n <= 17; n++) {
    float x[17], y[17];
    for (int i = 0; i < n; i++) x[i] = 0.25f * (float)i;
    hl_vmath_unary_f32(HL_VM_EXP, x, y, n);
    for (int i = 0; i < n; i++) CU_ASSERT_TRUE(fabsf(y[i] - expf(x[i])) <= 1e-6f * expf(x[i]));
  }
  CU_ASSERT_FALSE(hl_vmath_unary_f32(HL_VM_POW, in, out, 5));
}

static CU_TestInfo tests[] = {
    {"within_tolerance", test_within_tolerance},
    {"special_values", test_special_values},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("vmath", tests)
