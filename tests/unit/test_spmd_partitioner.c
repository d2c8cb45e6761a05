// The partitioner's pieces that integration tests see only through results:
// reshape dimension groups, the dot plan's choice, and the refusals.
// Expected plans are worked out by hand from the shardings.
// hl-test-libs: hl_spmd hl_text hl_verifier hl_ir hl_base
#include <string.h>

#include "runtime/spmd/partitioner.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/spmd_test_util.h"
#include "tests/unit/test_util.h"

static void expect_map(int rin, const int64_t *in, int rout, const int64_t *out, const int *want) {
  hl_shape_t a = hl_shape_array(HL_F32, rin, in), b = hl_shape_array(HL_F32, rout, out);
  int map[HL_MAX_RANK];
  spmd_reshape_map(&a, &b, map);
  for (int j = 0; j < rout; j++) CU_ASSERT_EQUAL(map[j], want[j]);
}

static void test_reshape_groups(void) {
  // [8,12] -> [8,3,4]: 8 <-> 8; 12 <-> 3 (the group {12} = {3,4}, major dims).
  expect_map(2, (int64_t[]){8, 12}, 3, (int64_t[]){8, 3, 4}, (int[]){0, 1, -1});
  // [8,3,4] -> [2,4,1,12]: {8} = {2,4}: 8 <-> 2; {3,4} = {1,12}: 3 <-> 12 (the 1 skipped).
  expect_map(3, (int64_t[]){8, 3, 4}, 4, (int64_t[]){2, 4, 1, 12}, (int[]){0, -1, -1, 1});
  // [1,6] -> [6]: the leading 1 is skipped.
  expect_map(2, (int64_t[]){1, 6}, 1, (int64_t[]){6}, (int[]){1});
  hl_shape_t a = hl_shape_array(HL_F32, 1, (int64_t[]){12}), b = hl_shape_array(HL_F32, 2, (int64_t[]){3, 4});
  CU_ASSERT_TRUE(spmd_reshape_split_ok(&a, &b, 0, 0, 3));   // 12 and 3 both split 3 ways
  CU_ASSERT_FALSE(spmd_reshape_split_ok(&a, &b, 0, 0, 2));  // 3 rows cannot split 2 ways
}

static void test_contracting_split_is_one_all_reduce(void) {
  // Both operands split along the contracting dim the same way: local dots
  // and one all-reduce of the [4,6] result, nothing gathered.
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  a = f32[4,8] parameter(0), sharding={devices=[1,2]<=[2]}\n"
      "  b = f32[8,6] parameter(1), sharding={devices=[2,1]<=[2]}\n"
      "  ROOT d = f32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 2, &r));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-reduce("), 1);
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 0);
  CU_ASSERT_EQUAL(r.bytes_per_partition, 4 * 6 * 4);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "a = f32[4,4] parameter(0)"));  // local [4,4] x [4,6] dots
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "= f32[4,6] dot(a, b)"));
  hl_spmd_result_deinit(&r);
}

static void test_batch_split_moves_nothing(void) {
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  a = f32[4,8,6] parameter(0), sharding={devices=[4,1,1]<=[4]}\n"
      "  b = f32[4,6,2] parameter(1), sharding={devices=[4,1,1]<=[4]}\n"
      "  ROOT d = f32[4,8,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
      "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 4, &r));
  CU_ASSERT_EQUAL(r.bytes_per_partition, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "= f32[1,8,2] dot(a, b)"));
  hl_spmd_result_deinit(&r);
}

static void test_refusals(void) {
  hl_spmd_result_t r;
  HL_ASSERT_ERROR_CONTAINS(
      spmd_test_partition("HloModule m\n\nENTRY e {\n"
                          "  ROOT a = f32[4] parameter(0), sharding={manual}\n}\n",
                          2, &r),
      "manual sharding");
  HL_ASSERT_ERROR_CONTAINS(
      spmd_test_partition("HloModule m\n\nENTRY e {\n"
                          "  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}\n"
                          "  ROOT p = u32[] partition-id()\n}\n",
                          2, &r),
      "partition-id in a global program");
}

static CU_TestInfo tests[] = {
    {"reshape_groups", test_reshape_groups},
    {"contracting_split_is_one_all_reduce", test_contracting_split_is_one_all_reduce},
    {"batch_split_moves_nothing", test_batch_split_moves_nothing},
    {"refusals", test_refusals},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("spmd_partitioner", tests)
