// api/buffers.c: the column-major reordering against index arithmetic, the
// shape checks' messages, and wrapping caller memory as a literal.
// hl-test-libs: hl_api
#include "api/buffers.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_util.h"

// Element (i0, ..., ik) sits at the row-major or the column-major offset.
static int64_t offset(const int64_t *idx, const int64_t *dims, int rank, bool column_major) {
  int64_t off = 0;
  if (column_major)
    for (int i = rank - 1; i >= 0; i--) off = off * dims[i] + idx[i];
  else
    for (int i = 0; i < rank; i++) off = off * dims[i] + idx[i];
  return off;
}

static void check_reorder(int rank, const int64_t *dims, size_t size) {
  int64_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];
  uint8_t *col = calloc((size_t)total, size), *row = calloc((size_t)total, size),
          *back = calloc((size_t)total, size);
  for (int64_t e = 0; e < total * (int64_t)size; e++) col[e] = (uint8_t)(e * 7 + 3);
  hl_api_reorder(col, row, rank, dims, size, true);
  int64_t idx[HL_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    // idx = the n-th row-major index.
    for (int64_t rest = n, i = rank - 1; i >= 0; i--) {
      idx[i] = rest % dims[i];
      rest /= dims[i];
    }
    CU_ASSERT_EQUAL(memcmp(row + offset(idx, dims, rank, false) * size,
                           col + offset(idx, dims, rank, true) * size, size), 0);
  }
  hl_api_reorder(row, back, rank, dims, size, false);
  CU_ASSERT_EQUAL(memcmp(back, col, (size_t)total * size), 0);
  free(col);
  free(row);
  free(back);
}

static void test_reorder(void) {
  const int64_t d2[] = {3, 5}, d3[] = {2, 3, 4}, d4[] = {2, 1, 3, 2}, d1[] = {6};
  size_t sizes[] = {1, 2, 4, 8, 16};
  for (int s = 0; s < 5; s++) {
    check_reorder(2, d2, sizes[s]);
    check_reorder(3, d3, sizes[s]);
    check_reorder(4, d4, sizes[s]);
    check_reorder(1, d1, sizes[s]);
  }
}

static void test_check_buffer(void) {
  const int64_t dims[] = {4, 3}, other[] = {3, 4};
  hl_shape_t want = hl_shape_array(HL_F32, 2, dims);
  float data[12];
  hlo_buffer_t b = {HLO_F32, 2, dims, data, HLO_ROW_MAJOR};
  HL_ASSERT_OK(hl_api_check_buffer(&b, &want, "argument 0"));
  b.order = HLO_COLUMN_MAJOR;
  HL_ASSERT_OK(hl_api_check_buffer(&b, &want, "argument 0"));
  b.dims = other;
  HL_ASSERT_ERROR_CONTAINS(hl_api_check_buffer(&b, &want, "argument 0"),
                           "argument 0 is f32[3,4], but the program's is f32[4,3]");
  b.dims = dims;
  b.dtype = HLO_F64;
  HL_ASSERT_ERROR_CONTAINS(hl_api_check_buffer(&b, &want, "result 1"),
                           "result 1 is f64[4,3], but the program's is f32[4,3]");
  b.dtype = HLO_F32;
  b.rank = 99;
  HL_ASSERT_ERROR_CONTAINS(hl_api_check_buffer(&b, &want, "argument 2"),
                           "argument 2 is rank 99, but the program's is f32[4,3]");
  b.rank = 2;
  b.dims = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_api_check_buffer(&b, &want, "argument 0"), "argument 0 is");
  b.dims = dims;
  b.order = (hlo_order_t)7;
  HL_ASSERT_ERROR_CONTAINS(hl_api_check_buffer(&b, &want, "argument 0"),
                           "order 7 is neither HLO_ROW_MAJOR nor HLO_COLUMN_MAJOR");
}

static void test_wrap(void) {
  const int64_t dims[] = {2, 2};
  hl_shape_t want = hl_shape_array(HL_S32, 2, dims);
  int32_t data[4] = {1, 2, 3, 4};
  hl_literal_t lit;
  hl_api_wrap(&want, data, &lit);
  CU_ASSERT_EQUAL(lit.refcount, 1);
  CU_ASSERT_PTR_EQUAL(lit.data, data);
  CU_ASSERT_EQUAL(lit.byte_size, sizeof(data));
  CU_ASSERT_EQUAL(hl_literal_get_s64(&lit, 3), 4);
}

static void test_dtypes(void) {
  CU_ASSERT_TRUE(hl_api_dtype_supported(HL_BF16));
  CU_ASSERT_TRUE(hl_api_dtype_supported(HL_C128));
  CU_ASSERT_FALSE(hl_api_dtype_supported(HL_S4));
  CU_ASSERT_FALSE(hl_api_dtype_supported(HL_TUPLE));
  CU_ASSERT_FALSE(hl_api_dtype_supported(HL_TOKEN));
}

static CU_TestInfo tests[] = {
    {"reorder", test_reorder},
    {"check_buffer", test_check_buffer},
    {"wrap", test_wrap},
    {"dtypes", test_dtypes},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("api_buffers", tests)
