// Grid resolution: the rule in runtime/spmd/grid.h and --help, case by case.
#include "runtime/spmd/grid.h"

#include "tests/unit/test_util.h"

static void expect_grid(int64_t np, int64_t r, int64_t p, int64_t mr, int64_t mp,
                        int64_t want_r, int64_t want_p) {
  hl_grid_t g = {0};
  HL_ASSERT_OK(hl_grid_resolve(np, r, p, mr, mp, &g));
  CU_ASSERT_EQUAL(g.replicas, want_r);
  CU_ASSERT_EQUAL(g.partitions, want_p);
  CU_ASSERT_EQUAL(g.processes, want_r * want_p);
}

static void test_defaults(void) {
  expect_grid(8, 0, 0, 0, 0, 8, 1);  // nothing says: P = 1, R = N
  expect_grid(0, 0, 0, 0, 0, 1, 1);  // nothing at all: one process
  expect_grid(1, 0, 0, 0, 0, 1, 1);
  expect_grid(0, 0, 0, 2, 4, 2, 4);  // the program's grid, -np omitted
  expect_grid(8, 0, 0, 2, 4, 2, 4);
  expect_grid(4, 0, 0, 4, 0, 4, 1);  // replica_count only: num_partitions 1
  expect_grid(0, 0, 0, 0, 3, 1, 3);  // num_partitions only: replica_count 1
}

static void test_options_override(void) {
  expect_grid(8, 2, 4, 0, 0, 2, 4);
  expect_grid(6, 3, 2, 2, 4, 3, 2);  // options win over the program
  expect_grid(8, 0, 4, 0, 0, 2, 4);  // only P known: R = N / P
  expect_grid(8, 2, 0, 0, 0, 2, 4);  // only R known: P = N / R
  expect_grid(0, 0, 4, 0, 0, 1, 4);
  // --partitions 2 on a program that says replica_count=4 alone: R = 4 from
  // the program, so the grid is 4 x 2.
  expect_grid(8, 0, 2, 4, 0, 4, 2);
}

static void test_mismatch(void) {
  hl_grid_t g;
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve(8, 2, 2, 0, 0, &g),
                           "the grid 2 replicas x 2 partitions needs 4 processes, but -np is 8");
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve(2, 0, 0, 4, 0, &g),
                           "the grid 4 replicas x 1 partition needs 4 processes, but -np is 2 "
                           "(the program says replica_count=4;");
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve(3, 1, 1, 0, 0, &g),
                           "the grid 1 replica x 1 partition needs 1 process, but -np is 3");
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve(6, 0, 4, 0, 0, &g),
                           "-np 6 is not a multiple of 4 partitions");
}

// The embedding API's words (api/runtime.c): the communicator, not -np.
static void test_worded(void) {
  hl_grid_t g;
  const hl_grid_words_t words = {"the communicator size", "the options"};
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve_worded(&words, 2, 0, 0, 4, 0, &g),
                           "needs 4 processes, but the communicator size is 2 "
                           "(the program says replica_count=4; the options override it)");
  HL_ASSERT_ERROR_CONTAINS(hl_grid_resolve_worded(&words, 6, 0, 4, 0, 0, &g),
                           "the communicator size 6 is not a multiple of 4 partitions");
  HL_ASSERT_OK(hl_grid_resolve_worded(&words, 4, 0, 2, 0, 0, &g));
  CU_ASSERT_EQUAL(g.replicas, 2);
  CU_ASSERT_EQUAL(g.partitions, 2);
}

static void test_rank_mapping(void) {
  hl_grid_t g = {2, 4, 8};
  CU_ASSERT_EQUAL(hl_grid_rank(&g, 1, 2), 6);  // replica * num_partitions + partition
  CU_ASSERT_EQUAL(hl_grid_replica(&g, 6), 1);
  CU_ASSERT_EQUAL(hl_grid_partition(&g, 6), 2);
  CU_ASSERT_EQUAL(hl_grid_replica(&g, 3), 0);
  CU_ASSERT_EQUAL(hl_grid_partition(&g, 3), 3);
}

static CU_TestInfo tests[] = {
    {"defaults", test_defaults},
    {"options_override", test_options_override},
    {"mismatch", test_mismatch},
    {"worded", test_worded},
    {"rank_mapping", test_rank_mapping},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("grid", tests)
