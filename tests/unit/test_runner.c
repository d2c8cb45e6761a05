// The runner (runner/runner.h), the set-up sequence and runs hlo-launch's
// ranks and the embedding API share, on MPI_COMM_SELF: which modules the
// fusion pass rewrites, the agreed option checks, the caller's check, the
// profile's first run apart (and its peak memory line), the warm start
// (no_warm_start), and the results of repeated runs (computed
// here in C: exact in f32 for these inputs).
#include "runner/runner.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

// Three element-wise ops: the fusion pass makes one loop fusion of them.
static const char kProgram[] =
    "HloModule runner_test\n"
    "ENTRY main {\n"
    "  x = f32[4]{0} parameter(0)\n"
    "  y = f32[4]{0} parameter(1)\n"
    "  m = f32[4]{0} multiply(x, y)\n"
    "  a = f32[4]{0} add(m, x)\n"
    "  ROOT s = f32[4]{0} subtract(a, y)\n"
    "}\n";

static hl_module_t *parse(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kProgram, strlen(kProgram), "runner_test.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  return m;
}

static int count_fusions(const hl_module_t *m) {
  int n = 0;
  for (int i = 0; i < m->entry->instruction_count; i++)
    n += m->entry->instructions[i]->opcode == HL_OP_FUSION;
  return n;
}

static hl_literal_t *vector(const float *v) {
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape("f32[4]{0}", &shape));
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&shape, &lit));
  memcpy(lit->data, v, 4 * sizeof(float));
  return lit;
}

// Runs the runner `runs` times on x, y and checks x * y + x - y.
static void run_and_check(hl_runner_t *r, const float *x, const float *y, int runs) {
  hl_literal_t *args[2] = {vector(x), vector(y)};
  for (int k = 0; k < runs; k++) {
    hl_literal_t *out = NULL;
    HL_ASSERT_OK(hl_runner_run(r, args, 2, &out, NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    const float *z = out->data;
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(z[i], x[i] * y[i] + x[i] - y[i]);
    hl_literal_release(out);
  }
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
}

static const float kX[4] = {1, 2, 3, 4}, kY[4] = {0.5f, -1, 8, 0};

static hl_runner_options_t defaults(void) {
  return (hl_runner_options_t){.collective_check = HL_RUNNER_CHECK_ALWAYS,
                               .fusion_pass = true,
                               .collectives = HL_COLLECTIVES_MPI,
                               .stuck_seconds = -1};
}

static void test_owned_module_fused(void) {
  hl_runner_options_t o = defaults();
  hl_runner_t *r = NULL;
  HL_ASSERT_OK(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r));
  CU_ASSERT_EQUAL(count_fusions(hl_runner_module(r)), 1);
  CU_ASSERT_EQUAL(hl_runner_grid(r)->processes, 1);
  HL_ASSERT_OK(hl_runner_start(r));
  run_and_check(r, kX, kY, 3);
  hl_runner_free(r, false);
}

// A borrowed module (the embedding API's program, shared by runners) is
// never rewritten.
static void test_borrowed_module_untouched(void) {
  hl_module_t *m = parse();
  hl_runner_options_t o = defaults();
  hl_runner_t *r = NULL;
  HL_ASSERT_OK(hl_runner_create(m, false, MPI_COMM_SELF, &o, &r));
  CU_ASSERT_PTR_EQUAL(hl_runner_module(r), m);
  CU_ASSERT_EQUAL(count_fusions(m), 0);
  HL_ASSERT_OK(hl_runner_start(r));
  run_and_check(r, kX, kY, 2);
  hl_runner_free(r, false);
  hl_module_destroy(m);
}

// --check-nans names every value: the instructions stay as written, and a
// NaN stops the run naming its instruction.
static void test_check_nans_keeps_instructions(void) {
  hl_runner_options_t o = defaults();
  o.debug.check_nans = true;
  hl_runner_t *r = NULL;
  HL_ASSERT_OK(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r));
  CU_ASSERT_EQUAL(count_fusions(hl_runner_module(r)), 0);
  HL_ASSERT_OK(hl_runner_start(r));
  const float x[4] = {0, 1, 2, 3}, y[4] = {INFINITY, 1, 1, 1};  // 0 * inf: NaN in m
  hl_literal_t *args[2] = {vector(x), vector(y)}, *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_runner_run(r, args, 2, &out, NULL), "multiply");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_runner_free(r, false);
}

static hl_status_t refuse(void *ctx, const hl_module_t *m, const hl_grid_t *grid) {
  (void)m;
  return HL_INVALID("%s on %lld x %lld", (const char *)ctx, (long long)grid->replicas,
                    (long long)grid->partitions);
}

static void test_errors(void) {
  hl_runner_t *r = NULL;
  hl_runner_options_t o = defaults();
  HL_ASSERT_ERROR_CONTAINS(hl_runner_create(NULL, true, MPI_COMM_SELF, &o, &r), "no program");
  CU_ASSERT_PTR_NULL(r);
  o.collectives = (hl_collectives_mode_t)7;
  HL_ASSERT_ERROR_CONTAINS(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r),
                           "collectives mode 7");
  o = defaults();
  hl_grid_t two = {2, 1, 2};
  o.grid = &two;
  HL_ASSERT_ERROR_CONTAINS(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r),
                           "a grid of 2 processes on a communicator of 1");
  o = defaults();
  o.replicas = 2;  // the communicator has one process
  static const hl_grid_words_t words = {"the communicator size", "the test's replicas"};
  o.grid_words = &words;
  HL_ASSERT_ERROR_CONTAINS(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r),
                           "rank 0: the communicator size 1 is not a multiple of 2 replicas");
  o = defaults();
  o.check_module = refuse;
  o.check_ctx = "refused by the caller";
  o.line_prefix = "test: ";
  HL_ASSERT_ERROR_CONTAINS(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r),
                           "test: rank 0 (replica 0, partition 0): refused by the caller on 1 x 1");
  CU_ASSERT_PTR_NULL(r);
}

// --profile with --repeat 3: the first run in a table of its own.
static void test_profile_first_run_apart(void) {
  hl_runner_options_t o = defaults();
  o.profile = o.profile_first_apart = true;
  hl_runner_t *r = NULL;
  HL_ASSERT_OK(hl_runner_create(parse(), true, MPI_COMM_SELF, &o, &r));
  HL_ASSERT_OK(hl_runner_start(r));
  run_and_check(r, kX, kY, 3);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  hl_runner_print_profile(r, "test: ", 5, f);
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "test: profile of rank 0 (replica 0, partition 0)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "first run (cold"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "runs 2-3 (steady state)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "fusion"));
  // f32[4] arrays: a bound of 48 bytes, no large array to set against it.
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "peak memory: large arrays"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "live-set lower bound 0.0 MiB"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "arrays / bound: n/a"));
  CU_ASSERT_PTR_NULL(strstr(text, "kernels' scratch"));  // none declared
  free(text);
  hl_runner_free(r, false);
}

// a + b on f32[rows, 1024]: the result is the one large block a first run
// maps (the arguments are the caller's).
static hl_module_t *parse_add(int rows) {
  char text[256];
  snprintf(text, sizeof text,
           "HloModule add\nENTRY main {\n  a = f32[%d,1024]{1,0} parameter(0)\n"
           "  b = f32[%d,1024]{1,0} parameter(1)\n  ROOT r = f32[%d,1024]{1,0} add(a, b)\n}\n",
           rows, rows, rows);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "add.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  return m;
}

// Runs a + b once on the runner (first run) and checks it; returns the
// bytes mapped fresh during the run.
static size_t first_run_fresh_bytes(hl_runner_t *r, int rows) {
  hl_shape_t shape = hl_shape_array(HL_F32, 2, (int64_t[]){rows, 1024});
  hl_literal_t *args[2] = {NULL, NULL}, *out = NULL;
  for (int k = 0; k < 2; k++) {
    HL_ASSERT_OK(hl_literal_create_uninitialized(&shape, &args[k]));
    float *d = args[k]->data;
    for (int64_t i = 0; i < (int64_t)rows * 1024; i++) d[i] = (float)(i % 13) * (k ? 0.5f : 2.0f);
  }
  size_t before = hl_alloc_large_fresh_bytes();
  HL_ASSERT_OK(hl_runner_run(r, args, 2, &out, NULL));
  size_t fresh = hl_alloc_large_fresh_bytes() - before;
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  const float *z = out->data;
  bool same = true;
  for (int64_t i = 0; i < (int64_t)rows * 1024; i++)
    same &= z[i] == (float)(i % 13) * 2.0f + (float)(i % 13) * 0.5f;
  CU_ASSERT_TRUE(same);
  hl_literal_release(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  return fresh;
}

// The warm start is the runner's (so the embedding API's too): begun in
// hl_runner_create, its thread maps the result's block before the first
// run, which then maps nothing; no_warm_start leaves it to the first run.
// First in the suite, so the allocator caches no large block yet; the
// second runner's larger arrays outgrow the blocks the first one left
// there. Large arrays have mappings of their own only outside
// AddressSanitizer.
static void test_warm_start(void) {
  bool large_blocks = hl_alloc_large_block_bytes(1 << 20) != 0;
  hl_runner_options_t o = defaults();
  hl_runner_t *r = NULL;
  size_t before = hl_alloc_large_fresh_bytes();
  HL_ASSERT_OK(hl_runner_create(parse_add(1536), true, MPI_COMM_SELF, &o, &r));  // 6 MiB
  HL_ASSERT_OK(hl_runner_start(r));
  // The warm thread's mapping, seen through the allocator's count (it
  // takes milliseconds; the limit only keeps a broken warm start from
  // hanging the test).
  for (int i = 0; large_blocks && i < 20000; i++) {
    if (hl_alloc_large_fresh_bytes() - before >= (size_t)6 << 20) break;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  if (large_blocks) CU_ASSERT_TRUE(hl_alloc_large_fresh_bytes() - before >= (size_t)6 << 20);
  size_t fresh = first_run_fresh_bytes(r, 1536);
  if (large_blocks) CU_ASSERT_EQUAL(fresh, 0);
  hl_runner_free(r, false);

  o.no_warm_start = true;
  before = hl_alloc_large_fresh_bytes();
  HL_ASSERT_OK(hl_runner_create(parse_add(2560), true, MPI_COMM_SELF, &o, &r));  // 10 MiB
  HL_ASSERT_OK(hl_runner_start(r));
  CU_ASSERT_EQUAL(hl_alloc_large_fresh_bytes(), before);
  fresh = first_run_fresh_bytes(r, 2560);
  if (large_blocks) CU_ASSERT_TRUE(fresh > 0);
  hl_runner_free(r, false);
}

static CU_TestInfo tests[] = {
    {"warm_start", test_warm_start},
    {"owned_module_fused", test_owned_module_fused},
    {"borrowed_module_untouched", test_borrowed_module_untouched},
    {"check_nans_keeps_instructions", test_check_nans_keeps_instructions},
    {"errors", test_errors},
    {"profile_first_run_apart", test_profile_first_run_apart},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  return hl_mpi_test_run("runner", tests);
}
