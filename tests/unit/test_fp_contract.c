// hl-test-libs: hl_base
// The tree is compiled without multiply-add contraction (CMakeLists.txt:
// -ffp-contract=off): a product is rounded before its add, as the program's
// separate ops say, on every ISA. gcc's default in GNU C mode contracts
// wherever the target has FMA (always on aarch64; x86-64 with -mfma), and
// batch-norm in f64 gave other bits on aarch64 than on x86-64 (docs/AARCH64.md).
// These expressions are the kernels' shapes: a*b+c, a*b-c, c-a*b over
// volatile operands (no constant folding); with contraction each would be
// one fused operation and differ from the rounded-product result below.
#include <CUnit/CUnit.h>
#include <math.h>

#include "tests/unit/test_util.h"

static void test_double_products_round_before_add(void) {
  // a*b = 1 - 2^-60 exactly: rounds to 1.0 in double; fused, a*b-1 = -2^-60.
  volatile double a = 1.0 + 0x1p-30, b = 1.0 - 0x1p-30, c = 1.0;
  double x = a, y = b, z = c;
  CU_ASSERT_EQUAL(x * y - z, 0.0);
  CU_ASSERT_EQUAL(-(x * y) + z, 0.0);
  CU_ASSERT_EQUAL(z - x * y, 0.0);
  // The fused value differs: the test could tell the two apart.
  CU_ASSERT_EQUAL(fma(x, y, -z), -0x1p-60);
}

static void test_float_products_round_before_add(void) {
  // a*b = 1 - 2^-26: rounds to 1.0f; fused, a*b-1 = -2^-26.
  volatile float a = 1.0f + 0x1p-13f, b = 1.0f - 0x1p-13f, c = 1.0f;
  float x = a, y = b, z = c;
  CU_ASSERT_EQUAL(x * y - z, 0.0f);
  CU_ASSERT_EQUAL(z - x * y, 0.0f);
  CU_ASSERT_EQUAL(fmaf(x, y, -z), -0x1p-26f);
}

// A loop as the kernels write them (scale and shift per element): the
// vectorizer must not fuse either.
static void test_loop_products_round_before_add(void) {
  enum { N = 37 };
  volatile double s = 1.0 + 0x1p-30;
  double x[N], y[N], scale = s, shift = -1.0;
  for (int i = 0; i < N; i++) x[i] = 1.0 - 0x1p-30;
  for (int i = 0; i < N; i++) y[i] = x[i] * scale + shift;
  int fused = 0;
  for (int i = 0; i < N; i++) fused += y[i] != 0.0;
  CU_ASSERT_EQUAL(fused, 0);
}

static CU_TestInfo tests[] = {
    {"double_products_round_before_add", test_double_products_round_before_add},
    {"float_products_round_before_add", test_float_products_round_before_add},
    {"loop_products_round_before_add", test_loop_products_round_before_add},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fp_contract", tests)
