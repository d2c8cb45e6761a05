// The collective kernels (runtime/kernels/collectives.c) in one process
// (1x1 grid, no communicator): every group is the process itself, so the
// spec's semantics reduce to hand-worked values (all-reduce of one value is
// the value, a permute without a {0,0} pair gives zeros, ...). Multi-process
// behaviour is checked by the integration tests (test_collectives.py,
// test_collectives_backend.py).
// hl-test-libs: hl_exec hl_text hl_ir hl_base
#include <string.h>

#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

// Runs a module whose entry is `body` on a R x 1 grid without communicator;
// *out gets the result.
static hl_status_t run(const char *body, int64_t replicas, hl_literal_t **out) {
  char text[4096];
  snprintf(text, sizeof(text),
           "HloModule m\n"
           "sum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
           "  ROOT s = s32[] add(a, b)\n}\n"
           "ENTRY e {\n  c = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n%s\n}\n",
           body);
  hl_module_t *m = NULL;
  *out = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "t.hlo", &m);
  hl_exec_options_t o = {.num_replicas = replicas, .num_partitions = 1};
  if (!st) st = hl_execute(m, &o, NULL, 0, out);
  hl_module_destroy(m);
  return st;
}

static void expect_s32(const char *body, const int32_t *want, int n) {
  hl_literal_t *out;
  HL_ASSERT_OK(run(body, 1, &out));
  CU_ASSERT_EQUAL_FATAL(hl_literal_element_count(out), n);
  for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(((int32_t *)out->data)[i], want[i]);
  hl_literal_release(out);
}

static const int32_t kC[6] = {1, 2, 3, 4, 5, 6};
static const int32_t kZero[6] = {0};

static void test_single_process_identities(void) {
  expect_s32("  ROOT r = s32[2,3] all-reduce(c), replica_groups={}, to_apply=sum", kC, 6);
  expect_s32("  ROOT r = s32[2,3] all-gather(c), replica_groups={{0}}, dimensions={1}", kC, 6);
  expect_s32("  ROOT r = s32[2,3] reduce-scatter(c), replica_groups={}, dimensions={0}, "
             "to_apply=sum", kC, 6);
  expect_s32("  ROOT r = s32[2,3] all-to-all(c), replica_groups={{0}}, dimensions={1}", kC, 6);
  expect_s32("  ROOT r = s32[2,3] collective-broadcast(c), replica_groups={{0}}", kC, 6);
  expect_s32("  ROOT r = s32[2,3] collective-permute(c), source_target_pairs={{0,0}}", kC, 6);
  // No pair targets process 0: zeros (spec collective_permute).
  expect_s32("  ROOT r = s32[2,3] collective-permute(c), source_target_pairs={}", kZero, 6);
}

static void test_async_pairs(void) {
  expect_s32("  s = s32[2,3] all-reduce-start(c), replica_groups={}, to_apply=sum\n"
             "  ROOT d = s32[2,3] all-reduce-done(s)", kC, 6);
  expect_s32("  s = (s32[2,3], s32[2,3]) all-gather-start(c), replica_groups={}, "
             "dimensions={0}\n  ROOT d = s32[2,3] all-gather-done(s)", kC, 6);
  expect_s32("  s = (s32[2,3], s32[2,3], u32[], u32[]) collective-permute-start(c), "
             "source_target_pairs={{0,0}}\n  ROOT d = s32[2,3] collective-permute-done(s)",
             kC, 6);
}

// ragged: input rows {10, 20, 30}, send 2 rows from row 1 to ourselves,
// placed at output row 1 of output {7, 7, 7, 7}: {7, 20, 30, 7}.
static void test_ragged_single(void) {
  hl_literal_t *out;
  HL_ASSERT_OK(run("  in = s32[3] constant({10, 20, 30})\n"
                   "  o = s32[4] constant({7, 7, 7, 7})\n"
                   "  io = s64[1] constant({1})\n  ss = s64[1] constant({2})\n"
                   "  oo = s64[1] constant({1})\n  rs = s64[1] constant({2})\n"
                   "  ROOT r = s32[4] ragged-all-to-all(in, o, io, ss, oo, rs), "
                   "replica_groups={{0}}",
                   1, &out));
  const int32_t want[4] = {7, 20, 30, 7};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(((int32_t *)out->data)[i], want[i]);
  hl_literal_release(out);
}

// Combined (in-place) permute without communicator, hand-worked on
// c = {{1,2,3},{4,5,6}} into o = 9s (s32[3,3]): with pair {0,0} the 1x2
// slice at (1,1) = {5,6} lands at output (2, clamp(5, 0, 1) = 1); without
// a source nothing changes (no zeros: an update in place).
static void test_combined_permute(void) {
  const char *body =
      "  o = s32[3,3] constant({{9, 9, 9}, {9, 9, 9}, {9, 9, 9}})\n"
      "  c1 = s32[] constant(1)\n  c2 = s32[] constant(2)\n  c5 = s32[] constant(5)\n"
      "  ii = (s32[], s32[]) tuple(c1, c1)\n  oi = (s32[], s32[]) tuple(c2, c5)\n"
      "  ROOT r = s32[3,3] collective-permute(c, o, ii, oi), source_target_pairs=%s, "
      "slice_sizes={{1,2}}";
  char text[1024];
  snprintf(text, sizeof(text), body, "{{0,0}}");
  const int32_t moved[9] = {9, 9, 9, 9, 9, 9, 9, 5, 6};
  expect_s32(text, moved, 9);
  snprintf(text, sizeof(text), body, "{}");
  const int32_t kept[9] = {9, 9, 9, 9, 9, 9, 9, 9, 9};
  expect_s32(text, kept, 9);
  // Variadic: two operands -> a tuple, each permuted ({0,0}: itself).
  hl_literal_t *out;
  HL_ASSERT_OK(run("  d = s32[2] constant({7, 8})\n"
                   "  ROOT r = (s32[2,3], s32[2]) collective-permute(c, d), "
                   "source_target_pairs={{0,0}}",
                   1, &out));
  CU_ASSERT_EQUAL_FATAL(out->shape.dtype, HL_TUPLE);
  CU_ASSERT_EQUAL(((int32_t *)out->elements[0]->data)[5], 6);
  CU_ASSERT_EQUAL(((int32_t *)out->elements[1]->data)[1], 8);
  hl_literal_release(out);
  // slice_sizes larger than the input is an error naming the field.
  HL_ASSERT_ERROR_CONTAINS(
      run("  o = s32[3,3] constant({{9, 9, 9}, {9, 9, 9}, {9, 9, 9}})\n"
          "  c0 = s32[] constant(0)\n  t = (s32[], s32[]) tuple(c0, c0)\n"
          "  ROOT r = s32[3,3] collective-permute(c, o, t, t), source_target_pairs={{0,0}}, "
          "slice_sizes={{3,3}}",
          1, &out),
      "slice_sizes entry 0");
}

// ragged with 2-d offsets (one peer, two updates): rows {10,20,30}; update 0
// sends row 0 to output row 3, update 1 rows 1-2 to output rows 0-1.
static void test_ragged_2d_single(void) {
  hl_literal_t *out;
  HL_ASSERT_OK(run("  in = s32[3] constant({10, 20, 30})\n"
                   "  o = s32[4] constant({7, 7, 7, 7})\n"
                   "  io = s32[1,2] constant({{0, 1}})\n  ss = s32[1,2] constant({{1, 2}})\n"
                   "  oo = s32[1,2] constant({{3, 0}})\n  rs = s32[1,2] constant({{1, 2}})\n"
                   "  ROOT r = s32[4] ragged-all-to-all(in, o, io, ss, oo, rs), "
                   "replica_groups={{0}}",
                   1, &out));
  const int32_t want[4] = {20, 30, 7, 10};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(((int32_t *)out->data)[i], want[i]);
  hl_literal_release(out);
}

static void test_errors(void) {
  hl_literal_t *out;
  HL_ASSERT_ERROR_CONTAINS(run("  ROOT r = s32[2,3] all-reduce(c), replica_groups={}, "
                               "to_apply=sum", 2, &out),
                           "needs a communicator");
  HL_ASSERT_ERROR_CONTAINS(run("  ROOT r = s32[2,6] all-gather(c), replica_groups={}, "
                               "dimensions={1}", 1, &out),
                           "gathered over 1");
  HL_ASSERT_ERROR_CONTAINS(run("  in = s32[3] constant({10, 20, 30})\n"
                               "  o = s32[4] constant({7, 7, 7, 7})\n"
                               "  io = s64[1] constant({2})\n  ss = s64[1] constant({2})\n"
                               "  oo = s64[1] constant({0})\n  rs = s64[1] constant({2})\n"
                               "  ROOT r = s32[4] ragged-all-to-all(in, o, io, ss, oo, rs), "
                               "replica_groups={{0}}", 1, &out),
                           "outside the input");
}

static CU_TestInfo tests[] = {
    {"single-process identities", test_single_process_identities},
    {"async pairs", test_async_pairs},
    {"ragged-all-to-all single", test_ragged_single},
    {"combined and variadic permute", test_combined_permute},
    {"ragged-all-to-all 2-d offsets", test_ragged_2d_single},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("collectives", tests)
