// The entry plan's memory walk (runtime/exec/memory_plan.c) and the
// executable's warm start (issue 24). Expected figures are worked out by hand
// from the programs below and the executor's documented sharing rules, not
// from the walk itself; the warm start is checked against the allocator's
// own count of freshly mapped bytes during a real first run.
// hl-test-libs: hl_exec hl_text hl_ir hl_base
#include "runtime/base/alloc.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/memory_plan.h"
#include "runtime/exec/plan.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

enum { kMiB = 1 << 20 };

// With R rows of 1024 f32 (R * 4 KiB each array):
//   a, b parameters; t = a + b and u = t * a (t has two users, so neither
//   is inside an element-wise chain, elementwise_chains.h); e = exp(t) takes
//   t over (t dies there, hl_kernel_reuse_operand); s = e + u takes e over
//   (both die there); u is released; r = concatenate(s, s), twice the size:
//   new, the cache holding only u's block, too small.
//   Largest set alive: a, b, s, r = 2 + 1 + 2 arrays (a, b, t, u: 4).
static const char *program(int rows, char *buf, size_t n) {
  snprintf(buf, n,
           "HloModule m\n"
           "ENTRY main {\n"
           "  a = f32[%d,1024] parameter(0)\n"
           "  b = f32[%d,1024] parameter(1)\n"
           "  t = f32[%d,1024] add(a, b)\n"
           "  u = f32[%d,1024] multiply(t, a)\n"
           "  e = f32[%d,1024] exponential(t)\n"
           "  s = f32[%d,1024] add(e, u)\n"
           "  ROOT r = f32[%d,1024] concatenate(s, s), dimensions={0}\n"
           "}\n",
           rows, rows, rows, rows, rows, rows, 2 * rows);
  return buf;
}

// The same values as a chain: x = a + b, y = x * b, z = exp(y) each with
// one user form one blocked chain rooted at z; only z exists (2 arrays
// alive with a, b; one fresh block).
static const char *chain_program(int rows, char *buf, size_t n) {
  snprintf(buf, n,
           "HloModule m\n"
           "ENTRY main {\n"
           "  a = f32[%d,1024] parameter(0)\n"
           "  b = f32[%d,1024] parameter(1)\n"
           "  x = f32[%d,1024] add(a, b)\n"
           "  y = f32[%d,1024] multiply(x, b)\n"
           "  ROOT z = f32[%d,1024] exponential(y)\n"
           "}\n",
           rows, rows, rows, rows, rows);
  return buf;
}

// Large arrays have mappings of their own (not under AddressSanitizer).
static bool large_blocks(void) { return hl_alloc_large_block_bytes(kMiB) != 0; }

static hl_module_t *parse(const char *text) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "<test>", &m));
  return m;
}

static void test_live_set_and_fresh_blocks(void) {
  char text[1024];
  hl_module_t *m = parse(program(512, text, sizeof text));  // 2 MiB arrays
  hl_plan_t *plan = NULL;
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  hl_memory_plan_t mp;
  HL_ASSERT_OK(hl_memory_plan_build(plan, &mp));
  CU_ASSERT_EQUAL(mp.parameter_bytes, 4 * kMiB);
  CU_ASSERT_EQUAL(mp.result_bytes, 4 * kMiB);
  // At r: a, b (4 MiB) + s (2) + r (4) = 10 MiB; at u: a, b, t, u = 8 MiB.
  CU_ASSERT_EQUAL(mp.live_peak_bytes, 10 * kMiB);
  // t and u fresh; e and s take t's over; r fresh (u's block is 2 MiB).
  // (Under AddressSanitizer every array is malloc's: no large blocks.)
  CU_ASSERT_EQUAL_FATAL(mp.fresh_block_count, large_blocks() ? 3 : 0);
  if (large_blocks()) {
    CU_ASSERT_EQUAL(mp.fresh_blocks[0], (size_t)2 * kMiB);
    CU_ASSERT_EQUAL(mp.fresh_blocks[1], (size_t)2 * kMiB);
    CU_ASSERT_EQUAL(mp.fresh_blocks[2], (size_t)4 * kMiB);
  }
  hl_memory_plan_deinit(&mp);
  hl_plan_destroy(plan);
  hl_module_destroy(m);

  m = parse(chain_program(512, text, sizeof text));
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  HL_ASSERT_OK(hl_memory_plan_build(plan, &mp));
  CU_ASSERT_EQUAL(mp.live_peak_bytes, 6 * kMiB);
  CU_ASSERT_EQUAL(mp.result_bytes, 2 * kMiB);
  CU_ASSERT_EQUAL_FATAL(mp.fresh_block_count, large_blocks() ? 1 : 0);
  if (large_blocks()) CU_ASSERT_EQUAL(mp.fresh_blocks[0], (size_t)2 * kMiB);
  hl_memory_plan_deinit(&mp);
  hl_plan_destroy(plan);
  hl_module_destroy(m);

  m = parse(program(512, text, sizeof text));
  int64_t bound = 0, params = 0;
  hl_executable_t *exe = NULL;
  HL_ASSERT_OK(hl_executable_create(m, &exe));
  CU_ASSERT_TRUE(hl_executable_live_set_bound(exe, &bound, &params));
  CU_ASSERT_EQUAL(bound, 10 * kMiB);
  CU_ASSERT_EQUAL(params, 4 * kMiB);
  hl_executable_destroy(exe);
  hl_module_destroy(m);
}

// Small arrays come from malloc: no large blocks, the bound still counted.
static void test_small_arrays_have_no_blocks(void) {
  char text[1024];
  hl_module_t *m = parse(program(4, text, sizeof text));  // 16 KiB arrays
  hl_plan_t *plan = NULL;
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  hl_memory_plan_t mp;
  HL_ASSERT_OK(hl_memory_plan_build(plan, &mp));
  CU_ASSERT_EQUAL(mp.fresh_block_count, 0);
  CU_ASSERT_EQUAL(mp.live_peak_bytes, 5 * 16 * 1024);  // a, b, s and r (2 arrays)
  hl_memory_plan_deinit(&mp);
  hl_plan_destroy(plan);
  hl_module_destroy(m);
}

static hl_literal_t *filled(int rows, float v) {
  hl_shape_t s = hl_shape_array(HL_F32, 2, (int64_t[]){rows, 1024});
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&s, &lit));
  float *d = lit->data;
  for (int64_t i = 0; i < (int64_t)rows * 1024; i++) d[i] = v + (float)(i % 7) * 0.125f;
  return lit;
}

// A first run after the warm start maps nothing fresh, while one without it
// does, and the results agree. Sizes grow from run to run so
// that blocks the allocator cached from earlier ones cannot serve them.
static void test_warm_start_first_run_maps_nothing(void) {
  char text[1024];
  hl_module_t *cold = parse(program(1024, text, sizeof text));  // 4 MiB arrays
  hl_module_t *warm = parse(program(2048, text, sizeof text));  // 8 MiB arrays
  hl_exec_options_t o = {0};

  hl_literal_t *args_cold[2] = {filled(1024, 0.5f), filled(1024, -0.25f)};
  hl_executable_t *exe = NULL;
  HL_ASSERT_OK(hl_executable_create(cold, &exe));
  size_t before = hl_alloc_large_fresh_bytes();
  hl_literal_t *out_cold = NULL;
  HL_ASSERT_OK(hl_executable_run(exe, &o, args_cold, 2, &out_cold));
  if (large_blocks())  // without it: fresh mappings
    CU_ASSERT_TRUE(hl_alloc_large_fresh_bytes() > before);
  hl_executable_destroy(exe);

  hl_literal_t *args[2] = {filled(2048, 0.5f), filled(2048, -0.25f)};
  HL_ASSERT_OK(hl_executable_create(warm, &exe));
  hl_executable_warm_start(exe);
  int64_t bound = 0, params = 0;
  CU_ASSERT_TRUE(hl_executable_live_set_bound(exe, &bound, &params));  // waits for it
  size_t start = hl_alloc_large_fresh_bytes();
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_executable_run(exe, &o, args, 2, &out));
  CU_ASSERT_EQUAL(hl_alloc_large_fresh_bytes(), start);

  // The first rows hold the same inputs in both sizes: the same results.
  const float *a = out->data, *c = out_cold->data;
  CU_ASSERT_EQUAL(memcmp(a, c, sizeof(float) * 1024 * 16), 0);
  hl_literal_release(out);
  hl_literal_release(out_cold);
  hl_executable_destroy(exe);
  for (int i = 0; i < 2; i++) {
    hl_literal_release(args[i]);
    hl_literal_release(args_cold[i]);
  }
  hl_module_destroy(cold);
  hl_module_destroy(warm);
}

static CU_TestInfo tests[] = {
    {"warm_start_first_run_maps_nothing", test_warm_start_first_run_maps_nothing},
    {"live_set_and_fresh_blocks", test_live_set_and_fresh_blocks},
    {"small_arrays_have_no_blocks", test_small_arrays_have_no_blocks},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("memory_plan", tests)
