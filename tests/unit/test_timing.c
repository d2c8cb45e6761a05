// The --repeat report (launcher/timing.c); expected lines worked by hand.
// hl-test-libs: hl_launcher hl_base
#include "launcher/timing.h"
#include "runtime/base/strbuf.h"
#include "tests/unit/test_util.h"

static void expect_line(const double *seconds, int64_t runs, int processes, const char *want) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  HL_ASSERT_OK(hl_timing_format(seconds, runs, processes, &sb));
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), want);
  hl_strbuf_deinit(&sb);
}

static void test_first_run_kept_apart(void) {
  const double odd[4] = {0.010, 0.003, 0.001, 0.002};  // rest sorted: 1, 2, 3 ms
  expect_line(odd, 4, 2, "4 runs on 2 processes: first 10.000 ms; runs 2-4: min 1.000 ms, "
                         "median 2.000 ms, max 3.000 ms");
  const double even[3] = {0.005, 0.004, 0.001};  // median of 1 and 4 ms
  expect_line(even, 3, 8, "3 runs on 8 processes: first 5.000 ms; runs 2-3: min 1.000 ms, "
                          "median 2.500 ms, max 4.000 ms");
  CU_ASSERT_EQUAL(odd[1], 0.003);  // the input is not sorted in place
}

static void test_single_run(void) {
  const double one[1] = {0.0005};
  expect_line(one, 1, 1, "1 run on 1 process: 0.500 ms");
}

// A small program's runs (about a microsecond): three significant digits
// below 0.1 ms, so neither figure reads 0.000.
static void test_microseconds(void) {
  const double tiny[3] = {45.2e-6, 0.81e-6, 1.21e-6};
  expect_line(tiny, 3, 1, "3 runs on 1 process: first 0.0452 ms; runs 2-3: min 0.000810 ms, "
                          "median 0.00101 ms, max 0.00121 ms");
  const double zero[2] = {0.2e-3, 0.0};
  expect_line(zero, 2, 1, "2 runs on 1 process: first 0.200 ms; runs 2-2: min 0.000 ms, "
                          "median 0.000 ms, max 0.000 ms");
}

static void test_no_runs(void) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  HL_ASSERT_ERROR_CONTAINS(hl_timing_format(NULL, 0, 1, &sb), "no runs");
  hl_strbuf_deinit(&sb);
}

static CU_TestInfo tests[] = {
    {"first_run_kept_apart", test_first_run_kept_apart},
    {"single_run", test_single_run},
    {"microseconds", test_microseconds},
    {"no_runs", test_no_runs},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("timing", tests)
