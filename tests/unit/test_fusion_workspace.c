// Blocked programs' workspaces (runtime/fusion/fusion_program.h, issue 24):
// an arena grows to what a block took (at most the program's upper bound,
// and no further in later runs), programs sharing a set hold the larger of
// their needs rather than the sum, the warm start touches only small
// arenas, and results keep their bits whichever set a program runs with
// (checked against the op-by-op path and against values worked out here).
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

// y = 2a + 1 over f32[64,256]: a few nodes, a small arena.
static const char *kSmall =
    "HloModule small\nfused {\n  a = f32[64,256] parameter(0)\n  two = f32[] constant(2)\n"
    "  one = f32[] constant(1)\n  b2 = f32[64,256] broadcast(two), dimensions={}\n"
    "  b1 = f32[64,256] broadcast(one), dimensions={}\n  m = f32[64,256] multiply(a, b2)\n"
    "  ROOT y = f32[64,256] add(m, b1)\n}\nENTRY main {\n  p = f32[64,256] parameter(0)\n"
    "  ROOT f = f32[64,256] fusion(p), kind=kLoop, calls=fused\n}\n";

// A longer chain over f32[256,1024] with a row vector broadcast and a
// transposed operand (index maps: evaluated through index arrays).
static const char *kBig =
    "HloModule big\nfused {\n  a = f32[256,1024] parameter(0)\n  v = f32[1024] parameter(1)\n"
    "  t = f32[1024,256] parameter(2)\n  bv = f32[256,1024] broadcast(v), dimensions={1}\n"
    "  tt = f32[256,1024] transpose(t), dimensions={1,0}\n  m = f32[256,1024] multiply(a, bv)\n"
    "  s = f32[256,1024] add(m, tt)\n  e = f32[256,1024] tanh(s)\n"
    "  d = f32[256,1024] subtract(e, tt)\n  q = f32[256,1024] multiply(d, d)\n"
    "  ROOT r = f32[256,1024] add(q, bv)\n}\nENTRY main {\n  p0 = f32[256,1024] parameter(0)\n"
    "  p1 = f32[1024] parameter(1)\n  p2 = f32[1024,256] parameter(2)\n"
    "  ROOT f = f32[256,1024] fusion(p0, p1, p2), kind=kLoop, calls=fused\n}\n";

typedef struct program_case {
  hl_module_t *module;
  hl_fusion_program_t *program;
  hl_literal_t *args[3];
  int arg_count;
  hl_literal_t *reference;  // the op-by-op path's result
} program_case_t;

static void case_open(program_case_t *c, const char *text) {
  // The interpreted blocked path only: a region runs interpreted until its
  // compiled loop is ready (in the background) and takes other arena space
  // than the loop, so with the JIT the sizes compared below would depend on
  // the compile's timing (about 1 run in 6 failed).
  setenv("HL_NO_FUSION_JIT", "1", 1);
  memset(c, 0, sizeof(*c));
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "ws.hlo", &c->module));
  HL_ASSERT_OK(hl_verify_module(c->module));
  const hl_computation_t *fused = hl_module_find_computation(c->module, "fused");
  const char *why = NULL;
  HL_ASSERT_OK(hl_fusion_program_compile(fused, &c->program, &why));
  CU_ASSERT_PTR_NOT_NULL_FATAL(c->program);
  c->arg_count = fused->parameter_count;
  for (int i = 0; i < c->arg_count; i++) {
    HL_ASSERT_OK(hl_literal_create_uninitialized(&fused->parameters[i]->shape, &c->args[i]));
    int64_t n = hl_literal_element_count(c->args[i]);
    for (int64_t k = 0; k < n; k++)  // small integers: 2a + 1 is exact
      hl_literal_set_f64(c->args[i], k, (double)((k * 7 + i * 3) % 41) - 20.0);
  }
  hl_exec_options_t ref = {.no_fusion_blocking = true};
  HL_ASSERT_OK(hl_execute(c->module, &ref, c->args, c->arg_count, &c->reference));
}

static void case_close(program_case_t *c) {
  hl_fusion_program_destroy(c->program);
  for (int i = 0; i < c->arg_count; i++) hl_literal_release(c->args[i]);
  hl_literal_release(c->reference);
  hl_module_destroy(c->module);
}

// Runs the case's program and checks its bits against the op-by-op path.
static void case_run(program_case_t *c, hl_thread_pool_t *pool) {
  hl_literal_t *got = NULL;
  HL_ASSERT_OK(hl_fusion_program_run(c->program, c->args, c->arg_count, pool, &got));
  CU_ASSERT_TRUE(hl_literal_equal(c->reference, got));
  hl_literal_release(got);
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

// A program's own arena: what its blocks take, within its upper bound, and
// settled after the first run (later runs allocate nothing more).
static void test_arena_real_need(void) {
  program_case_t c;
  case_open(&c, kBig);
  CU_ASSERT_EQUAL(hl_fusion_program_workspace_bytes(c.program), 0);
  case_run(&c, NULL);
  size_t first = hl_fusion_program_workspace_bytes(c.program);
  CU_ASSERT_TRUE(first > 0);
  CU_ASSERT_TRUE(first <= ((hl_fusion_program_arena_bound(c.program) + 4095) & ~(size_t)4095));
  case_run(&c, NULL);
  CU_ASSERT_EQUAL(hl_fusion_program_workspace_bytes(c.program), first);
  case_close(&c);

  // Hand-checked values of the small program: y = 2a + 1.
  case_open(&c, kSmall);
  hl_literal_t *got = NULL;
  HL_ASSERT_OK(hl_fusion_program_run(c.program, c.args, 1, NULL, &got));
  const float *a = c.args[0]->data, *y = got->data;
  int bad = 0;
  for (int64_t k = 0; k < 64 * 256; k++) bad += y[k] != 2 * a[k] + 1;
  CU_ASSERT_EQUAL(bad, 0);
  hl_literal_release(got);
  case_close(&c);
}

// Two programs sharing a set hold the larger need, not the sum, on one
// worker and on two; the bits are those of the op-by-op path throughout.
static void test_shared_set(void) {
  program_case_t small, big;
  case_open(&small, kSmall);
  case_open(&big, kBig);
  case_run(&small, NULL);
  case_run(&big, NULL);
  size_t need_small = hl_fusion_program_workspace_bytes(small.program);
  size_t need_big = hl_fusion_program_workspace_bytes(big.program);
  CU_ASSERT_TRUE(need_small > 0 && need_small < need_big);

  hl_fusion_workspaces_t *set = hl_fusion_workspaces_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(set);
  hl_fusion_program_use_workspaces(small.program, set);  // drops its own set
  hl_fusion_program_use_workspaces(big.program, set);
  CU_ASSERT_EQUAL(hl_fusion_workspaces_arena_bytes(set), 0);
  case_run(&small, NULL);
  CU_ASSERT_EQUAL(hl_fusion_workspaces_arena_bytes(set), need_small);
  case_run(&big, NULL);
  CU_ASSERT_EQUAL(hl_fusion_workspaces_arena_bytes(set), max_size(need_small, need_big));
  case_run(&small, NULL);
  case_run(&big, NULL);
  CU_ASSERT_EQUAL(hl_fusion_program_workspace_bytes(small.program), need_big);
  CU_ASSERT_EQUAL(hl_fusion_workspaces_arena_bytes(set), max_size(need_small, need_big));

  // Two workers: each worker's arena is at most the largest block's need.
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(2, &pool));
  for (int round = 0; round < 2; round++) {
    case_run(&big, pool);
    case_run(&small, pool);
  }
  size_t two = hl_fusion_workspaces_arena_bytes(set);
  CU_ASSERT_TRUE(two >= need_big && two <= 2 * need_big);
  hl_thread_pool_destroy(pool);

  case_close(&small);
  case_close(&big);
  hl_fusion_workspaces_destroy(set);  // after the programs that used it
}

// The warm start makes a small program's arena resident at its bound and
// leaves a large one to the first run (which sizes it by what it takes).
static void test_warm(void) {
  program_case_t small, big;
  case_open(&small, kSmall);
  case_open(&big, kBig);
  CU_ASSERT_TRUE(hl_fusion_program_arena_bound(small.program) <= ((size_t)256 << 10));
  CU_ASSERT_TRUE(hl_fusion_program_arena_bound(big.program) > ((size_t)256 << 10));
  HL_ASSERT_OK(hl_fusion_program_warm(small.program));
  HL_ASSERT_OK(hl_fusion_program_warm(big.program));
  size_t warm_small = hl_fusion_program_workspace_bytes(small.program);
  CU_ASSERT_EQUAL(warm_small,
                  (hl_fusion_program_arena_bound(small.program) + 4095) & ~(size_t)4095);
  CU_ASSERT_EQUAL(hl_fusion_program_workspace_bytes(big.program), 0);
  case_run(&small, NULL);  // the bound holds what the blocks take: no growth
  CU_ASSERT_EQUAL(hl_fusion_program_workspace_bytes(small.program), warm_small);
  case_run(&big, NULL);
  CU_ASSERT_TRUE(hl_fusion_program_workspace_bytes(big.program) > 0);
  case_close(&small);
  case_close(&big);
}

static CU_TestInfo tests[] = {
    {"arena_real_need", test_arena_real_need},
    {"shared_set", test_shared_set},
    {"warm", test_warm},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fusion_workspace", tests)
