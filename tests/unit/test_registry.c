// runtime/custom_calls/registry.c: one lookup over the built-in families and
// run-time registrations.
#include "runtime/custom_calls/registry.h"
#include "tests/unit/test_util.h"

static hl_status_t nothing(const hl_custom_call_t *call, hl_literal_t **out) {
  (void)call;
  *out = NULL;
  return NULL;
}

static void test_lookup(void) {
  const char *known[] = {"Sharding", "TopK", "cu_threefry2x32", "lapack_sgetrf_ffi",
                         "lapack_zheevd_ffi", "lapack_ctrsm_ffi", "blas_dtrsm", "__cublas$gemm",
                         "__cublas$lt$matmul", "__cudnn$convForward", "cusolver_potrf_ffi",
                         "cu_lu_pivots_to_permutation"};
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    const hl_custom_call_target_t *t = hl_custom_call_lookup(known[i]);
    CU_ASSERT_PTR_NOT_NULL(t);
    if (t) CU_ASSERT_STRING_EQUAL(t->name, known[i]);
  }
  CU_ASSERT_PTR_NULL(hl_custom_call_lookup("lapack_sgetrs_ffi"));
  CU_ASSERT_PTR_NULL(hl_custom_call_lookup(""));
  CU_ASSERT_PTR_NULL(hl_custom_call_lookup(NULL));
}

static void test_register(void) {
  static int data;
  HL_ASSERT_OK(hl_custom_call_register("test_registry_target", nothing, &data));
  const hl_custom_call_target_t *t = hl_custom_call_lookup("test_registry_target");
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_PTR_EQUAL(t->data, &data);
  HL_ASSERT_ERROR_CONTAINS(hl_custom_call_register("test_registry_target", nothing, NULL),
                           "already registered");
  HL_ASSERT_ERROR_CONTAINS(hl_custom_call_register("TopK", nothing, NULL), "already registered");
}

static CU_TestInfo tests[] = {
    {"lookup", test_lookup},
    {"register", test_register},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("registry", tests)
