// hl_kernel_special_function (kernels/special_functions.c), called directly:
// values against Python's math module (math.lgamma) and NumPy's nextafter
// (bit patterns noted at each), the special cases of upstream's
// decompositions (poles, infinities, NaN, n not natural), and errors.
#include <math.h>

#include "tests/unit/kernel_test_util.h"

static hl_literal_t *run(hl_opcode_t op, hl_dtype_t t, hl_literal_t *a, hl_literal_t *b) {
  hl_instruction_t *inst = kt_inst(op, t, a->shape.rank, a->shape.dims);
  kt_set_operand_count(inst, b ? 2 : 1);
  hl_literal_t *ops[2] = {a, b}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_special_function(NULL, inst, ops, &y));
  CU_ASSERT_EQUAL_FATAL(y->shape.dtype, t);
  return y;
}

static void test_lgamma_digamma(void) {
  kt_reset();
  int64_t d[] = {6};
  double v[] = {0.5, -0.5, 10.0, -2.0, INFINITY, -INFINITY};
  hl_literal_t *x = kt_lit_f64(HL_F64, 1, d, v);
  hl_literal_t *lg = run(HL_OP_LGAMMA, HL_F64, x, NULL);
  // math.lgamma(0.5), math.lgamma(-0.5), math.lgamma(10.0)
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(lg, 0), 0.5723649429247004, 1e-14);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(lg, 1), 1.265512123484645, 1e-14);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(lg, 2), 12.801827480081467, 1e-12);
  for (int i = 3; i < 6; i++) CU_ASSERT_TRUE(isinf(hl_literal_get_f64(lg, i)) && hl_literal_get_f64(lg, i) > 0);
  hl_literal_t *dg = run(HL_OP_DIGAMMA, HL_F64, x, NULL);
  // digamma(1/2) = -gamma - 2 ln 2; digamma(-1/2) = digamma(1/2) + 2
  double half = -0.5772156649015329 - 2 * log(2.0);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(dg, 0), half, 1e-14);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(dg, 1), half + 2, 1e-14);
  CU_ASSERT_TRUE(isnan(hl_literal_get_f64(dg, 3)));  // a pole: NaN, as upstream
  hl_literal_release(x);
  hl_literal_release(lg);
  hl_literal_release(dg);
}

static void test_zeta_polygamma(void) {
  kt_reset();
  int64_t d[] = {5};
  double xs[] = {2.0, 1.0, 0.5, 4.0, 3.0}, qs[] = {1.0, 2.0, 2.0, -2.0, -2.0};
  hl_literal_t *x = kt_lit_f64(HL_F64, 1, d, xs), *q = kt_lit_f64(HL_F64, 1, d, qs);
  hl_literal_t *z = run(HL_OP_ZETA, HL_F64, x, q);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(z, 0), M_PI * M_PI / 6, 1e-14);  // zeta(2)
  CU_ASSERT_TRUE(isinf(hl_literal_get_f64(z, 1)));  // x = 1: the harmonic series
  CU_ASSERT_TRUE(isnan(hl_literal_get_f64(z, 2)));  // x < 1
  CU_ASSERT_TRUE(isinf(hl_literal_get_f64(z, 3)));  // pole at integer q <= 0, even x
  CU_ASSERT_TRUE(isnan(hl_literal_get_f64(z, 4)));  // ... odd x
  double ns[] = {1.0, 0.0, 1.5, -1.0, 2.0}, ps[] = {1.0, 1.0, 1.0, 1.0, 1.0};
  hl_literal_t *n = kt_lit_f64(HL_F64, 1, d, ns), *p = kt_lit_f64(HL_F64, 1, d, ps);
  hl_literal_t *pg = run(HL_OP_POLYGAMMA, HL_F64, n, p);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(pg, 0), M_PI * M_PI / 6, 1e-13);  // trigamma(1)
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(pg, 1), -0.5772156649015329, 1e-14);  // digamma(1)
  CU_ASSERT_TRUE(isnan(hl_literal_get_f64(pg, 2)) && isnan(hl_literal_get_f64(pg, 3)));
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(pg, 4), -2 * 1.2020569031595942, 1e-13);  // -2 zeta(3)
  hl_literal_t *all[] = {x, q, z, n, p, pg};
  for (int i = 0; i < 6; i++) hl_literal_release(all[i]);
}

static void test_erf_inv_bessel(void) {
  kt_reset();
  int64_t d[] = {4};
  double v[] = {1.0, -1.0, 0.0, 0.5};
  for (int k = 0; k < 2; k++) {
    hl_dtype_t t = k ? HL_F32 : HL_F64;
    hl_literal_t *x = kt_lit_f64(t, 1, d, v);
    hl_literal_t *e = run(HL_OP_ERF_INV, t, x, NULL);
    CU_ASSERT_TRUE(isinf(hl_literal_get_f64(e, 0)) && hl_literal_get_f64(e, 0) > 0);
    CU_ASSERT_TRUE(isinf(hl_literal_get_f64(e, 1)) && hl_literal_get_f64(e, 1) < 0);
    CU_ASSERT_EQUAL(hl_literal_get_f64(e, 2), 0.0);
    CU_ASSERT_DOUBLE_EQUAL(erf(hl_literal_get_f64(e, 3)), 0.5, k ? 1e-7 : 1e-15);
    hl_literal_t *b = run(HL_OP_BESSEL_I1E, t, x, NULL);
    // I1(1) e^-1 = 0.5651591039924851 * 0.36787944117144233 (I1(1) from its series)
    CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(b, 0), 0.5651591039924851 * 0.36787944117144233,
                           k ? 1e-7 : 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(b, 1), -hl_literal_get_f64(b, 0), 0);
    CU_ASSERT_EQUAL(hl_literal_get_f64(b, 2), 0.0);
    hl_literal_release(x);
    hl_literal_release(e);
    hl_literal_release(b);
  }
}

static void test_next_after_bits(void) {
  kt_reset();
  int64_t d[] = {4};
  // f16: nextafter(1, 2) = 0x3C01 (15361), nextafter(0, -1) = 0x8001 (32769),
  // nextafter(NaN, 1) = NaN, nextafter(-0, +0) = +0 (y) -- numpy.nextafter.
  uint64_t a16[] = {0x3C00, 0x0000, 0x7E00, 0x8000}, b16[] = {0x4000, 0xBC00, 0x3C00, 0x0000};
  hl_literal_t *a = kt_lit_bits(HL_F16, 1, d, a16), *b = kt_lit_bits(HL_F16, 1, d, b16);
  hl_literal_t *r = run(HL_OP_NEXT_AFTER, HL_F16, a, b);
  const uint16_t *o = r->data;
  CU_ASSERT_EQUAL(o[0], 15361);
  CU_ASSERT_EQUAL(o[1], 32769);
  CU_ASSERT_EQUAL(o[2] & 0x7C00, 0x7C00);
  CU_ASSERT_NOT_EQUAL(o[2] & 0x3FF, 0);
  CU_ASSERT_EQUAL(o[3], 0x0000);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(r);
  // f64: nextafter(1, 0) = 0x3FEFFFFFFFFFFFFF (4607182418800017407); bf16: 1 -> 2 = 0x3F81.
  int64_t one[] = {1};
  double x1 = 1.0, y0 = 0.0, y2 = 2.0;
  a = kt_lit_f64(HL_F64, 1, one, &x1);
  b = kt_lit_f64(HL_F64, 1, one, &y0);
  r = run(HL_OP_NEXT_AFTER, HL_F64, a, b);
  CU_ASSERT_EQUAL(*(const uint64_t *)r->data, UINT64_C(4607182418800017407));
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(r);
  a = kt_lit_f64(HL_BF16, 1, one, &x1);
  b = kt_lit_f64(HL_BF16, 1, one, &y2);
  r = run(HL_OP_NEXT_AFTER, HL_BF16, a, b);
  CU_ASSERT_EQUAL(*(const uint16_t *)r->data, 0x3F81);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(r);
}

static void test_errors(void) {
  kt_reset();
  int64_t d[] = {2};
  int64_t iv[] = {1, 2};
  hl_literal_t *x = kt_lit_int(HL_S32, 1, d, iv);
  hl_instruction_t *inst = kt_inst(HL_OP_LGAMMA, HL_S32, 1, d);
  kt_set_operand_count(inst, 1);
  hl_literal_t *ops[1] = {x}, *y = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_special_function(NULL, inst, ops, &y),
                           "lgamma of element type s32 is not supported");
  CU_ASSERT_PTR_NULL(y);
  double fv[] = {1, 2};
  hl_literal_t *f = kt_lit_f64(HL_F32, 1, d, fv);
  inst = kt_inst(HL_OP_ZETA, HL_F32, 1, d);
  kt_set_operand_count(inst, 2);
  hl_literal_t *ops2[2] = {f, x};  // mixed element types
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_special_function(NULL, inst, ops2, &y), "operand 1");
  hl_literal_release(x);
  hl_literal_release(f);
}

static CU_TestInfo tests[] = {
    {"lgamma_digamma", test_lgamma_digamma},
    {"zeta_polygamma", test_zeta_polygamma},
    {"erf_inv_bessel", test_erf_inv_bessel},
    {"next_after_bits", test_next_after_bits},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("special_functions", tests)
