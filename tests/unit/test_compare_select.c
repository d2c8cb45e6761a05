// hl_kernel_compare / hl_kernel_select / hl_kernel_clamp on hand-built
// instructions; expected values worked by hand from the XLA / StableHLO rules.
#include <math.h>

#include "tests/unit/kernel_test_util.h"

// compare(a, b) with direction/type: checks the pred result against want.
static void check_cmp(hl_comparison_direction_t dir, hl_comparison_type_t type,
                      const hl_literal_t *a, const hl_literal_t *b, const uint8_t *want) {
  hl_instruction_t *inst = kt_inst(HL_OP_COMPARE, HL_PRED, a->shape.rank, a->shape.dims);
  inst->attrs.comparison_direction = dir;
  inst->attrs.comparison_type = type;
  hl_literal_t *ops[2] = {(hl_literal_t *)a, (hl_literal_t *)b}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_compare(NULL, inst, ops, &y));
  CU_ASSERT_EQUAL_FATAL(y->shape.dtype, HL_PRED);
  for (int64_t i = 0; i < hl_literal_element_count(a); i++) {
    if (((uint8_t *)y->data)[i] != want[i])
      fprintf(stderr, "\n  %s %s %s [%lld]: got %d want %d\n", hl_comparison_direction_name(dir),
              hl_comparison_type_name(type), hl_dtype_name(a->shape.dtype), (long long)i,
              ((uint8_t *)y->data)[i], want[i]);
    CU_ASSERT_EQUAL(((uint8_t *)y->data)[i], want[i]);
  }
  hl_literal_release(y);
}

static void test_compare_float(void) {
  kt_reset();
  int64_t dims[1] = {4};
  double a[4] = {1, NAN, 2, -0.0}, b[4] = {1, NAN, 3, 0.0};
  const uint8_t eq[4] = {1, 0, 0, 1}, ne[4] = {0, 1, 1, 0}, lt[4] = {0, 0, 1, 0};
  const uint8_t ge[4] = {1, 0, 0, 1}, gt[4] = {0, 0, 0, 0}, le[4] = {1, 0, 1, 1};
  hl_dtype_t types[4] = {HL_F32, HL_F64, HL_F16, HL_BF16};
  for (int t = 0; t < 4; t++) {
    hl_literal_t *la = kt_lit_f64(types[t], 1, dims, a), *lb = kt_lit_f64(types[t], 1, dims, b);
    check_cmp(HL_CMP_EQ, HL_CMPTYPE_DEFAULT, la, lb, eq);
    check_cmp(HL_CMP_NE, HL_CMPTYPE_FLOAT, la, lb, ne);
    check_cmp(HL_CMP_LT, HL_CMPTYPE_DEFAULT, la, lb, lt);
    check_cmp(HL_CMP_GE, HL_CMPTYPE_DEFAULT, la, lb, ge);
    check_cmp(HL_CMP_GT, HL_CMPTYPE_DEFAULT, la, lb, gt);
    check_cmp(HL_CMP_LE, HL_CMPTYPE_DEFAULT, la, lb, le);
    hl_literal_release(la);
    hl_literal_release(lb);
  }
}

static void test_compare_total_order(void) {
  kt_reset();
  // -NaN < -Inf < -1 < -0 < +0 < 1 < +Inf < +NaN.
  int64_t dims[6] = {6};
  uint64_t a32[6] = {0xFFC00000u, 0xFF800000u, 0x80000000u, 0x00000000u, 0x7FC00000u,
                     0x3F800000u};
  uint64_t b32[6] = {0xFF800000u, 0xBF800000u, 0x00000000u, 0x80000000u, 0x7F800000u,
                     0x3F800000u};
  const uint8_t lt[6] = {1, 1, 1, 0, 0, 0}, eq[6] = {0, 0, 0, 0, 0, 1}, ge[6] = {0, 0, 0, 1, 1, 1};
  hl_literal_t *la = kt_lit_bits(HL_F32, 1, dims, a32), *lb = kt_lit_bits(HL_F32, 1, dims, b32);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_TOTALORDER, la, lb, lt);
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_TOTALORDER, la, lb, eq);
  check_cmp(HL_CMP_GE, HL_CMPTYPE_TOTALORDER, la, lb, ge);
  hl_literal_release(la);
  hl_literal_release(lb);
  // Same pairs as f64 and bf16 bits.
  uint64_t a64[6] = {0xFFF8000000000000u, 0xFFF0000000000000u, 0x8000000000000000u, 0,
                     0x7FF8000000000000u, 0x3FF0000000000000u};
  uint64_t b64[6] = {0xFFF0000000000000u, 0xBFF0000000000000u, 0, 0x8000000000000000u,
                     0x7FF0000000000000u, 0x3FF0000000000000u};
  la = kt_lit_bits(HL_F64, 1, dims, a64);
  lb = kt_lit_bits(HL_F64, 1, dims, b64);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_TOTALORDER, la, lb, lt);
  hl_literal_release(la);
  hl_literal_release(lb);
  uint64_t a16[6] = {0xFFC0, 0xFF80, 0x8000, 0x0000, 0x7FC0, 0x3F80};
  uint64_t b16[6] = {0xFF80, 0xBF80, 0x0000, 0x8000, 0x7F80, 0x3F80};
  la = kt_lit_bits(HL_BF16, 1, dims, a16);
  lb = kt_lit_bits(HL_BF16, 1, dims, b16);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_TOTALORDER, la, lb, lt);
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_TOTALORDER, la, lb, eq);
  // NaN equals itself (same bits) under TOTALORDER, never under FLOAT.
  const uint8_t self_total[6] = {1, 1, 1, 1, 1, 1}, self_float[6] = {0, 1, 1, 1, 0, 1};
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_TOTALORDER, la, la, self_total);
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_FLOAT, la, la, self_float);
  hl_literal_release(la);
  hl_literal_release(lb);
}

// XLA's total order on the fnuz types (xla/util.h ToSignMagnitude): no -0,
// the one NaN 0x80 below every number; and on unsigned f8e8m0fnu: the bits'
// unsigned order, NaN 0xff on top. Worked on the bit patterns.
static void test_compare_total_order_f8_special(void) {
  kt_reset();
  int64_t dims[1] = {6};
  // 0x80 NaN vs 0xff (-max); NaN vs 0x81 (-denorm_min); 0x81 vs 0x00;
  // 0x00 vs 0x01; 0xff vs 0xfe (-max < -(max-1)); NaN vs NaN.
  uint64_t a[6] = {0x80, 0x80, 0x81, 0x00, 0xff, 0x80};
  uint64_t b[6] = {0xff, 0x81, 0x00, 0x01, 0xfe, 0x80};
  const uint8_t lt[6] = {1, 1, 1, 1, 1, 0}, eq[6] = {0, 0, 0, 0, 0, 1};
  hl_dtype_t fnuz[3] = {HL_F8E4M3FNUZ, HL_F8E5M2FNUZ, HL_F8E4M3B11FNUZ};
  for (int t = 0; t < 3; t++) {
    hl_literal_t *la = kt_lit_bits(fnuz[t], 1, dims, a), *lb = kt_lit_bits(fnuz[t], 1, dims, b);
    check_cmp(HL_CMP_LT, HL_CMPTYPE_TOTALORDER, la, lb, lt);
    check_cmp(HL_CMP_EQ, HL_CMPTYPE_TOTALORDER, la, lb, eq);
    hl_literal_release(la);
    hl_literal_release(lb);
  }
  // e8m0fnu: 0x80 (2) vs 0x7f (1); 0xff NaN vs 0xfe (2^127); 0x00 (2^-127)
  // vs 0x01; 0x7f vs 0x80; NaN vs 0x00; NaN vs NaN.
  uint64_t c[6] = {0x80, 0xff, 0x00, 0x7f, 0xff, 0xff};
  uint64_t d[6] = {0x7f, 0xfe, 0x01, 0x80, 0x00, 0xff};
  const uint8_t gt8[6] = {1, 1, 0, 0, 1, 0}, eq8[6] = {0, 0, 0, 0, 0, 1};
  hl_literal_t *lc = kt_lit_bits(HL_F8E8M0FNU, 1, dims, c);
  hl_literal_t *ld = kt_lit_bits(HL_F8E8M0FNU, 1, dims, d);
  check_cmp(HL_CMP_GT, HL_CMPTYPE_TOTALORDER, lc, ld, gt8);
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_TOTALORDER, lc, ld, eq8);
  hl_literal_release(lc);
  hl_literal_release(ld);
}

static void test_compare_int(void) {
  kt_reset();
  int64_t dims[1] = {3};
  int64_t a[3] = {-1, 1, 5}, b[3] = {1, 1, -3};
  const uint8_t slt[3] = {1, 0, 0}, ult[3] = {0, 0, 1};
  hl_literal_t *la = kt_lit_int(HL_S8, 1, dims, a), *lb = kt_lit_int(HL_S8, 1, dims, b);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_DEFAULT, la, lb, slt);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_UNSIGNED, la, lb, ult);  // -1 is 255
  hl_literal_release(la);
  hl_literal_release(lb);
  la = kt_lit_int(HL_U8, 1, dims, a);
  lb = kt_lit_int(HL_U8, 1, dims, b);
  check_cmp(HL_CMP_LT, HL_CMPTYPE_DEFAULT, la, lb, ult);
  hl_literal_release(la);
  hl_literal_release(lb);
  int64_t c[3] = {(int64_t)(UINT64_C(1) << 63), -1, 0}, d[3] = {1, 0, 0};
  const uint8_t ugt[3] = {1, 1, 0}, sgt[3] = {0, 0, 0}, ne[3] = {1, 1, 0};
  la = kt_lit_int(HL_U64, 1, dims, c);
  lb = kt_lit_int(HL_U64, 1, dims, d);
  check_cmp(HL_CMP_GT, HL_CMPTYPE_DEFAULT, la, lb, ugt);
  check_cmp(HL_CMP_NE, HL_CMPTYPE_DEFAULT, la, lb, ne);
  hl_literal_release(la);
  hl_literal_release(lb);
  la = kt_lit_int(HL_S64, 1, dims, c);
  lb = kt_lit_int(HL_S64, 1, dims, d);
  check_cmp(HL_CMP_GT, HL_CMPTYPE_DEFAULT, la, lb, sgt);
  hl_literal_release(la);
  hl_literal_release(lb);
  int64_t p[3] = {1, 0, 1}, q[3] = {0, 0, 1};
  const uint8_t pgt[3] = {1, 0, 0}, peq[3] = {0, 1, 1};
  la = kt_lit_int(HL_PRED, 1, dims, p);
  lb = kt_lit_int(HL_PRED, 1, dims, q);
  check_cmp(HL_CMP_GT, HL_CMPTYPE_DEFAULT, la, lb, pgt);
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_DEFAULT, la, lb, peq);
  hl_literal_release(la);
  hl_literal_release(lb);
}

static void test_compare_complex_and_errors(void) {
  kt_reset();
  int64_t dims[1] = {2};
  hl_shape_t s = hl_shape_array(HL_C64, 1, dims);
  hl_literal_t *a, *b;
  HL_ASSERT_OK(hl_literal_create(&s, &a));
  HL_ASSERT_OK(hl_literal_create(&s, &b));
  float av[4] = {1, 2, 3, 4}, bv[4] = {1, 2, 3, 5};
  memcpy(a->data, av, sizeof(av));
  memcpy(b->data, bv, sizeof(bv));
  const uint8_t eq[2] = {1, 0}, ne[2] = {0, 1};
  check_cmp(HL_CMP_EQ, HL_CMPTYPE_DEFAULT, a, b, eq);
  check_cmp(HL_CMP_NE, HL_CMPTYPE_DEFAULT, a, b, ne);
  hl_instruction_t *lt = kt_inst(HL_OP_COMPARE, HL_PRED, 1, dims);
  lt->attrs.comparison_direction = HL_CMP_LT;
  hl_literal_t *ops[2] = {a, b}, *y = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_compare(NULL, lt, ops, &y), "only EQ and NE");
  hl_instruction_t *nodir = kt_inst(HL_OP_COMPARE, HL_PRED, 1, dims);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_compare(NULL, nodir, ops, &y), "direction");
  int64_t v[2] = {1, 2};
  hl_literal_t *i = kt_lit_int(HL_S32, 1, dims, v), *iops[2] = {i, i};
  hl_instruction_t *tot = kt_inst(HL_OP_COMPARE, HL_PRED, 1, dims);
  tot->attrs.comparison_direction = HL_CMP_LT;
  tot->attrs.comparison_type = HL_CMPTYPE_TOTALORDER;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_compare(NULL, tot, iops, &y), "TOTALORDER");
  hl_literal_t *mixed[2] = {i, a};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_compare(NULL, nodir, mixed, &y), "do not match");
  CU_ASSERT_PTR_NULL(y);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(i);
}

static void test_select(void) {
  kt_reset();
  int64_t dims[1] = {4};
  int64_t p[4] = {1, 0, 0, 1}, t[4] = {1, 2, 3, 4}, f[4] = {-1, -2, -3, -4};
  hl_literal_t *lp = kt_lit_int(HL_PRED, 1, dims, p);
  hl_dtype_t types[4] = {HL_S8, HL_S16, HL_S32, HL_S64};
  for (int k = 0; k < 4; k++) {
    hl_literal_t *lt = kt_lit_int(types[k], 1, dims, t), *lf = kt_lit_int(types[k], 1, dims, f);
    hl_instruction_t *inst = kt_inst(HL_OP_SELECT, types[k], 1, dims);
    hl_literal_t *ops[3] = {lp, lt, lf}, *y = NULL;
    HL_ASSERT_OK(hl_kernel_select(NULL, inst, ops, &y));
    int64_t want[4] = {1, -2, -3, 4};
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), want[i]);
    hl_literal_release(y);
    hl_literal_release(lt);
    hl_literal_release(lf);
  }
  // c128 (16-byte elements) and a scalar pred, which returns the chosen operand.
  double tv[4] = {1, 2, 3, 4}, fv[4] = {5, 6, 7, 8};
  hl_literal_t *ct = kt_lit_f64(HL_C128, 1, dims, tv), *cf = kt_lit_f64(HL_C128, 1, dims, fv);
  hl_instruction_t *cs = kt_inst(HL_OP_SELECT, HL_C128, 1, dims);
  hl_literal_t *cops[3] = {lp, ct, cf}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_select(NULL, cs, cops, &y));
  double want[4] = {1, 6, 7, 4};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(hl_literal_get_f64(y, i), want[i]);
  hl_literal_release(y);
  int64_t zero = 0;
  hl_literal_t *sp = kt_lit_int(HL_PRED, 0, NULL, &zero);
  hl_literal_t *sops[3] = {sp, ct, cf};
  HL_ASSERT_OK(hl_kernel_select(NULL, cs, sops, &y));
  CU_ASSERT_PTR_EQUAL(y, cf);
  hl_literal_release(y);
  // Mismatched pred dimensions.
  int64_t two[1] = {2};
  hl_literal_t *p2 = kt_lit_int(HL_PRED, 1, two, p), *bad[3] = {p2, ct, cf};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_select(NULL, cs, bad, &y), "select");
  hl_literal_release(p2);
  hl_literal_release(sp);
  hl_literal_release(ct);
  hl_literal_release(cf);
  hl_literal_release(lp);
}

static void test_clamp(void) {
  kt_reset();
  int64_t dims[1] = {5};
  double x[5] = {-1, 0.5, 2, NAN, -0.0}, lo = 0, hi = 1;
  double want[5] = {0, 0.5, 1, NAN, 0.0};  // maximum(-0, +0) = +0
  hl_literal_t *lx = kt_lit_f64(HL_F32, 1, dims, x);
  hl_literal_t *llo = kt_lit_f64(HL_F32, 0, NULL, &lo), *lhi = kt_lit_f64(HL_F32, 0, NULL, &hi);
  hl_instruction_t *inst = kt_inst(HL_OP_CLAMP, HL_F32, 1, dims);
  hl_literal_t *ops[3] = {llo, lx, lhi}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_clamp(NULL, inst, ops, &y));
  for (int i = 0; i < 5; i++) CU_ASSERT(kt_same(hl_literal_get_f64(y, i), want[i]));
  CU_ASSERT(!signbit(hl_literal_get_f64(y, 4)));
  hl_literal_release(y);
  hl_literal_release(lx);
  hl_literal_release(llo);
  hl_literal_release(lhi);
  // Array bounds, signed and unsigned.
  int64_t xi[5] = {-5, 0, 5, 100, -100}, loi[5] = {-1, 1, 0, 0, -200}, hii[5] = {1, 2, 3, 50, -150};
  int64_t wi[5] = {-1, 1, 3, 50, -150};
  hl_literal_t *a = kt_lit_int(HL_S32, 1, dims, loi), *b = kt_lit_int(HL_S32, 1, dims, xi);
  hl_literal_t *c = kt_lit_int(HL_S32, 1, dims, hii);
  hl_instruction_t *ci = kt_inst(HL_OP_CLAMP, HL_S32, 1, dims);
  hl_literal_t *iops[3] = {a, b, c};
  HL_ASSERT_OK(hl_kernel_clamp(NULL, ci, iops, &y));
  for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), wi[i]);
  hl_literal_release(y);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(c);
  int64_t xu[3] = {200, 5, 50}, lu = 10, hu = 100, wu[3] = {100, 10, 50};
  int64_t three[1] = {3};
  a = kt_lit_int(HL_U8, 0, NULL, &lu);
  b = kt_lit_int(HL_U8, 1, three, xu);
  c = kt_lit_int(HL_U8, 0, NULL, &hu);
  hl_instruction_t *cu = kt_inst(HL_OP_CLAMP, HL_U8, 1, three);
  hl_literal_t *uops[3] = {a, b, c};
  HL_ASSERT_OK(hl_kernel_clamp(NULL, cu, uops, &y));
  for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), wu[i]);
  hl_literal_release(y);
  hl_literal_t *bad[3] = {b, b, c};  // min of the wrong dimensions
  hl_instruction_t *cu2 = kt_inst(HL_OP_CLAMP, HL_U8, 1, dims);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_clamp(NULL, cu2, bad, &y), "clamp");
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(c);
}

static CU_TestInfo tests[] = {
    {"compare_float", test_compare_float},
    {"compare_total_order", test_compare_total_order},
    {"compare_total_order_f8_special", test_compare_total_order_f8_special},
    {"compare_int", test_compare_int},
    {"compare_complex_and_errors", test_compare_complex_and_errors},
    {"select", test_select},
    {"clamp", test_clamp},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("compare_select", tests)
