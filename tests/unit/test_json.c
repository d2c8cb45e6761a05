// runtime/custom_calls/json.c: the JSON of XLA's GPU backend configs.
#include "runtime/custom_calls/json.h"
#include "tests/unit/test_util.h"

static void test_gemm_config(void) {
  hl_json_t v;
  HL_ASSERT_OK(hl_json_parse(
      "{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],\"gemm_backend_config\":"
      "{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":-2.5e-1,\"dot_dimension_numbers\":"
      "{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_batch_dimensions\":[]},"
      "\"epilogue\":\"BIAS_RELU\",\"grad_x\":false, \"x\" : null}}", &v));
  const hl_json_t *g = hl_json_get(&v, "gemm_backend_config");
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  double d;
  CU_ASSERT_TRUE(hl_json_number(hl_json_get(g, "beta"), &d));
  CU_ASSERT_EQUAL(d, -0.25);
  const hl_json_t *dn = hl_json_get(g, "dot_dimension_numbers");
  const hl_json_t *lc = hl_json_get(dn, "lhs_contracting_dimensions");
  CU_ASSERT_EQUAL(lc->count, 1);
  CU_ASSERT_TRUE(hl_json_number(&lc->items[0], &d));  // int64 printed as a string
  CU_ASSERT_EQUAL(d, 1);
  CU_ASSERT_EQUAL(hl_json_get(dn, "rhs_batch_dimensions")->count, 0);
  CU_ASSERT_STRING_EQUAL(hl_json_get(g, "epilogue")->string, "BIAS_RELU");
  CU_ASSERT_EQUAL(hl_json_get(g, "grad_x")->kind, HL_JSON_BOOL);
  CU_ASSERT_EQUAL(hl_json_get(g, "x")->kind, HL_JSON_NULL);
  CU_ASSERT_PTR_NULL(hl_json_get(g, "missing"));
  CU_ASSERT_FALSE(hl_json_number(hl_json_get(g, "epilogue"), &d));
  hl_json_free(&v);
}

static void test_strings_and_errors(void) {
  hl_json_t v;
  HL_ASSERT_OK(hl_json_parse("[\"a\\\"b\\\\c\\n\", \"\\u0041\"]", &v));
  CU_ASSERT_STRING_EQUAL(v.items[0].string, "a\"b\\c\n");
  CU_ASSERT_STRING_EQUAL(v.items[1].string, "A");
  hl_json_free(&v);
  HL_ASSERT_ERROR_CONTAINS(hl_json_parse("{\"a\" 1}", &v), "expected ':'");
  HL_ASSERT_ERROR_CONTAINS(hl_json_parse("[1, 2", &v), "expected ',' or ']'");
  HL_ASSERT_ERROR_CONTAINS(hl_json_parse("{} x", &v), "the end of the text");
  HL_ASSERT_ERROR_CONTAINS(hl_json_parse("\"open", &v), "closing");
}

static CU_TestInfo tests[] = {
    {"gemm_config", test_gemm_config},
    {"strings_and_errors", test_strings_and_errors},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("json", tests)
