// The per-process thread pool: every task runs exactly once per run, on
// every worker count, across many runs (no lost wake-ups), and a NULL or
// one-thread pool runs tasks on the caller in order.
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <string.h>

#include "runtime/exec/thread_pool.h"
#include "tests/unit/test_util.h"

enum { kTasks = 997 };

typedef struct counts {
  _Atomic int hits[kTasks];
  _Atomic int workers_seen[8];
  int order[kTasks];
  int next;
} counts_t;

static void count_task(void *arg, int64_t task, int worker) {
  counts_t *c = arg;
  atomic_fetch_add(&c->hits[task], 1);
  atomic_fetch_add(&c->workers_seen[worker], 1);
}

static void test_every_task_once(void) {
  static counts_t c;
  for (int threads = 1; threads <= 4; threads++) {
    hl_thread_pool_t *pool = NULL;
    HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
    CU_ASSERT_EQUAL(hl_thread_pool_size(pool), threads);
    for (int round = 0; round < 200; round++) {
      memset(&c, 0, sizeof c);
      hl_thread_pool_run(pool, kTasks, count_task, &c);
      int bad = 0;
      for (int t = 0; t < kTasks; t++) bad += atomic_load(&c.hits[t]) != 1;
      CU_ASSERT_EQUAL(bad, 0);
      for (int w = threads; w < 8; w++) CU_ASSERT_EQUAL(atomic_load(&c.workers_seen[w]), 0);
    }
    hl_thread_pool_destroy(pool);
  }
}

static void record_order(void *arg, int64_t task, int worker) {
  counts_t *c = arg;
  CU_ASSERT_EQUAL(worker, 0);
  c->order[c->next++] = (int)task;
}

static void test_null_pool_runs_in_order(void) {
  static counts_t c;
  memset(&c, 0, sizeof c);
  CU_ASSERT_EQUAL(hl_thread_pool_size(NULL), 1);
  hl_thread_pool_run(NULL, kTasks, record_order, &c);
  CU_ASSERT_EQUAL(c.next, kTasks);
  for (int t = 0; t < kTasks; t++) CU_ASSERT_EQUAL(c.order[t], t);
  hl_thread_pool_t *bad = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_thread_pool_create(0, &bad), "at least 1 thread");
  CU_ASSERT_PTR_NULL(bad);
}

static CU_TestInfo tests[] = {
    {"every_task_once", test_every_task_once},
    {"null_pool_runs_in_order", test_null_pool_runs_in_order},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("thread_pool", tests)
