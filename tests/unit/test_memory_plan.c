// The entry plan's memory walk (runtime/exec/memory_plan.c) and the
// executable's warm start (issue 24). Expected figures are worked out by hand
// from the programs below and the executor's documented sharing rules, not
// from the walk itself; the warm start is checked against the allocator's
// own count of freshly mapped bytes during a real first run. Kernels'
// scratch (kernels/kernel_scratch.h): the figures worked out from each
// kernel's documented buffers (convolution.c's im2col path, dot.c's 16-bit
// panels), and a first run after the warm start of programs made mostly of
// scratch (a grouped convolution, a bf16 dot) mapping nothing fresh.
// hl-test-libs: hl_exec hl_text hl_ir hl_base
#include "runtime/base/alloc.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/memory_plan.h"
#include "runtime/exec/plan.h"
#include "runtime/exec/profile.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/threads/thread_pool.h"
#include "tests/unit/test_util.h"

enum { kMiB = 1 << 20 };

// With R rows of 1024 f32 (R * 4 KiB each array):
//   a, b parameters; t = a + b and u = t * a (t has two users, so neither
//   is inside an element-wise chain, elementwise_chains.h); e = exp(t) takes
//   t over (t dies there, hl_kernel_reuse_operand); s = e + u takes e over
//   (both die there); u is released; r = concatenate(s, s), twice the size:
//   the cache holds only u's block, too small, whose pages it gathers.
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
  HL_ASSERT_OK(hl_memory_plan_build(plan, 1, &mp));
  CU_ASSERT_EQUAL(mp.parameter_bytes, 4 * kMiB);
  CU_ASSERT_EQUAL(mp.result_bytes, 4 * kMiB);
  // At r: a, b (4 MiB) + s (2) + r (4) = 10 MiB; at u: a, b, t, u = 8 MiB.
  CU_ASSERT_EQUAL(mp.live_peak_bytes, 10 * kMiB);
  // t and u fresh; e and s take t's over; r (4 MiB) gathers u's 2 MiB
  // block, the other 2 MiB fresh.
  // (Under AddressSanitizer every array is malloc's: no large blocks.)
  CU_ASSERT_EQUAL_FATAL(mp.fresh_block_count, large_blocks() ? 3 : 0);
  if (large_blocks()) {
    CU_ASSERT_EQUAL(mp.fresh_blocks[0], (size_t)2 * kMiB);
    CU_ASSERT_EQUAL(mp.fresh_blocks[1], (size_t)2 * kMiB);
    CU_ASSERT_EQUAL(mp.fresh_blocks[2], (size_t)2 * kMiB);
  }
  hl_memory_plan_deinit(&mp);
  hl_plan_destroy(plan);
  hl_module_destroy(m);

  m = parse(chain_program(512, text, sizeof text));
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  HL_ASSERT_OK(hl_memory_plan_build(plan, 1, &mp));
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
  HL_ASSERT_OK(hl_memory_plan_build(plan, 1, &mp));
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

// Grouped convolution (b01f_01io->b01f: the pixel-major im2col path), batch
// `n`: x f32[n,28,28,128], k f32[3,3,32,128] in 4 groups, y like x. Its
// scratch: the im2col tables (2 x 3 x 28 int64), the packed kernel W2
// (288 x 128 f32) and colT, n*784 rows of K = 32 * 9 = 288 f32 (the rows of
// a 4 MiB chunk: 3640, more than n*784 for n <= 4).
static const char *conv_program(int n, char *buf, size_t len) {
  snprintf(buf, len,
           "HloModule m\n"
           "ENTRY main {\n"
           "  x = f32[%d,28,28,128] parameter(0)\n"
           "  k = f32[3,3,32,128] parameter(1)\n"
           "  ROOT y = f32[%d,28,28,128] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f, feature_group_count=4\n"
           "}\n",
           n, n);
  return buf;
}

// A bf16 product [m,512] x [512,1024] -> bf16 [m,1024]: f32 in panels
// (dot.c). m = 1024: row tiles of 256 (gemm_tiles.c: 4 tiles, m >= n), the
// rhs shared by them widened whole (512 x 1024 f32 = 2 MiB), a panel per
// thread of 256 lhs rows (256 x 512 f32) and 256 rows of sums (256 x 1024).
static const char *bf16_dot_program(int m, char *buf, size_t len) {
  snprintf(buf, len,
           "HloModule m\n"
           "ENTRY main {\n"
           "  a = bf16[%d,512] parameter(0)\n"
           "  b = bf16[512,1024] parameter(1)\n"
           "  ROOT c = bf16[%d,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "}\n",
           m, m);
  return buf;
}

static void test_kernel_scratch_declared(void) {
  char text[1024];
  hl_module_t *m = parse(conv_program(4, text, sizeof text));
  hl_plan_t *plan = NULL;
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  hl_memory_plan_t mp;
  HL_ASSERT_OK(hl_memory_plan_build(plan, 1, &mp));
  int64_t x = 4 * 28 * 28 * 128 * 4, k = 3 * 3 * 32 * 128 * 4;
  int64_t scratch = 2 * 3 * 28 * 8 + 288 * 128 * 4 + (int64_t)4 * 784 * 288 * 4;
  CU_ASSERT_EQUAL(mp.live_peak_bytes, x + k + x);  // the bound: values only
  CU_ASSERT_EQUAL(mp.scratch_peak_bytes, scratch);
  CU_ASSERT_EQUAL(mp.with_scratch_peak_bytes, x + k + x + scratch);
  // Large blocks, all fresh: y (1.53 MiB), then the scratch buffers that
  // are large (alloc.c's threshold: the 144 KiB weights and colT, 3.45 MiB).
  size_t want[4] = {(size_t)x, 2 * 3 * 28 * 8, 288 * 128 * 4, (size_t)4 * 784 * 288 * 4};
  int large = 0;
  for (int i = 0; i < 4; i++) large += hl_alloc_large_block_bytes(want[i]) != 0;
  CU_ASSERT_EQUAL(large, large_blocks() ? 3 : 0);
  CU_ASSERT_EQUAL_FATAL(mp.fresh_block_count, large);
  for (int i = 0, j = 0; i < 4; i++)
    if (hl_alloc_large_block_bytes(want[i]))
      CU_ASSERT_EQUAL(mp.fresh_blocks[j++], hl_alloc_large_block_bytes(want[i]));
  hl_memory_plan_deinit(&mp);
  hl_plan_destroy(plan);
  hl_module_destroy(m);

  m = parse(bf16_dot_program(1024, text, sizeof text));
  HL_ASSERT_OK(hl_plan_create(m->entry, &plan));
  for (int threads = 1; threads <= 2; threads++) {
    HL_ASSERT_OK(hl_memory_plan_build(plan, threads, &mp));
    int64_t shared = 512 * 1024 * 4, panel = (256 * 512 + 256 * 1024) * 4;
    CU_ASSERT_EQUAL(mp.scratch_peak_bytes, shared + threads * panel + 1);
    CU_ASSERT_EQUAL(mp.live_peak_bytes, (1024 * 512 + 512 * 1024 + 1024 * 1024) * 2);
    hl_memory_plan_deinit(&mp);
  }
  hl_plan_destroy(plan);
  hl_module_destroy(m);
  // --profile's line for it (profile.h).
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_profile_format_scratch(3 * kMiB + kMiB / 2, 19 * kMiB / 2, &sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb),
                         "  kernels' scratch: up to 3.5 MiB in one instruction; values and "
                         "scratch 9.5 MiB at once at most\n");
  hl_strbuf_deinit(&sb);
}

static hl_literal_t *ramp(hl_dtype_t t, int rank, const int64_t *dims) {
  hl_shape_t s = hl_shape_array(t, rank, dims);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&s, &lit));
  int64_t n = hl_literal_element_count(lit);
  for (int64_t i = 0; i < n; i++) {
    float v = (float)(i % 13) * 0.0625f - 0.375f;
    if (t == HL_F32) {
      ((float *)lit->data)[i] = v;
    } else {  // bf16: the high half of the f32 (exact for these values)
      uint32_t u;
      memcpy(&u, &v, 4);
      ((uint16_t *)lit->data)[i] = (uint16_t)(u >> 16);
    }
  }
  return lit;
}

// Runs `text` once on fresh arguments; *fresh: the large bytes it mapped.
static hl_literal_t *run_once(const char *text, bool warm, int threads, size_t *fresh) {
  hl_module_t *m = parse(text);
  hl_literal_t *args[2];
  for (int i = 0; i < 2; i++) {
    const hl_shape_t *s = &m->entry->parameters[i]->shape;
    args[i] = ramp(s->dtype, s->rank, s->dims);
  }
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
  hl_exec_options_t o = {.pool = pool};
  hl_executable_t *exe = NULL;
  HL_ASSERT_OK(hl_executable_create(m, &exe));
  hl_executable_set_threads(exe, threads);
  if (warm) {
    hl_executable_warm_start(exe);
    int64_t bound = 0, params = 0;
    CU_ASSERT_TRUE(hl_executable_live_set_bound(exe, &bound, &params));  // waits for it
  }
  size_t start = hl_alloc_large_fresh_bytes();
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_executable_run(exe, &o, args, 2, &out));
  *fresh = hl_alloc_large_fresh_bytes() - start;
  hl_executable_destroy(exe);
  hl_thread_pool_destroy(pool);
  for (int i = 0; i < 2; i++) hl_literal_release(args[i]);
  hl_module_destroy(m);
  return out;
}

// A first run after the warm start maps nothing fresh for programs whose
// largest buffers are their kernels' scratch, where one without it maps
// them; sizes grow from run to run so that blocks cached from earlier runs
// cannot serve them.
static void test_warm_start_covers_kernel_scratch(void) {
  if (!large_blocks()) return;  // AddressSanitizer: every block is malloc's
  char text[1024];
  size_t fresh = 0;
  hl_literal_release(run_once(conv_program(2, text, sizeof text), false, 1, &fresh));
  CU_ASSERT_TRUE(fresh > 0);
  hl_literal_release(run_once(conv_program(4, text, sizeof text), true, 1, &fresh));
  CU_ASSERT_EQUAL(fresh, 0);
  hl_literal_release(run_once(bf16_dot_program(1536, text, sizeof text), false, 2, &fresh));
  CU_ASSERT_TRUE(fresh > 0);
  hl_literal_release(run_once(bf16_dot_program(2048, text, sizeof text), true, 2, &fresh));
  CU_ASSERT_EQUAL(fresh, 0);
}

static CU_TestInfo tests[] = {
    {"warm_start_covers_kernel_scratch", test_warm_start_covers_kernel_scratch},
    {"kernel_scratch_declared", test_kernel_scratch_declared},
    {"warm_start_first_run_maps_nothing", test_warm_start_first_run_maps_nothing},
    {"live_set_and_fresh_blocks", test_live_set_and_fresh_blocks},
    {"small_arrays_have_no_blocks", test_small_arrays_have_no_blocks},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("memory_plan", tests)
