// Free page runs (runtime/base/page_runs.h), the allocator's cache and the
// memory plan's simulation of it, over made-up addresses: cutting, joining,
// gathering, trimming and the budget.
// hl-test-libs: hl_base
#include <stdint.h>

#include "runtime/base/page_runs.h"
#include "tests/unit/test_util.h"

enum { P = 4096 };

// A request is cut from the front of the smallest run that holds it (an
// exact fit taken whole); a cut-off block given back joins its tail again.
static void test_cut_and_join(void) {
  hl_page_runs_t s = {0};
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 100 * P, 3 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 200 * P, 5 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 300 * P, 4 * P));
  CU_ASSERT_EQUAL(s.count, 3);
  CU_ASSERT_EQUAL(s.bytes, 12 * P);
  CU_ASSERT_EQUAL(hl_page_runs_take(&s, 4 * P), 300 * P);  // exact: whole
  CU_ASSERT_EQUAL(s.count, 2);
  CU_ASSERT_EQUAL(hl_page_runs_take(&s, 2 * P), 100 * P);  // the 3-page run, cut
  CU_ASSERT_EQUAL(s.count, 2);
  CU_ASSERT_EQUAL(s.runs[0].start, 102 * P);
  CU_ASSERT_EQUAL(s.runs[0].bytes, 1 * P);
  CU_ASSERT_EQUAL(hl_page_runs_take(&s, 6 * P), 0);  // none holds 6 pages
  CU_ASSERT_EQUAL(hl_page_runs_take(&s, 0), 0);
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 100 * P, 2 * P));  // joins its tail
  CU_ASSERT_EQUAL(s.count, 2);
  CU_ASSERT_EQUAL(s.runs[0].start, 100 * P);
  CU_ASSERT_EQUAL(s.runs[0].bytes, 3 * P);
  CU_ASSERT_EQUAL(s.bytes, 8 * P);
  hl_page_runs_deinit(&s);
  CU_ASSERT_EQUAL(s.count, 0);
  CU_ASSERT_EQUAL(s.bytes, 0);
}

// A block that fills the gap between two runs makes one run of the three,
// in whatever order they come back; runs stay in address order.
static void test_join_both_sides(void) {
  hl_page_runs_t s = {0};
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 40 * P, 8 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 10 * P, 2 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 20 * P, 4 * P));
  CU_ASSERT_EQUAL(s.count, 3);
  CU_ASSERT_TRUE(s.runs[0].start < s.runs[1].start && s.runs[1].start < s.runs[2].start);
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 24 * P, 16 * P));  // 24..40: joins 20.. and 40..
  CU_ASSERT_EQUAL(s.count, 2);
  CU_ASSERT_EQUAL(s.runs[1].start, 20 * P);
  CU_ASSERT_EQUAL(s.runs[1].bytes, 28 * P);
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 12 * P, 8 * P));  // 12..20: all one run
  CU_ASSERT_EQUAL(s.count, 1);
  CU_ASSERT_EQUAL(s.runs[0].start, 10 * P);
  CU_ASSERT_EQUAL(s.runs[0].bytes, 38 * P);
  CU_ASSERT_EQUAL(s.bytes, 38 * P);
  // Many runs (the list grows past its first allocation), none touching.
  for (int i = 0; i < 100; i++) CU_ASSERT_TRUE(hl_page_runs_put(&s, (uintptr_t)(1000 + 2 * i) * P, P));
  CU_ASSERT_EQUAL(s.count, 101);
  hl_page_runs_deinit(&s);
}

// For a request no run holds, the runs are handed out for their pages,
// largest first, the last one cut to what is still missing.
static void test_gather(void) {
  hl_page_runs_t s = {0};
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 10 * P, 2 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 20 * P, 3 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 30 * P, 1 * P));
  CU_ASSERT_EQUAL(hl_page_runs_take(&s, 4 * P), 0);
  hl_page_run_t r;
  size_t need = 4 * P;
  CU_ASSERT_TRUE(hl_page_runs_gather(&s, need, &r));
  CU_ASSERT_EQUAL(r.start, 20 * P);
  CU_ASSERT_EQUAL(r.bytes, 3 * P);
  need -= r.bytes;
  CU_ASSERT_TRUE(hl_page_runs_gather(&s, need, &r));  // the front page of the 2-page run
  CU_ASSERT_EQUAL(r.start, 10 * P);
  CU_ASSERT_EQUAL(r.bytes, 1 * P);
  CU_ASSERT_EQUAL(s.count, 2);
  CU_ASSERT_EQUAL(s.bytes, 2 * P);
  CU_ASSERT_FALSE(hl_page_runs_gather(&s, 0, &r));
  CU_ASSERT_TRUE(hl_page_runs_gather(&s, 8 * P, &r));
  CU_ASSERT_TRUE(hl_page_runs_gather(&s, 8 * P, &r));
  CU_ASSERT_FALSE(hl_page_runs_gather(&s, 8 * P, &r));  // none left
  CU_ASSERT_EQUAL(s.bytes, 0);
  hl_page_runs_deinit(&s);
}

// Trimming to a limit gives back the excess from the end of the largest
// run, a run no larger than the excess whole.
static void test_trim(void) {
  hl_page_runs_t s = {0};
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 10 * P, 2 * P));
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 20 * P, 5 * P));
  hl_page_run_t r;
  CU_ASSERT_FALSE(hl_page_runs_trim(&s, 7 * P, &r));
  CU_ASSERT_TRUE(hl_page_runs_trim(&s, 4 * P, &r));
  CU_ASSERT_EQUAL(r.start, 22 * P);
  CU_ASSERT_EQUAL(r.bytes, 3 * P);
  CU_ASSERT_EQUAL(s.bytes, 4 * P);
  CU_ASSERT_FALSE(hl_page_runs_trim(&s, 4 * P, &r));
  CU_ASSERT_TRUE(hl_page_runs_trim(&s, 1 * P, &r));  // largest first (either is 2)
  CU_ASSERT_EQUAL(r.bytes, 2 * P);
  CU_ASSERT_TRUE(hl_page_runs_trim(&s, 1 * P, &r));
  CU_ASSERT_EQUAL(r.bytes, 1 * P);
  CU_ASSERT_FALSE(hl_page_runs_trim(&s, 1 * P, &r));
  CU_ASSERT_TRUE(hl_page_runs_trim(&s, 0, &r));
  CU_ASSERT_EQUAL(s.count, 0);
  CU_ASSERT_FALSE(hl_page_runs_trim(&s, 0, &r));
  hl_page_runs_deinit(&s);
}

// Fresh pages for a request no run holds while what is mapped stays within
// the peak (this request counted) and a quarter; past it, gather.
static void test_budget(void) {
  CU_ASSERT_EQUAL(hl_page_runs_budget(100 * P), 125 * P);
  CU_ASSERT_EQUAL(hl_page_runs_budget(0), 0);
  hl_page_runs_t s = {0};
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 0x100000, 20 * P));
  CU_ASSERT_TRUE(hl_page_runs_map_fresh(&s, 50 * P, 100 * P, 50 * P));  // 120 <= 125
  CU_ASSERT_TRUE(hl_page_runs_map_fresh(&s, 90 * P, 100 * P, 40 * P));  // peak 130: 150 <= 162
  CU_ASSERT_TRUE(hl_page_runs_put(&s, 0x200000, 20 * P));
  CU_ASSERT_FALSE(hl_page_runs_map_fresh(&s, 50 * P, 100 * P, 50 * P));  // 140 > 125
  CU_ASSERT_FALSE(hl_page_runs_map_fresh(&s, 90 * P, 100 * P, 40 * P));  // 170 > 162
  hl_page_runs_deinit(&s);
}

static CU_TestInfo tests[] = {
    {"cut_and_join", test_cut_and_join},
    {"join_both_sides", test_join_both_sides},
    {"gather", test_gather},
    {"trim", test_trim},
    {"budget", test_budget},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("page_runs", tests)
