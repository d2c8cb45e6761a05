// Result comparison for --expect (runtime/debug/result_check.c): tolerances
// and ulps worked out by hand (f32 ulp of 1.0 is 2^-23, of 8.0 is 2^-20;
// bf16 ulp of 1.0 is 2^-7).
// hl-test-libs: hl_debug hl_collectives hl_text hl_ir hl_base
#include <math.h>
#include <string.h>

#include "runtime/debug/result_check.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static hl_literal_t *lit(const char *shape, const char *value) {
  hl_shape_t s;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(hl_parse_shape(shape, &s));
  HL_ASSERT_OK(hl_parse_literal(value, &s, &l));
  return l;
}

static hl_result_check_stats_t check(hl_literal_t *got, hl_literal_t *want, hl_tolerance_t tol) {
  hl_result_check_stats_t s;
  HL_ASSERT_OK(hl_result_check(got, &want, 1, &tol, &s));
  hl_literal_release(got);
  hl_literal_release(want);
  return s;
}

static void test_exact_and_worst(void) {
  hl_result_check_stats_t s = check(lit("f32[2,2]", "{{1, 2}, {3, 4}}"),
                                    lit("f32[2,2]", "{{1, 2.5}, {3, 5}}"), (hl_tolerance_t){0});
  CU_ASSERT_EQUAL(s.elements, 4);
  CU_ASSERT_EQUAL(s.mismatches, 2);
  CU_ASSERT_EQUAL(s.worst_index, 3);  // |4 - 5| > |2 - 2.5|
  CU_ASSERT_EQUAL(s.worst_got, 4);
  CU_ASSERT_EQUAL(s.worst_want, 5);
  char index[32];
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape("f32[2,2]", &shape));
  hl_result_check_format_index(&shape, 3, index, sizeof(index));
  CU_ASSERT_STRING_EQUAL(index, "[1,1]");
}

static void test_rtol_atol(void) {
  // |10.5 - 10| = 0.5 <= 0.1 + 0.05 * 10 = 0.6; |1.2 - 1| = 0.2 > 0.1 + 0.05.
  hl_tolerance_t tol = {.rtol = 0.05, .atol = 0.1};
  hl_result_check_stats_t s = check(lit("f64[2]", "{10.5, 1.2}"), lit("f64[2]", "{10, 1}"), tol);
  CU_ASSERT_EQUAL(s.mismatches, 1);
  CU_ASSERT_EQUAL(s.worst_index, 1);
}

static void test_ulp(void) {
  // 8 + 2^-20 is one f32 ulp above 8; 1 + 2^-22 is two ulps above 1.
  char got[128];
  snprintf(got, sizeof(got), "{%.17g, %.17g}", 8.0 + ldexp(1, -20), 1.0 + ldexp(1, -22));
  hl_result_check_stats_t s =
      check(lit("f32[2]", got), lit("f32[2]", "{8, 1}"), (hl_tolerance_t){.ulp = 1});
  CU_ASSERT_EQUAL(s.mismatches, 1);
  CU_ASSERT_EQUAL(s.worst_index, 1);
  s = check(lit("bf16[1]", "{1.0078125}"), lit("bf16[1]", "{1}"), (hl_tolerance_t){.ulp = 1});
  CU_ASSERT_EQUAL(s.mismatches, 0);  // 1 + 2^-7: one bf16 ulp
}

static void test_nan_inf_int_complex(void) {
  hl_result_check_stats_t s =
      check(lit("f32[3]", "{nan, inf, 1}"), lit("f32[3]", "{nan, inf, nan}"), (hl_tolerance_t){0});
  CU_ASSERT_EQUAL(s.mismatches, 1);  // NaN matches NaN, inf inf; 1 is not NaN
  CU_ASSERT_TRUE(isinf(s.worst_error));
  s = check(lit("s32[2]", "{3, -4}"), lit("s32[2]", "{3, -5}"), (hl_tolerance_t){.atol = 10});
  CU_ASSERT_EQUAL(s.mismatches, 1);  // integers are exact whatever the tolerance
  s = check(lit("c64[1]", "{(1, 2)}"), lit("c64[1]", "{(1, 2.5)}"), (hl_tolerance_t){0});
  CU_ASSERT_EQUAL(s.mismatches, 1);
  CU_ASSERT_EQUAL(s.worst_error, 0.5);
}

static void test_shape_mismatch(void) {
  hl_literal_t *got = lit("f32[2]", "{1, 2}"), *want = lit("f32[3]", "{1, 2, 3}");
  hl_tolerance_t tol = {0};
  hl_result_check_stats_t s;
  HL_ASSERT_ERROR_CONTAINS(hl_result_check(got, &want, 1, &tol, &s),
                           "result 0 is f32[2], the expectation f32[3]");
  hl_literal_release(got);
  hl_literal_release(want);
}

static CU_TestInfo tests[] = {
    {"exact_and_worst", test_exact_and_worst},
    {"rtol_atol", test_rtol_atol},
    {"ulp", test_ulp},
    {"nan_inf_int_complex", test_nan_inf_int_complex},
    {"shape_mismatch", test_shape_mismatch},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("result_check", tests)
