// hl_kernel_unary / hl_kernel_binary, called directly on hand-built
// instructions. Expected values are worked by hand from the XLA / StableHLO
// semantics, or computed with numpy (noted where so).
#include <float.h>
#include <limits.h>
#include <math.h>

#include "runtime/kernels/element_access.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/base/float_minmax.h"
#include "tests/unit/kernel_test_util.h"

static hl_literal_t *run1(hl_opcode_t op, hl_dtype_t out_t, const hl_literal_t *x) {
  hl_instruction_t *inst = kt_inst(op, out_t, x->shape.rank, x->shape.dims);
  hl_literal_t *ops[1] = {(hl_literal_t *)x}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_unary(NULL, inst, ops, &y));
  CU_ASSERT_EQUAL_FATAL(y->shape.dtype, out_t);
  return y;
}

static hl_literal_t *run2(hl_opcode_t op, const hl_literal_t *a, const hl_literal_t *b) {
  hl_instruction_t *inst = kt_inst(op, a->shape.dtype, a->shape.rank, a->shape.dims);
  hl_literal_t *ops[2] = {(hl_literal_t *)a, (hl_literal_t *)b}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_binary(NULL, inst, ops, &y));
  return y;
}

// Binary op on integers: checks y[i] == want[i] (compared as int64 of the type).
static void check_int2(hl_opcode_t op, hl_dtype_t t, int n, const int64_t *a, const int64_t *b,
                       const int64_t *want) {
  int64_t dims[1] = {n};
  hl_literal_t *la = kt_lit_int(t, 1, dims, a), *lb = kt_lit_int(t, 1, dims, b);
  hl_literal_t *y = run2(op, la, lb);
  for (int i = 0; i < n; i++) {
    if (hl_literal_get_s64(y, i) != want[i])
      fprintf(stderr, "\n  %s %s [%d]: got %lld want %lld\n", hl_opcode_name(op),
              hl_dtype_name(t), i, (long long)hl_literal_get_s64(y, i), (long long)want[i]);
    CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), want[i]);
  }
  hl_literal_release(la);
  hl_literal_release(lb);
  hl_literal_release(y);
}

static void check_int1(hl_opcode_t op, hl_dtype_t t, int n, const int64_t *a, const int64_t *want) {
  int64_t dims[1] = {n};
  hl_literal_t *la = kt_lit_int(t, 1, dims, a);
  hl_literal_t *y = run1(op, t, la);
  for (int i = 0; i < n; i++) {
    if (hl_literal_get_s64(y, i) != want[i])
      fprintf(stderr, "\n  %s %s [%d]: got %lld want %lld\n", hl_opcode_name(op),
              hl_dtype_name(t), i, (long long)hl_literal_get_s64(y, i), (long long)want[i]);
    CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), want[i]);
  }
  hl_literal_release(la);
  hl_literal_release(y);
}

// Float op: y[i] equals want[i] within rel_tol (0: exactly; NaN matches NaN).
static void check_float1(hl_opcode_t op, hl_dtype_t t, int n, const double *a, const double *want,
                         double rel_tol) {
  int64_t dims[1] = {n};
  hl_literal_t *la = kt_lit_f64(t, 1, dims, a);
  hl_literal_t *y = run1(op, t, la);
  for (int i = 0; i < n; i++) {
    double got = hl_literal_get_f64(y, i);
    int ok = kt_same(got, want[i]) || fabs(got - want[i]) <= rel_tol * fabs(want[i]);
    if (!ok)
      fprintf(stderr, "\n  %s %s [%d]: got %.17g want %.17g\n", hl_opcode_name(op),
              hl_dtype_name(t), i, got, want[i]);
    CU_ASSERT(ok);
  }
  hl_literal_release(la);
  hl_literal_release(y);
}

static void check_float2(hl_opcode_t op, hl_dtype_t t, int n, const double *a, const double *b,
                         const double *want) {
  int64_t dims[1] = {n};
  hl_literal_t *la = kt_lit_f64(t, 1, dims, a), *lb = kt_lit_f64(t, 1, dims, b);
  hl_literal_t *y = run2(op, la, lb);
  for (int i = 0; i < n; i++) {
    double got = hl_literal_get_f64(y, i);
    if (!kt_same(got, want[i]))
      fprintf(stderr, "\n  %s %s [%d]: got %.17g want %.17g\n", hl_opcode_name(op),
              hl_dtype_name(t), i, got, want[i]);
    CU_ASSERT(kt_same(got, want[i]));
  }
  hl_literal_release(la);
  hl_literal_release(lb);
  hl_literal_release(y);
}

static void test_f32_arithmetic(void) {
  kt_reset();
  // numpy: np.float32(1.5)+np.float32(0.1) = 1.6, np.float32(3.25)*np.float32(1.1) = 3.575,
  // np.float32(1e30)/np.float32(3) = 3.3333334e+29.
  double a[4] = {1.5, -2, 3.25, 1e30}, b[4] = {0.1, 1e-8, 1.1, 3};
  double add[4] = {1.6f, (float)(-2.0f + 1e-8f), (float)(3.25f + 1.1f), (float)(1e30f + 3.0f)};
  double mul[4] = {(float)(1.5f * 0.1f), (float)(-2.0f * 1e-8f), 3.575f, (float)(1e30f * 3.0f)};
  double div[4] = {(float)(1.5f / 0.1f), -2e8f, (float)(3.25f / 1.1f), 3.3333334e+29f};
  double sub[4] = {(float)(1.5f - 0.1f), -2.0f, (float)(3.25f - 1.1f), 1e30f};
  check_float2(HL_OP_ADD, HL_F32, 4, a, b, add);
  check_float2(HL_OP_MULTIPLY, HL_F32, 4, a, b, mul);
  check_float2(HL_OP_DIVIDE, HL_F32, 4, a, b, div);
  check_float2(HL_OP_SUBTRACT, HL_F32, 4, a, b, sub);
  double rem_a[3] = {7.5, -7.5, 1}, rem_b[3] = {2, 2, 0}, rem[3] = {1.5, -1.5, NAN};
  check_float2(HL_OP_REMAINDER, HL_F32, 3, rem_a, rem_b, rem);
  // IEEE pow; XLA: x^0 = 1 and 1^x = 1 even for NaN.
  double pa[5] = {0, 2, -8, 1, NAN}, pb[5] = {0, -1, 1.0 / 3, NAN, 0}, pw[5] = {1, 0.5, NAN, 1, 1};
  check_float2(HL_OP_POWER, HL_F32, 5, pa, pb, pw);
  double ya[2] = {1, -1}, xb[2] = {-1, -1};
  double at2[2] = {2.356194496154785, -2.356194496154785};  // numpy float32(arctan2)
  check_float2(HL_OP_ATAN2, HL_F32, 2, ya, xb, at2);
}

static void test_f64_and_large_f32(void) {
  kt_reset();
  double a[2] = {1, -1e300}, b[2] = {3, 1e10}, div[2] = {1.0 / 3, -1e290};
  check_float2(HL_OP_DIVIDE, HL_F64, 2, a, b, div);
  double mul[2] = {3, -INFINITY};  // -1e310 overflows
  check_float2(HL_OP_MULTIPLY, HL_F64, 2, a, b, mul);
  // A long f32 vector through the vectorised loop, against the same sums in double
  // (exact: small integers and halves).
  enum { N = 1003 };
  int64_t dims[1] = {N};
  double av[N], bv[N];
  for (int i = 0; i < N; i++) av[i] = i * 0.5, bv[i] = 1000 - i;
  hl_literal_t *la = kt_lit_f64(HL_F32, 1, dims, av), *lb = kt_lit_f64(HL_F32, 1, dims, bv);
  hl_literal_t *y = run2(HL_OP_ADD, la, lb), *z = run2(HL_OP_MULTIPLY, la, lb);
  for (int i = 0; i < N; i++) {
    CU_ASSERT_EQUAL(hl_literal_get_f64(y, i), av[i] + bv[i]);
    CU_ASSERT_EQUAL(hl_literal_get_f64(z, i), av[i] * bv[i]);
  }
  hl_literal_release(la);
  hl_literal_release(lb);
  hl_literal_release(y);
  hl_literal_release(z);
}

static void test_max_min_nan_zero(void) {
  kt_reset();
  double a[5] = {NAN, 1, -0.0, 2, 0.0}, b[5] = {1, NAN, 0.0, 3, -0.0};
  double mx[5] = {NAN, NAN, 0.0, 3, 0.0}, mn[5] = {NAN, NAN, -0.0, 2, -0.0};
  for (int t = 0; t < 2; t++) {
    hl_dtype_t dt = t ? HL_F64 : HL_BF16;
    int64_t dims[1] = {5};
    hl_literal_t *la = kt_lit_f64(dt, 1, dims, a), *lb = kt_lit_f64(dt, 1, dims, b);
    hl_literal_t *y = run2(HL_OP_MAXIMUM, la, lb), *z = run2(HL_OP_MINIMUM, la, lb);
    for (int i = 0; i < 5; i++) {
      CU_ASSERT(kt_same(hl_literal_get_f64(y, i), mx[i]));
      CU_ASSERT(kt_same(hl_literal_get_f64(z, i), mn[i]));
      if (!isnan(mx[i])) CU_ASSERT_EQUAL(!!signbit(hl_literal_get_f64(y, i)), !!signbit(mx[i]));
      if (!isnan(mn[i])) CU_ASSERT_EQUAL(!!signbit(hl_literal_get_f64(z, i)), !!signbit(mn[i]));
    }
    hl_literal_release(la);
    hl_literal_release(lb);
    hl_literal_release(y);
    hl_literal_release(z);
  }
  int64_t ua[2] = {(int64_t)(UINT64_C(1) << 63), 5}, ub[2] = {1, 7};
  int64_t umax[2] = {(int64_t)(UINT64_C(1) << 63), 7}, smin[2] = {INT64_MIN, 5};
  check_int2(HL_OP_MAXIMUM, HL_U64, 2, ua, ub, umax);  // unsigned order
  check_int2(HL_OP_MINIMUM, HL_S64, 2, ua, ub, smin);  // signed order
}

static void test_half_rounding(void) {
  kt_reset();
  // bf16 has 8 significant bits: 1 + 2^-8 is a tie -> even (1.0);
  // 1 + 3*2^-8 is a tie -> even (1 + 2^-6).
  double a[3] = {1, 1, 256}, b[3] = {0.00390625, 0.01171875, 1}, want[3] = {1, 1.015625, 256};
  check_float2(HL_OP_ADD, HL_BF16, 3, a, b, want);
  // f16 has 11: numpy float16(2048)+float16(3) = 2052, float16(2048)+float16(1) = 2048,
  // float16(65504)+float16(32) = inf (65520 rounds up).
  double c[3] = {2048, 2048, 65504}, d[3] = {3, 1, 32}, w16[3] = {2052, 2048, INFINITY};
  check_float2(HL_OP_ADD, HL_F16, 3, c, d, w16);
  // numpy float16(np.exp(1)) = 2.719 (2.71875); bf16 of sqrt(2): 1.4140625 (by hand).
  double e1[1] = {1}, ew[1] = {2.71875};
  check_float1(HL_OP_EXP, HL_F16, 1, e1, ew, 0);
  double s2[1] = {2}, sw[1] = {1.4140625};
  check_float1(HL_OP_SQRT, HL_BF16, 1, s2, sw, 0);
}

static void test_float_unary(void) {
  kt_reset();
  // f32 results from numpy: float(np.float32(fn(np.float64(x)))).
  struct { hl_opcode_t op; double x, want; } cases[] = {
      {HL_OP_EXP, 1, 2.7182817459106445},      {HL_OP_LOG, 2, 0.6931471824645996},
      {HL_OP_TANH, 0.5, 0.46211716532707214},  {HL_OP_SIN, 1, 0.8414709568023682},
      {HL_OP_COS, 1, 0.5403022766113281},      {HL_OP_TAN, 0.5, 0.5463024973869324},
      {HL_OP_ASINH, 1, 0.8813735842704773},    {HL_OP_ACOSH, 2, 1.316957950592041},
      {HL_OP_ATANH, 0.5, 0.5493061542510986},  {HL_OP_ASIN, 0.5, 0.5235987901687622},
      {HL_OP_ACOS, 0.5, 1.0471975803375244},   {HL_OP_ATAN, 1, 0.7853981852531433},
      {HL_OP_SINH, 1, 1.175201177597046},      {HL_OP_COSH, 1, 1.5430806875228882},
      {HL_OP_LOG1P, 1e-5, 9.999949725170154e-06}, {HL_OP_EXPM1, 1e-5, 1.0000049769587349e-05},
      {HL_OP_CBRT, -27, -3},                   {HL_OP_SQRT, 2, 1.4142135381698608},
      {HL_OP_ERF, 0.5, 0.5204998850822449},    {HL_OP_RSQRT, 4, 0.5},
      {HL_OP_LOGISTIC, 0, 0.5},                {HL_OP_NEGATE, 2.5, -2.5},
      {HL_OP_ABS, -2.5, 2.5},                  {HL_OP_CEIL, -1.5, -1},
      {HL_OP_FLOOR, -1.5, -2},                 {HL_OP_SQRT, -1, NAN},
      {HL_OP_LOG, 0, -INFINITY},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_float1(cases[i].op, HL_F32, 1, &cases[i].x, &cases[i].want, 2e-7);
  // round-nearest-afz: halves away from zero; round-nearest-even: to even.
  double r[6] = {0.5, 1.5, 2.5, -0.5, -2.5, 2.4};
  double afz[6] = {1, 2, 3, -1, -3, 2}, even[6] = {0, 2, 2, -0.0, -2, 2};
  check_float1(HL_OP_ROUND_NEAREST_AFZ, HL_F64, 6, r, afz, 0);
  check_float1(HL_OP_ROUND_NEAREST_EVEN, HL_F32, 6, r, even, 0);
  // sign: -1, -0, +0, +1, NaN as in the StableHLO definition.
  double s[5] = {-2, -0.0, 0.0, 3, NAN}, sw[5] = {-1, -0.0, 0.0, 1, NAN};
  int64_t dims[1] = {5};
  hl_literal_t *ls = kt_lit_f64(HL_F32, 1, dims, s), *ys = run1(HL_OP_SIGN, HL_F32, ls);
  for (int i = 0; i < 5; i++) {
    CU_ASSERT(kt_same(hl_literal_get_f64(ys, i), sw[i]));
    if (i < 4) CU_ASSERT_EQUAL(!!signbit(hl_literal_get_f64(ys, i)), !!signbit(sw[i]));
  }
  hl_literal_release(ls);
  hl_literal_release(ys);
  // is-finite gives pred.
  double f[4] = {1, INFINITY, -INFINITY, NAN};
  int64_t fd[1] = {4};
  hl_literal_t *lf = kt_lit_f64(HL_F16, 1, fd, f), *yf = run1(HL_OP_IS_FINITE, HL_PRED, lf);
  uint8_t fw[4] = {1, 0, 0, 0};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(((uint8_t *)yf->data)[i], fw[i]);
  hl_literal_release(lf);
  hl_literal_release(yf);
}

static void test_int_division(void) {
  kt_reset();
  // XLA: x / 0 = -1, INT_MIN / -1 = INT_MIN, x % 0 = x, INT_MIN % -1 = 0; C truncation.
  int64_t a[6] = {7, -7, 7, INT32_MIN, 5, -7}, b[6] = {2, 2, 0, -1, -1, -2};
  int64_t div[6] = {3, -3, -1, INT32_MIN, -5, 3}, rem[6] = {1, -1, 7, 0, 0, -1};
  check_int2(HL_OP_DIVIDE, HL_S32, 6, a, b, div);
  check_int2(HL_OP_REMAINDER, HL_S32, 6, a, b, rem);
  int64_t a64[2] = {INT64_MIN, INT64_MIN}, b64[2] = {-1, 0};
  int64_t d64[2] = {INT64_MIN, -1}, r64[2] = {0, INT64_MIN};
  check_int2(HL_OP_DIVIDE, HL_S64, 2, a64, b64, d64);
  check_int2(HL_OP_REMAINDER, HL_S64, 2, a64, b64, r64);
  int64_t a8[3] = {-128, 100, 9}, b8[3] = {-1, 0, 4}, d8[3] = {-128, -1, 2};
  check_int2(HL_OP_DIVIDE, HL_S8, 3, a8, b8, d8);
  // unsigned: x / 0 = all ones, x % 0 = x.
  int64_t ua[3] = {5, 200, 255}, ub[3] = {0, 0, 16}, ud[3] = {255, 255, 15}, ur[3] = {5, 200, 15};
  check_int2(HL_OP_DIVIDE, HL_U8, 3, ua, ub, ud);
  check_int2(HL_OP_REMAINDER, HL_U8, 3, ua, ub, ur);
  int64_t u64a[1] = {7}, u64b[1] = {0}, u64d[1] = {-1};
  check_int2(HL_OP_DIVIDE, HL_U64, 1, u64a, u64b, u64d);
}

static void test_int_wrap_and_power(void) {
  kt_reset();
  int64_t a[3] = {127, -128, 100}, b[3] = {1, -1, 3}, add[3] = {-128, 127, 103};
  int64_t mul[3] = {127, -128, 44};  // 300 mod 256 = 44
  check_int2(HL_OP_ADD, HL_S8, 3, a, b, add);
  check_int2(HL_OP_MULTIPLY, HL_S8, 3, a, b, mul);
  int64_t ua[2] = {0, 65535}, ub[2] = {1, 65535}, usub[2] = {65535, 0}, umul[2] = {0, 1};
  check_int2(HL_OP_SUBTRACT, HL_U16, 2, ua, ub, usub);
  check_int2(HL_OP_MULTIPLY, HL_U16, 2, ua, ub, umul);  // 65535^2 mod 2^16 = 1
  int64_t m64a[1] = {(int64_t)(UINT64_C(1) << 63)}, m64b[1] = {2}, m64[1] = {0};
  check_int2(HL_OP_MULTIPLY, HL_U64, 1, m64a, m64b, m64);
  // XLA integer power: negative exponent gives 1 for base 1, else 0.
  // 3^40 mod 2^32 as s32 = 689956897 (python: pow(3,40) % 2**32).
  int64_t pa[8] = {2, 3, 1, -1, 2, 0, -2, 3}, pb[8] = {10, 3, -5, -1, -1, 0, 3, 40};
  int64_t pw[8] = {1024, 27, 1, 0, 0, 1, -8, 689956897};
  check_int2(HL_OP_POWER, HL_S32, 8, pa, pb, pw);
  int64_t qa[2] = {2, 3}, qb[2] = {8, 5}, qw[2] = {0, 243};
  check_int2(HL_OP_POWER, HL_U8, 2, qa, qb, qw);
  int64_t la[2] = {0x0F, -1}, lb[2] = {0x3C, 0x55};
  int64_t land[2] = {0x0C, 0x55}, lor[2] = {0x3F, -1}, lxor[2] = {0x33, ~INT64_C(0x55)};
  check_int2(HL_OP_AND, HL_S16, 2, la, lb, land);
  check_int2(HL_OP_OR, HL_S16, 2, la, lb, lor);
  check_int2(HL_OP_XOR, HL_S16, 2, la, lb, lxor);
}

static void test_shifts(void) {
  kt_reset();
  // Amounts are read unsigned: >= bit width (incl. negative) saturates.
  int64_t a[4] = {1, 1, 1, -1}, b[4] = {3, 8, -1, 7}, shl[4] = {8, 0, 0, -128};
  check_int2(HL_OP_SHIFT_LEFT, HL_S8, 4, a, b, shl);
  int64_t c[4] = {-128, -128, 64, -1}, d[4] = {1, 8, 7, 100}, sra[4] = {-64, -1, 0, -1};
  check_int2(HL_OP_SHIFT_RIGHT_ARITHMETIC, HL_S8, 4, c, d, sra);
  int64_t e[4] = {-128, -1, 64, -1}, f[4] = {1, 8, 6, 7}, srl[4] = {64, 0, 1, 1};
  check_int2(HL_OP_SHIFT_RIGHT_LOGICAL, HL_S8, 4, e, f, srl);
  int64_t g[3] = {0x8000, 0x8000, 0x4000}, h[3] = {1, 16, 20}, usra[3] = {0xC000, 0xFFFF, 0};
  check_int2(HL_OP_SHIFT_RIGHT_ARITHMETIC, HL_U16, 3, g, h, usra);
  int64_t i64[2] = {1, -1}, j64[2] = {63, 64}, shl64[2] = {INT64_MIN, 0};
  check_int2(HL_OP_SHIFT_LEFT, HL_S64, 2, i64, j64, shl64);
  int64_t u32a[2] = {0xFFFFFFFF, 0xFFFFFFFF}, u32b[2] = {31, 32}, u32w[2] = {1, 0};
  check_int2(HL_OP_SHIFT_RIGHT_LOGICAL, HL_U32, 2, u32a, u32b, u32w);
}

static void test_int_unary(void) {
  kt_reset();
  int64_t a[3] = {-128, -5, 5}, abs8[3] = {-128, 5, 5}, neg8[3] = {-128, 5, -5};
  check_int1(HL_OP_ABS, HL_S8, 3, a, abs8);
  check_int1(HL_OP_NEGATE, HL_S8, 3, a, neg8);
  int64_t n32[3] = {0, -1, 5}, not32[3] = {-1, 0, -6};
  check_int1(HL_OP_NOT, HL_S32, 3, n32, not32);
  int64_t u8[3] = {0, 255, 1}, notu8[3] = {255, 0, 254}, signu8[3] = {0, 1, 1};
  check_int1(HL_OP_NOT, HL_U8, 3, u8, notu8);
  check_int1(HL_OP_SIGN, HL_U8, 3, u8, signu8);
  int64_t s[3] = {-5, 0, 7}, sg[3] = {-1, 0, 1};
  check_int1(HL_OP_SIGN, HL_S32, 3, s, sg);
  int64_t p8[3] = {-1, 0, 7}, pc8[3] = {8, 0, 3};
  check_int1(HL_OP_POPCNT, HL_S8, 3, p8, pc8);
  int64_t p64[1] = {-1}, pc64[1] = {64};
  check_int1(HL_OP_POPCNT, HL_S64, 1, p64, pc64);
  int64_t pu32[1] = {0xFFFFFFFF}, pcu32[1] = {32};
  check_int1(HL_OP_POPCNT, HL_U32, 1, pu32, pcu32);
  int64_t c8[4] = {0, 1, -1, 16}, clz8[4] = {8, 7, 0, 3};
  check_int1(HL_OP_CLZ, HL_S8, 4, c8, clz8);
  int64_t c16[2] = {1, 0}, clz16[2] = {15, 16};
  check_int1(HL_OP_CLZ, HL_U16, 2, c16, clz16);
  int64_t c64[2] = {1, INT64_MIN}, clz64[2] = {63, 0};
  check_int1(HL_OP_CLZ, HL_S64, 2, c64, clz64);
}

static void test_pred(void) {
  kt_reset();
  int64_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1};
  int64_t orv[4] = {0, 1, 1, 1}, andv[4] = {0, 0, 0, 1}, xorv[4] = {0, 1, 1, 0};
  check_int2(HL_OP_ADD, HL_PRED, 4, a, b, orv);
  check_int2(HL_OP_MAXIMUM, HL_PRED, 4, a, b, orv);
  check_int2(HL_OP_OR, HL_PRED, 4, a, b, orv);
  check_int2(HL_OP_MULTIPLY, HL_PRED, 4, a, b, andv);
  check_int2(HL_OP_MINIMUM, HL_PRED, 4, a, b, andv);
  check_int2(HL_OP_AND, HL_PRED, 4, a, b, andv);
  check_int2(HL_OP_XOR, HL_PRED, 4, a, b, xorv);
  int64_t na[2] = {0, 1}, nw[2] = {1, 0};
  check_int1(HL_OP_NOT, HL_PRED, 2, na, nw);
}

static void test_errors_and_empty(void) {
  kt_reset();
  int64_t dims[1] = {2}, v[2] = {1, 2};
  hl_literal_t *x = kt_lit_int(HL_S32, 1, dims, v);
  hl_instruction_t *sine = kt_inst(HL_OP_SIN, HL_S32, 1, dims);
  hl_literal_t *ops[2] = {x, x}, *y = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_unary(NULL, sine, ops, &y), "sine");
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_unary(NULL, sine, ops, &y), "s32");
  CU_ASSERT_PTR_NULL(y);
  hl_instruction_t *atan2 = kt_inst(HL_OP_ATAN2, HL_S32, 1, dims);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_binary(NULL, atan2, ops, &y), "atan2");
  double fv[2] = {1, 2};
  hl_literal_t *f = kt_lit_f64(HL_F32, 1, dims, fv);
  hl_instruction_t *and_f = kt_inst(HL_OP_AND, HL_F32, 1, dims);
  hl_literal_t *fops[2] = {f, f};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_binary(NULL, and_f, fops, &y), "f32");
  hl_literal_t *mixed[2] = {x, f};
  hl_instruction_t *add = kt_inst(HL_OP_ADD, HL_S32, 1, dims);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_binary(NULL, add, mixed, &y), "element types differ");
  int64_t three[1] = {3};
  hl_instruction_t *add3 = kt_inst(HL_OP_ADD, HL_S32, 1, three);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_binary(NULL, add3, ops, &y), "operand 0");
  hl_literal_t *c = kt_lit_f64(HL_C64, 1, dims, fv), *cops[2] = {c, c};
  hl_instruction_t *remc = kt_inst(HL_OP_REMAINDER, HL_C64, 1, dims);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_binary(NULL, remc, cops, &y), "c64");
  hl_literal_t *f8 = kt_lit_f64(HL_F8E4M3FN, 1, dims, fv), *f8ops[2] = {f8, f8};
  hl_instruction_t *addf8 = kt_inst(HL_OP_ADD, HL_F8E4M3FN, 1, dims);
  // f8 types compute in double and round once: 1+1 = 2, 2+2 = 4 (exact in e4m3fn).
  HL_ASSERT_OK(hl_kernel_binary(NULL, addf8, f8ops, &y));
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 2);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 1), 4);
  hl_literal_release(y);
  y = NULL;
  hl_literal_release(f8);
  // Zero-size arrays.
  int64_t zero[2] = {3, 0};
  hl_literal_t *e = kt_lit_f64(HL_F32, 2, zero, NULL), *eops[2] = {e, e};
  hl_instruction_t *mul0 = kt_inst(HL_OP_MULTIPLY, HL_F32, 2, zero);
  HL_ASSERT_OK(hl_kernel_binary(NULL, mul0, eops, &y));
  CU_ASSERT_EQUAL(hl_literal_element_count(y), 0);
  hl_literal_release(y);
  hl_instruction_t *neg0 = kt_inst(HL_OP_NEGATE, HL_F32, 2, zero);
  HL_ASSERT_OK(hl_kernel_unary(NULL, neg0, eops, &y));
  CU_ASSERT_EQUAL(y->shape.dims[1], 0);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(f);
  hl_literal_release(c);
  hl_literal_release(e);
}

// Complex literal from (re, im) pairs.
static hl_literal_t *complex_lit(hl_dtype_t t, int n, const double *reim) {
  int64_t dims[1] = {n};
  hl_shape_t s = hl_shape_array(t, 1, dims);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  for (int i = 0; i < 2 * n; i++) {
    if (t == HL_C64) ((float *)lit->data)[i] = (float)reim[i];
    else ((double *)lit->data)[i] = reim[i];
  }
  return lit;
}

static double part(const hl_literal_t *y, int k) {
  return y->shape.dtype == HL_C64 ? ((float *)y->data)[k] : ((double *)y->data)[k];
}

static void test_complex(void) {
  kt_reset();
  // numpy: (1+2j)*(3-1j) = 5+5j, (1+2j)/(3-1j) = 0.1+0.7j, (1+2j)+(3-1j) = 4+1j,
  // (1+2j)**0 = 1; abs(3+4j) = 5; sign(3+4j) = 0.6+0.8j; sqrt(-4) = 2j; exp(0) = 1.
  double a[4] = {1, 2, 3, 4}, b[4] = {3, -1, 0, 0};
  for (int t = 0; t < 2; t++) {
    hl_dtype_t dt = t ? HL_C128 : HL_C64;
    double tol = t ? 1e-15 : 1e-7;
    hl_literal_t *la = complex_lit(dt, 2, a), *lb = complex_lit(dt, 2, b);
    hl_literal_t *y = run2(HL_OP_MULTIPLY, la, lb);
    CU_ASSERT(part(y, 0) == 5 && part(y, 1) == 5 && part(y, 2) == 0 && part(y, 3) == 0);
    hl_literal_release(y);
    y = run2(HL_OP_ADD, la, lb);
    CU_ASSERT(part(y, 0) == 4 && part(y, 1) == 1 && part(y, 2) == 3 && part(y, 3) == 4);
    hl_literal_release(y);
    hl_literal_t *one = complex_lit(dt, 2, (double[]){3, -1, 1, 0});
    y = run2(HL_OP_DIVIDE, la, one);
    CU_ASSERT(fabs(part(y, 0) - 0.1) < tol && fabs(part(y, 1) - 0.7) < tol);
    CU_ASSERT(part(y, 2) == 3 && part(y, 3) == 4);
    hl_literal_release(y);
    y = run2(HL_OP_POWER, la, lb);  // second element: exponent 0
    CU_ASSERT(part(y, 2) == 1 && part(y, 3) == 0);
    hl_literal_release(y);
    hl_literal_t *z = complex_lit(dt, 2, (double[]){3, 4, -4, 0});
    hl_dtype_t rt = t ? HL_F64 : HL_F32;
    y = run1(HL_OP_ABS, rt, z);
    CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 5);
    CU_ASSERT_EQUAL(hl_literal_get_f64(y, 1), 4);
    hl_literal_release(y);
    y = run1(HL_OP_SIGN, dt, z);
    CU_ASSERT(fabs(part(y, 0) - 0.6) < tol && fabs(part(y, 1) - 0.8) < tol);
    CU_ASSERT(part(y, 2) == -1 && part(y, 3) == 0);
    hl_literal_release(y);
    y = run1(HL_OP_SQRT, dt, z);
    CU_ASSERT(fabs(part(y, 2)) < tol && fabs(part(y, 3) - 2) < tol);
    hl_literal_release(y);
    y = run1(HL_OP_NEGATE, dt, z);
    CU_ASSERT(part(y, 0) == -3 && part(y, 1) == -4);
    hl_literal_release(y);
    hl_literal_release(z);
    hl_literal_release(one);
    hl_literal_release(la);
    hl_literal_release(lb);
  }
}

// atan2, cbrt, maximum, minimum on complex. Expected values from numpy:
//   atan2(y, x) = -1j * log((x + 1j*y) / sqrt(x*x + y*y)) (XLA's and
//   StableHLO's definition): y = 1+2j, x = 3-1j -> 0.19025318855618242+0.8418239574966186j;
//   y = -1, x = 0 -> -pi/2.
//   cbrt(z) = abs(z)**(1/3) * exp(1j*angle(z)/3): 3+4j -> 1.6289371459221758+0.5201745023045456j,
//   -8 -> 1+1.7320508075688772j (the principal root, not -2).
// maximum / minimum compare (real, imag) lexicographically (StableHLO spec);
// -0.0 == 0.0 in the real part, so the imaginary part decides.
static void test_complex_atan2_cbrt_max_min(void) {
  kt_reset();
  for (int t = 0; t < 2; t++) {
    hl_dtype_t dt = t ? HL_C128 : HL_C64;
    double tol = t ? 1e-15 : 1e-6;
    hl_literal_t *y = complex_lit(dt, 2, (double[]){1, 2, -1, 0});
    hl_literal_t *x = complex_lit(dt, 2, (double[]){3, -1, 0, 0});
    hl_literal_t *r = run2(HL_OP_ATAN2, y, x);
    CU_ASSERT(fabs(part(r, 0) - 0.19025318855618242) < tol);
    CU_ASSERT(fabs(part(r, 1) - 0.8418239574966186) < tol);
    CU_ASSERT(fabs(part(r, 2) + 1.5707963267948966) < tol && fabs(part(r, 3)) < tol);
    hl_literal_release(r);
    hl_literal_t *z = complex_lit(dt, 2, (double[]){3, 4, -8, 0});
    r = run1(HL_OP_CBRT, dt, z);
    CU_ASSERT(fabs(part(r, 0) - 1.6289371459221758) < tol);
    CU_ASSERT(fabs(part(r, 1) - 0.5201745023045456) < tol);
    CU_ASSERT(fabs(part(r, 2) - 1.0) < tol && fabs(part(r, 3) - 1.7320508075688772) < tol);
    hl_literal_release(r);
    hl_literal_t *a = complex_lit(dt, 4, (double[]){1.5, 2.5, 1.5, 7.5, 0.0, 1.5, 2, -9});
    hl_literal_t *b = complex_lit(dt, 4, (double[]){7.5, 1.5, 1.5, 2.5, -0.0, 2.5, 1, 9});
    double want_max[8] = {7.5, 1.5, 1.5, 7.5, -0.0, 2.5, 2, -9};
    double want_min[8] = {1.5, 2.5, 1.5, 2.5, 0.0, 1.5, 1, 9};
    hl_literal_t *mx = run2(HL_OP_MAXIMUM, a, b), *mn = run2(HL_OP_MINIMUM, a, b);
    for (int k = 0; k < 8; k++) {
      CU_ASSERT(part(mx, k) == want_max[k] && signbit(part(mx, k)) == signbit(want_max[k]));
      CU_ASSERT(part(mn, k) == want_min[k] && signbit(part(mn, k)) == signbit(want_min[k]));
    }
    hl_literal_release(mx);
    hl_literal_release(mn);
    hl_literal_release(a);
    hl_literal_release(b);
    hl_literal_release(z);
    hl_literal_release(x);
    hl_literal_release(y);
  }
}

// The kernels' bit-level double -> f16/bf16 rounding against dtype.c's
// frexp/ldexp-based hl_f64_to_f16 / hl_f64_to_bf16 (an independent
// implementation), on values around ties, subnormals and overflow.
static void test_half_store_matches_dtype(void) {
  uint64_t state = 12345;
  int bad = 0;
  for (int i = 0; i < 200000 && bad < 5; i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    uint64_t r = state >> 11;
    int e16 = 1023 - 28 + (int)(r % 48);    // 2^-28 .. 2^19 for f16
    int e8 = 1023 - 140 + (int)(r % 275);   // 2^-140 .. 2^134 for bf16
    uint64_t man = (state * 2862933555777941757u) >> 12;
    if (i % 4 == 1) man &= ~((UINT64_C(1) << 41) - 1);  // exact f16 ties and near-ties
    if (i % 4 == 2) man &= ~((UINT64_C(1) << 44) - 1);  // bf16 ties
    uint64_t sign = (r & 1) << 63;
    uint64_t b16 = sign | ((uint64_t)e16 << 52) | man, b8 = sign | ((uint64_t)e8 << 52) | man;
    double d16, d8;
    memcpy(&d16, &b16, 8);
    memcpy(&d8, &b8, 8);
    if (hl_elem_f64_to_f16(d16) != hl_f64_to_f16(d16)) {
      fprintf(stderr, "\n  f16(%a): %04x vs %04x\n", d16, hl_elem_f64_to_f16(d16), hl_f64_to_f16(d16));
      bad++;
    }
    if (hl_elem_f64_to_bf16(d8) != hl_f64_to_bf16(d8)) {
      fprintf(stderr, "\n  bf16(%a): %04x vs %04x\n", d8, hl_elem_f64_to_bf16(d8), hl_f64_to_bf16(d8));
      bad++;
    }
  }
  double special[8] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 65520, 1e-300};
  for (int i = 0; i < 8; i++) {
    if (hl_elem_f64_to_f16(special[i]) != hl_f64_to_f16(special[i])) bad++;
    if (hl_elem_f64_to_bf16(special[i]) != hl_f64_to_bf16(special[i])) bad++;
  }
  CU_ASSERT_EQUAL(bad, 0);
}

// f16 / bf16 + - * / maximum minimum run in f32 (elementwise.c half_arith):
// every result must equal the operation done in double and rounded once to
// the type (what the generic loop computes), on random bit patterns
// covering subnormals, infinities, NaN, signed zeros and exponent gaps.
static void test_half_arith_in_f32_matches_double(void) {
  const hl_opcode_t ops[] = {HL_OP_ADD, HL_OP_SUBTRACT, HL_OP_MULTIPLY, HL_OP_DIVIDE,
                             HL_OP_MAXIMUM, HL_OP_MINIMUM};
  enum { N = 1 << 16 };
  static uint16_t a[N], b[N], y[N];
  uint32_t s = 12345;
  for (int i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    a[i] = (uint16_t)(s >> 16);
    s = s * 1664525u + 1013904223u;
    b[i] = (uint16_t)(s >> 16);
    if (i % 7 == 0) b[i] = (uint16_t)(a[i] ^ 0x8000u);  // x - x, x + -x
  }
  for (int ti = 0; ti < 2; ti++) {
    hl_dtype_t t = ti ? HL_BF16 : HL_F16;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
      hl_ew_binary_array(ops[k], t, t, a, b, y, N);
      int bad = 0;
      for (int i = 0; i < N; i++) {
        double u = t == HL_F16 ? hl_f16_to_f32(a[i]) : hl_bf16_to_f32(a[i]);
        double v = t == HL_F16 ? hl_f16_to_f32(b[i]) : hl_bf16_to_f32(b[i]);
        double w = ops[k] == HL_OP_ADD ? u + v : ops[k] == HL_OP_SUBTRACT ? u - v
                 : ops[k] == HL_OP_MULTIPLY ? u * v : ops[k] == HL_OP_DIVIDE ? u / v
                 : ops[k] == HL_OP_MAXIMUM ? hl_maximum_f64(u, v) : hl_minimum_f64(u, v);
        // The kernels' own rounding (NaN keeps its sign), checked against
        // dtype.c's by half_store_matches_dtype.
        uint16_t want = t == HL_F16 ? hl_elem_f64_to_f16(w) : hl_elem_f64_to_bf16(w);
        // Which NaN a NaN op NaN returns is not specified (IEEE 754, C):
        // then any NaN will do.
        double got = t == HL_F16 ? hl_f16_to_f32(y[i]) : hl_bf16_to_f32(y[i]);
        if (isnan(u) && isnan(v) && isnan(got)) continue;
        if (y[i] != want) {
          if (bad++ < 3)
            fprintf(stderr, "\n  %s %s(%04x, %04x) = %04x, want %04x", hl_dtype_name(t),
                    hl_opcode_name(ops[k]), a[i], b[i], y[i], want);
        }
      }
      CU_ASSERT_EQUAL(bad, 0);
    }
  }
}

static CU_TestInfo tests[] = {
    {"half_arith_in_f32_matches_double", test_half_arith_in_f32_matches_double},
    {"half_store_matches_dtype", test_half_store_matches_dtype},
    {"complex", test_complex},
    {"complex_atan2_cbrt_max_min", test_complex_atan2_cbrt_max_min},
    {"f32_arithmetic", test_f32_arithmetic},
    {"f64_and_large_f32", test_f64_and_large_f32},
    {"max_min_nan_zero", test_max_min_nan_zero},
    {"half_rounding", test_half_rounding},
    {"float_unary", test_float_unary},
    {"int_division", test_int_division},
    {"int_wrap_and_power", test_int_wrap_and_power},
    {"shifts", test_shifts},
    {"int_unary", test_int_unary},
    {"pred", test_pred},
    {"errors_and_empty", test_errors_and_empty},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("elementwise", tests)
