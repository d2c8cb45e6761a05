// The per-process thread pool: every task runs exactly once per run, on
// every worker count, across many runs (no lost wake-ups), and a NULL or
// one-thread pool runs tasks on the caller in order; kernels that split
// their work over it give the bits of one thread.
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/verifier/verifier.h"
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

// Ranges of items: every item exactly once for item counts below, at and
// above the number of ranges, and on one thread in ascending order.
static void test_ranges_every_item_once(void) {
  static counts_t c;
  const int64_t counts[] = {1, 5, 24, 25, kTasks};
  for (int threads = 1; threads <= 3; threads++) {
    hl_thread_pool_t *pool = NULL;
    HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
    for (int k = 0; k < 5; k++)
      for (int round = 0; round < 50; round++) {
        memset(&c, 0, sizeof c);
        hl_thread_pool_run_ranges(pool, counts[k], count_task, &c);
        int bad = 0;
        for (int t = 0; t < kTasks; t++) bad += atomic_load(&c.hits[t]) != (t < counts[k]);
        CU_ASSERT_EQUAL(bad, 0);
      }
    hl_thread_pool_destroy(pool);
  }
  hl_thread_pool_run_ranges(NULL, 0, count_task, &c);  // nothing to do
}

// Chunks of an array: every item in exactly one chunk, chunks start on a
// multiple of 64 items, below HL_POOL_CHUNK_MIN_ITEMS one call with all.
typedef struct chunk_marks {
  _Atomic uint8_t *hits;
  _Atomic int calls, misaligned;
} chunk_marks_t;

static void mark_chunk(void *arg, int64_t lo, int64_t len, int worker) {
  (void)worker;
  chunk_marks_t *m = arg;
  atomic_fetch_add(&m->calls, 1);
  if (lo % 64) atomic_fetch_add(&m->misaligned, 1);
  for (int64_t i = lo; i < lo + len; i++) atomic_fetch_add(&m->hits[i], 1);
}

static void test_chunks_every_item_once(void) {
  const int64_t sizes[] = {1, HL_POOL_CHUNK_MIN_ITEMS - 1, HL_POOL_CHUNK_MIN_ITEMS,
                           HL_POOL_CHUNK_MIN_ITEMS + 1, 1000003};
  _Atomic uint8_t *hits = calloc(1000003, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hits);
  for (int threads = 1; threads <= 3; threads++) {
    hl_thread_pool_t *pool = NULL;
    HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
    for (int k = 0; k < 5; k++) {
      memset((void *)hits, 0, 1000003);
      chunk_marks_t m = {.hits = hits};
      hl_thread_pool_run_chunks(pool, sizes[k], mark_chunk, &m);
      int64_t bad = 0;
      for (int64_t i = 0; i < sizes[k]; i++) bad += atomic_load(&hits[i]) != 1;
      CU_ASSERT_EQUAL(bad, 0);
      CU_ASSERT_EQUAL(atomic_load(&m.misaligned), 0);
      if (threads == 1 || sizes[k] < HL_POOL_CHUNK_MIN_ITEMS) {
        CU_ASSERT_EQUAL(atomic_load(&m.calls), 1);
      } else {
        CU_ASSERT(atomic_load(&m.calls) > threads);  // shrinking pieces, not halves
      }
    }
    hl_thread_pool_destroy(pool);
  }
  free((void *)hits);
}

// Runs far enough apart that the workers stop spinning and sleep, and a
// worker task that outlasts the caller's spin: the condition-variable paths
// (wake-up of sleeping workers, a sleeping caller woken by the last worker)
// lose no task and no wake-up.
static void slow_on_workers(void *arg, int64_t task, int worker) {
  if (worker != 0) {
    struct timespec pause = {0, 1000000};  // 1 ms: past the caller's spin
    nanosleep(&pause, NULL);
  }
  count_task(arg, task, worker);
}

static void test_sleeping_workers_and_caller(void) {
  static counts_t c;
  for (int threads = 2; threads <= 3; threads++) {
    hl_thread_pool_t *pool = NULL;
    HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
    for (int round = 0; round < 12; round++) {
      memset(&c, 0, sizeof c);
      struct timespec gap = {0, 2000000};  // 2 ms: the workers go to sleep
      if (round % 2 == 0) nanosleep(&gap, NULL);
      hl_thread_pool_run(pool, 8, round % 3 == 0 ? slow_on_workers : count_task, &c);
      int bad = 0;
      for (int t = 0; t < kTasks; t++) bad += atomic_load(&c.hits[t]) != (t < 8);
      CU_ASSERT_EQUAL(bad, 0);
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
  memset(&c, 0, sizeof c);
  hl_thread_pool_run_ranges(NULL, kTasks, record_order, &c);
  CU_ASSERT_EQUAL(c.next, kTasks);
  for (int t = 0; t < kTasks; t++) CU_ASSERT_EQUAL(c.order[t], t);
  hl_thread_pool_t *bad = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_thread_pool_create(0, &bad), "at least 1 thread");
  CU_ASSERT_PTR_NULL(bad);
}

// The reduce kernel split over threads (rows when only minor dimensions are
// reduced, columns otherwise, and a full reduction at the top of its
// pairwise tree) gives the bits of one thread.
static void test_threaded_reduce_kernel_is_bitwise_serial(void) {
  const char *dims[] = {"{1}", "{0}", "{0,1}"};
  const char *types[] = {"f32", "s32", "f64"};
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(3, &pool));
  for (int t = 0; t < 3; t++)
    for (int d = 0; d < 3; d++) {
      char text[1024];
      const char *out = d == 0 ? "[301]" : d == 1 ? "[703]" : "[]";
      snprintf(text, sizeof text,
               "HloModule r\nadd {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n"
               "  ROOT s = %s[] add(a, b)\n}\nENTRY main {\n  x = %s[301,703] parameter(0)\n"
               "  z = %s[] constant(0)\n  ROOT r = %s%s reduce(x, z), dimensions=%s, "
               "to_apply=add\n}\n",
               types[t], types[t], types[t], types[t], types[t], types[t], out, dims[d]);
      hl_module_t *m = NULL;
      HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "r.hlo", &m));
      HL_ASSERT_OK(hl_verify_module(m));
      hl_literal_t *x = NULL;
      HL_ASSERT_OK(hl_literal_create_uninitialized(&m->entry->parameters[0]->shape, &x));
      uint32_t s = 7;
      for (int64_t i = 0; i < 301 * 703; i++) {
        s = s * 1664525u + 1013904223u;
        hl_literal_set_f64(x, i, ((int)(s >> 12) % 20001 - 10000) / 97.0);
      }
      hl_literal_t *one = NULL, *many = NULL;
      hl_exec_options_t serial = {0}, threaded = {.pool = pool};
      HL_ASSERT_OK(hl_execute(m, &serial, &x, 1, &one));
      HL_ASSERT_OK(hl_execute(m, &threaded, &x, 1, &many));
      CU_ASSERT_TRUE(hl_literal_equal(one, many));
      hl_literal_release(one);
      hl_literal_release(many);
      hl_literal_release(x);
      hl_module_destroy(m);
    }
  hl_thread_pool_destroy(pool);
}

static void check_pools_agree(const char *text, int lo, int hi);

// Two long rows (fewer rows than threads): each row's pairwise tree is
// split over the threads and combined in the tree's order, for add (order
// matters in floats) and maximum, on 1 and 3 threads.
static void test_threaded_long_rows_are_bitwise_serial(void) {
  const char *types[] = {"f32", "f64", "s32"};
  const char *ops[] = {"add", "maximum"};
  for (int t = 0; t < 3; t++)
    for (int o = 0; o < 2; o++) {
      char text[1024];
      snprintf(text, sizeof text,
               "HloModule r\nred {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n"
               "  ROOT s = %s[] %s(a, b)\n}\nENTRY main {\n  x = %s[2,150001] parameter(0)\n"
               "  z = %s[] constant(0)\n  ROOT r = %s[2] reduce(x, z), dimensions={1}, "
               "to_apply=red\n}\n",
               types[t], types[t], types[t], ops[o], types[t], types[t], types[t]);
      check_pools_agree(text, -10000, 10000);
    }
}

// Unfused element-wise ops and transpose / broadcast / slice split over
// threads give the bits of one thread.
static void test_threaded_kernels_are_bitwise_serial(void) {
  const char *text =
      "HloModule k\nENTRY main {\n  x = f32[301,703] parameter(0)\n"
      "  y = f32[301,703] parameter(1)\n  a = f32[301,703] add(x, y)\n"
      "  e = f32[301,703] exponential(a)\n  h = bf16[301,703] convert(e)\n"
      "  hh = bf16[301,703] multiply(h, h)\n  t = bf16[703,301] transpose(hh), dimensions={1,0}\n"
      "  s = bf16[350,300] slice(t), slice={[3:703:2], [1:301]}\n"
      "  z = f32[] constant(0)\n  r = f32[703] reduce(x, z), dimensions={0}, to_apply=add\n"
      "  b = f32[301,703] broadcast(r), dimensions={1}\n"
      "  q = f32[301,703] divide(b, e)\n  ROOT out = (bf16[350,300], f32[301,703]) tuple(s, q)\n}\n";
  const char *reducer =
      "HloModule k\nadd {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(p, q)\n}\n";
  char full[4096];
  snprintf(full, sizeof full, "%s%s", reducer, text + strlen("HloModule k\n"));
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(full, strlen(full), "k.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_literal_t *args[2];
  uint32_t s = 3;
  for (int k = 0; k < 2; k++) {
    HL_ASSERT_OK(hl_literal_create_uninitialized(&m->entry->parameters[k]->shape, &args[k]));
    for (int64_t i = 0; i < 301 * 703; i++) {
      s = s * 1664525u + 1013904223u;
      hl_literal_set_f64(args[k], i, ((int)(s >> 12) % 2001 - 1000) / 400.0);
    }
  }
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(3, &pool));
  hl_literal_t *one = NULL, *many = NULL;
  hl_exec_options_t serial = {0}, threaded = {.pool = pool};
  HL_ASSERT_OK(hl_execute(m, &serial, args, 2, &one));
  HL_ASSERT_OK(hl_execute(m, &threaded, args, 2, &many));
  CU_ASSERT_TRUE(hl_literal_equal(one, many));
  hl_literal_release(one);
  hl_literal_release(many);
  for (int k = 0; k < 2; k++) hl_literal_release(args[k]);
  hl_module_destroy(m);
  hl_thread_pool_destroy(pool);
}


// Runs `text` on a pool of 1 thread and on one of `threads` (`rounds`
// times, for many interleavings) over pseudo-random arguments (integers in
// [lo, hi), eighths for floats) and checks every result has the bits of the
// first; with `op_by_op`, also the run with --no-fusion-blocking.
static void check_threads_agree(const char *text, int lo, int hi, int threads, int rounds,
                                bool op_by_op) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "k.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  int nargs = m->entry->parameter_count;
  hl_literal_t *args[4];
  uint32_t s = 11;
  for (int k = 0; k < nargs; k++) {
    HL_ASSERT_OK(hl_literal_create_uninitialized(&m->entry->parameters[k]->shape, &args[k]));
    int64_t count = hl_shape_element_count(&m->entry->parameters[k]->shape);
    bool is_index = hl_dtype_is_signed_int(m->entry->parameters[k]->shape.dtype);
    for (int64_t i = 0; i < count; i++) {
      s = s * 1664525u + 1013904223u;
      int v = lo + (int)((s >> 8) % (uint32_t)(hi - lo));
      // Floats get fractions and repeats (stability), indices stay integers.
      hl_literal_set_f64(args[k], i, is_index ? v : v / 8.0);
    }
  }
  hl_thread_pool_t *p1 = NULL, *pn = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(1, &p1));
  HL_ASSERT_OK(hl_thread_pool_create(threads, &pn));
  hl_literal_t *one = NULL;
  hl_exec_options_t o1 = {.pool = p1}, on = {.pool = pn};
  hl_exec_options_t unfused = {.pool = p1, .no_fusion_blocking = true};
  HL_ASSERT_OK(hl_execute(m, &o1, args, nargs, &one));
  for (int r = 0; r < rounds + (op_by_op ? 1 : 0); r++) {
    hl_literal_t *other = NULL;
    HL_ASSERT_OK(hl_execute(m, r < rounds ? &on : &unfused, args, nargs, &other));
    CU_ASSERT_TRUE(one && other && one->byte_size == other->byte_size &&
                   hl_literal_equal(one, other));
    hl_literal_release(other);
  }
  hl_literal_release(one);
  for (int k = 0; k < nargs; k++) hl_literal_release(args[k]);
  hl_module_destroy(m);
  hl_thread_pool_destroy(p1);
  hl_thread_pool_destroy(pn);
}

static void check_pools_agree(const char *text, int lo, int hi) {
  check_threads_agree(text, lo, hi, 3, 1, false);
}

// Blocked fusions whose reductions overlap across blocks (column sums: the
// minor dimension kept; or outer and minor dimensions both reduced) compute
// their blocks on several threads and combine them in block order: 1 and 3
// threads and the op-by-op run give the same bits, with a multi-output
// fusion (a gradient and its bias gradient, as XLA emits them) and a tanh.
// Both fusions have the 8 arithmetic nodes from which such programs take
// threads (fewer run on one: MIN_ORDERED_NODES in fusion_program_internal.h).
static void test_threaded_overlapping_reductions_are_bitwise_serial(void) {
  const char *text =
      "HloModule g\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\n"
      "grad {\n  x = f32[300,257] parameter(0)\n  y = f32[300,257] parameter(1)\n"
      "  t = f32[300,257] tanh(x)\n  g0 = f32[300,257] multiply(t, y)\n"
      "  g1 = f32[300,257] add(g0, x)\n  g2 = f32[300,257] multiply(g1, t)\n"
      "  g3 = f32[300,257] subtract(g2, y)\n  g = f32[300,257] negate(g3)\n"
      "  h = bf16[300,257] convert(g)\n  hf = f32[300,257] convert(h)\n"
      "  z = f32[] constant(0)\n  r = f32[257] reduce(hf, z), dimensions={0}, to_apply=add\n"
      "  ROOT out = (f32[257], bf16[300,257]) tuple(r, h)\n}\n"
      "outer {\n  x = f32[9,40,33] parameter(0)\n  e0 = f32[9,40,33] exponential(x)\n"
      "  e1 = f32[9,40,33] multiply(e0, x)\n  e2 = f32[9,40,33] add(e1, x)\n"
      "  e3 = f32[9,40,33] tanh(e2)\n  e4 = f32[9,40,33] multiply(e3, e0)\n"
      "  e5 = f32[9,40,33] subtract(e4, x)\n  e6 = f32[9,40,33] abs(e5)\n"
      "  e = f32[9,40,33] sqrt(e6)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[40] reduce(e, z), dimensions={0,2}, to_apply=add\n}\n"
      "ENTRY main {\n  x = f32[300,257] parameter(0)\n  y = f32[300,257] parameter(1)\n"
      "  w = f32[9,40,33] parameter(2)\n"
      "  f = (f32[257], bf16[300,257]) fusion(x, y), kind=kInput, calls=grad\n"
      "  r = f32[257] get-tuple-element(f), index=0\n"
      "  h = bf16[300,257] get-tuple-element(f), index=1\n"
      "  o = f32[40] fusion(w), kind=kInput, calls=outer\n"
      "  ROOT out = (f32[257], bf16[300,257], f32[40]) tuple(r, h, o)\n}\n";
  // Values in [-2, 2): tanh and exp stay in their interesting range.
  check_threads_agree(text, -16, 16, 3, 20, true);
}

// bf16 / f16 dots: operands widened and results rounded in chunks over the
// pool, the gemm in tiles: 1 and 3 threads give the same bits.
static void test_threaded_half_dots_are_bitwise_serial(void) {
  const char *types[] = {"bf16", "f16"};
  for (int t = 0; t < 2; t++) {
    char text[1024];
    snprintf(text, sizeof text,
             "HloModule d\nENTRY main {\n  a = %s[300,400] parameter(0)\n"
             "  b = %s[400,350] parameter(1)\n"
             "  ROOT d = %s[300,350] dot(a, b), lhs_contracting_dims={1}, "
             "rhs_contracting_dims={0}\n}\n",
             types[t], types[t], types[t]);
    check_pools_agree(text, -40, 40);
  }
}

// A pool larger than the fusion programs' per-worker workspaces (64) runs
// fusion blocks on the caller instead of indexing past them; the result is
// the one-thread result.
static void test_pool_past_fusion_workspaces(void) {
  const char *text =
      "HloModule w\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\n"
      "rows {\n  x = f32[512,300] parameter(0)\n  e = f32[512,300] exponential(x)\n"
      "  z = f32[] constant(0)\n  ROOT r = f32[512] reduce(e, z), dimensions={1}, to_apply=add\n}\n"
      "ENTRY main {\n  x = f32[512,300] parameter(0)\n"
      "  ROOT o = f32[512] fusion(x), kind=kInput, calls=rows\n}\n";
  check_threads_agree(text, -16, 16, 70, 1, false);
}

// sort splits its independent slices (rows along the other dimensions) over
// threads: one and three threads give the same bits, over key types, sort
// dimensions, directions and a second (payload) operand with repeated keys.
static void test_threaded_sort_is_bitwise_serial(void) {
  const char *types[] = {"f32", "s32", "f64", "bf16"};
  for (int t = 0; t < 4; t++)
    for (int dim = 0; dim < 2; dim++)
      for (int dir = 0; dir < 2; dir++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "HloModule s\ncmp {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n"
                 "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
                 "  ROOT lt = pred[] compare(a, b), direction=%s\n}\n"
                 "ENTRY main {\n  k = %s[301,173] parameter(0)\n  v = s32[301,173] parameter(1)\n"
                 "  ROOT r = (%s[301,173], s32[301,173]) sort(k, v), dimensions={%d}, "
                 "is_stable=true, to_apply=cmp\n}\n",
                 types[t], types[t], dir ? "GT" : "LT", types[t], types[t], dim);
        check_pools_agree(text, -40, 40);
      }
  // One operand, three dimensions, sorting the middle one.
  check_pools_agree("HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                    "  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n"
                    "ENTRY main {\n  k = f32[17,97,23] parameter(0)\n"
                    "  ROOT r = f32[17,97,23] sort(k), dimensions={1}, to_apply=cmp\n}\n",
                    -1000, 1000);
}

// gather splits its batch positions over threads: an embedding lookup (rows
// of a table) and a two-coordinate gather with clamped starts.
static void test_threaded_gather_is_bitwise_serial(void) {
  const char *types[] = {"f32", "bf16", "s8", "f64"};
  for (int t = 0; t < 4; t++) {
    char text[2048];
    snprintf(text, sizeof text,
             "HloModule g\nENTRY main {\n  x = %s[1000,64] parameter(0)\n"
             "  i = s32[3000,1] parameter(1)\n"
             "  ROOT g = %s[3000,64] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
             "start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}\n}\n",
             types[t], types[t]);
    check_pools_agree(text, -20, 1020);
    snprintf(text, sizeof text,
             "HloModule g\nENTRY main {\n  x = %s[50,60,7] parameter(0)\n"
             "  i = s32[80,30,2] parameter(1)\n"
             "  ROOT g = %s[80,30,3,7] gather(x, i), offset_dims={2,3}, "
             "collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=2, "
             "slice_sizes={1,3,7}\n}\n",
             types[t], types[t]);
    check_pools_agree(text, -5, 65);
  }
}

static CU_TestInfo tests[] = {
    {"threaded_sort_is_bitwise_serial", test_threaded_sort_is_bitwise_serial},
    {"threaded_gather_is_bitwise_serial", test_threaded_gather_is_bitwise_serial},
    {"threaded_kernels_are_bitwise_serial", test_threaded_kernels_are_bitwise_serial},
    {"threaded_reduce_kernel_is_bitwise_serial", test_threaded_reduce_kernel_is_bitwise_serial},
    {"threaded_long_rows_are_bitwise_serial", test_threaded_long_rows_are_bitwise_serial},
    {"threaded_overlapping_reductions_are_bitwise_serial",
     test_threaded_overlapping_reductions_are_bitwise_serial},
    {"threaded_half_dots_are_bitwise_serial", test_threaded_half_dots_are_bitwise_serial},
    {"pool_past_fusion_workspaces", test_pool_past_fusion_workspaces},
    {"every_task_once", test_every_task_once},
    {"ranges_every_item_once", test_ranges_every_item_once},
    {"chunks_every_item_once", test_chunks_every_item_once},
    {"sleeping_workers_and_caller", test_sleeping_workers_and_caller},
    {"null_pool_runs_in_order", test_null_pool_runs_in_order},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("thread_pool", tests)
