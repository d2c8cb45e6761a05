// The debugging observer (runtime/debug/debug_observer.c) on the real
// executor: the stack and while iterations it keeps in a rank state file,
// its flight recorder, and the NaN / Inf checks (nonfinite_check.c) with
// expected values worked out by hand from the programs.
// hl-test-libs: hl_debug hl_collectives hl_verifier hl_text hl_exec hl_ir hl_base
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/debug/debug_observer.h"
#include "runtime/debug/hang_report.h"
#include "runtime/debug/nonfinite_check.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

static hl_status_t run_observed(const char *hlo, hl_debug_observer_options_t *o,
                                hl_literal_t **out) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(hlo, strlen(hlo), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_debug_observer_t *obs = NULL;
  HL_ASSERT_OK(hl_debug_observer_create(o, &obs));
  hl_exec_options_t opts = {.observer = hl_debug_observer_base(obs)};
  hl_status_t st = hl_execute(m, &opts, NULL, 0, out);
  hl_debug_observer_destroy(obs);
  hl_module_destroy(m);
  return st;
}

// Iteration i (0..4) computes 1 / (i - 3): Inf in iteration 3.
static const char kLoop[] =
    "HloModule m\n"
    "cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  n = s32[] constant(5)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  x = f32[2] get-tuple-element(s), index=1\n  three = s32[] constant(3)\n"
    "  d = s32[] subtract(i, three)\n  fd = f32[] convert(d)\n  one = f32[] constant(1)\n"
    "  q = f32[] divide(one, fd)\n  qb = f32[2] broadcast(q), dimensions={}\n"
    "  y = f32[2] add(x, qb)\n  k = s32[] constant(1)\n  i2 = s32[] add(i, k)\n"
    "  ROOT t = (s32[], f32[2]) tuple(i2, y)\n}\n"
    "ENTRY e {\n  z = s32[] constant(0)\n  x = f32[2] constant({1, 2})\n"
    "  p = (s32[], f32[2]) tuple(z, x)\n"
    "  ROOT loop = (s32[], f32[2]) while(p), condition=cond, body=body\n}\n";

static void test_check_infs_in_loop(void) {
  hl_debug_observer_options_t o = {.check_infs = true};
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(run_observed(kLoop, &o, &out),
                           "--check-infs: instruction 'q' (divide) in computation 'body' at "
                           "t.hlo:16:3 produced Inf (iteration 3 of loop): first at index []; "
                           "result f32[] has 0 NaN and 1 Inf of 1 elements; operand 0 ('one') "
                           "f32[] min 1 max 1, 0 NaN, 0 Inf; operand 1 ('fd') f32[] min 0 max "
                           "0, 0 NaN, 0 Inf");
  CU_ASSERT_PTR_NULL(out);
}

static void test_check_nans_passes_infs(void) {
  // Only NaNs are looked for: the Inf runs through; x + sum over i of
  // 1 / (i - 3) = x + (-1/3 - 1/2 - 1 + inf + 1) = inf.
  hl_debug_observer_options_t o = {.check_nans = true};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run_observed(kLoop, &o, &out));
  CU_ASSERT_TRUE(out && out->shape.tuple_count == 2);
  if (out) CU_ASSERT_TRUE(hl_literal_get_f64(out->elements[1], 0) > 1e300);
  hl_literal_release(out);
}

static void test_state_records_loop_and_stack(void) {
  char path[] = "/tmp/hl-test-state-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  close(fd);
  hl_rank_state_t *state = NULL;
  HL_ASSERT_OK(hl_rank_state_create(path, 5, "t.hlo", &state));
  hl_debug_observer_options_t o = {.state = state};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run_observed(kLoop, &o, &out));
  hl_literal_release(out);
  hl_rank_state_t copy;
  HL_ASSERT_OK(hl_rank_state_read(path, &copy));
  CU_ASSERT_EQUAL(copy.rank, 5);
  CU_ASSERT_EQUAL(copy.depth, 0);              // every frame popped
  CU_ASSERT_EQUAL(copy.frames[0].iteration, 4);  // the loop's last frame: 5 iterations
  CU_ASSERT_EQUAL(copy.events_written, 0);     // no collective in the program
  CU_ASSERT_STRING_EQUAL(copy.program, "t.hlo");
  hl_rank_state_close(state);
  unlink(path);
}

// A plain instruction is not called for: the walk stores its id into the
// marker, the frame above the stack. After the run the marker at depth 0
// holds the entry's last instruction, the one at depth 1 the loop's last
// (the condition's compare), and a report of that state names the former.
static void test_marker_names_last_plain_instruction(void) {
  static const char kHlo[] =
      "HloModule m\n"
      "cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  n = s32[] constant(2)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
      "body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  x = f32[2] get-tuple-element(s), index=1\n  k = s32[] constant(1)\n"
      "  i2 = s32[] add(i, k)\n  ROOT t = (s32[], f32[2]) tuple(i2, x)\n}\n"
      "ENTRY e {\n  z = s32[] constant(0)\n  x = f32[2] constant({1, 2})\n"
      "  p = (s32[], f32[2]) tuple(z, x)\n"
      "  loop = (s32[], f32[2]) while(p), condition=cond, body=body\n"
      "  ROOT last = f32[2] get-tuple-element(loop), index=1\n}\n";
  char path[] = "/tmp/hl-test-state-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  close(fd);
  hl_rank_state_t *state = NULL;
  HL_ASSERT_OK(hl_rank_state_create(path, 0, "t.hlo", &state));
  CU_ASSERT_EQUAL(state->frames[0].id, HL_RANK_STATE_NO_ID);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kHlo, strlen(kHlo), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_debug_observer_t *obs = NULL;
  hl_debug_observer_options_t o = {.state = state};
  HL_ASSERT_OK(hl_debug_observer_create(&o, &obs));
  hl_exec_options_t opts = {.observer = hl_debug_observer_base(obs)};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_execute(m, &opts, NULL, 0, &out));
  hl_literal_release(out);
  hl_rank_state_t copy;
  HL_ASSERT_OK(hl_rank_state_read(path, &copy));
  CU_ASSERT_EQUAL(copy.depth, 0);
  const hl_instruction_t *last = hl_rank_state_find_instruction(m, copy.frames[0].id);
  const hl_instruction_t *inner = hl_rank_state_find_instruction(m, copy.frames[1].id);
  CU_ASSERT_TRUE_FATAL(last && inner);
  CU_ASSERT_STRING_EQUAL(last->name, "last");
  CU_ASSERT_STRING_EQUAL(inner->name, "lt");
  copy.phase = HL_PHASE_RUNNING;  // as if it stopped there
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_hang_report_rank(&copy, m, 1, 1, hl_rank_state_now_ns(), NULL, &sb);
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&sb), "\nsummary computes in last "));
  hl_strbuf_deinit(&sb);
  hl_debug_observer_destroy(obs);
  hl_module_destroy(m);
  hl_rank_state_close(state);
  unlink(path);
}

// The watchdog's observer and --trace leave element-wise chains to their
// one blocked pass (runtime/exec/elementwise_chains.h: interior values never
// exist); the NaN checks read every value, so the walk runs them op by op.
static void test_chains_blocked_unless_values_wanted(void) {
  static const char kHlo[] =
      "HloModule m\nENTRY e {\n  p = f32[8192] parameter(0)\n  a = f32[8192] add(p, p)\n"
      "  b = f32[8192] multiply(a, p)\n  ROOT c = f32[8192] negate(b)\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kHlo, strlen(kHlo), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape("f32[8192]", &shape));
  hl_literal_t *arg = NULL;
  HL_ASSERT_OK(hl_literal_create(&shape, &arg));
  hl_trace_recorder_t *t = NULL;
  HL_ASSERT_OK(hl_trace_recorder_create(100, &t));
  hl_debug_observer_options_t modes[3] = {{.trace = t}, {.check_nans = true}, {0}};
  int64_t executed[3];
  for (int k = 0; k < 3; k++) {
    hl_debug_observer_t *obs = NULL;
    HL_ASSERT_OK(hl_debug_observer_create(&modes[k], &obs));
    hl_exec_options_t opts = {.observer = hl_debug_observer_base(obs)};
    hl_literal_t *out = NULL;
    hl_exec_stats_reset();
    HL_ASSERT_OK(hl_execute(m, &opts, &arg, 1, &out));
    executed[k] = hl_exec_stats().instructions_executed;
    hl_literal_release(out);
    hl_debug_observer_destroy(obs);
  }
  CU_ASSERT_EQUAL(executed[0], 2);  // p, and c for the chain a -> b -> c
  CU_ASSERT_EQUAL(executed[1], 4);
  CU_ASSERT_EQUAL(executed[2], 2);
  CU_ASSERT_EQUAL(hl_trace_recorder_count(t), 1 + 2);  // the run's start, p, c
  hl_trace_recorder_destroy(t);
  hl_literal_release(arg);
  hl_module_destroy(m);
}

static void test_nonfinite_summaries(void) {
  // bf16 and c64 leaves of a tuple: the NaN is in leaf 1 (c64) element [1,0].
  hl_module_t *m = NULL;
  const char *hlo = "HloModule m\nENTRY e {\n  a = bf16[2] constant({1, -3})\n"
                    "  b = c64[2,1] constant({{(1, 2)}, {(0, nan)}})\n"
                    "  ROOT t = (bf16[2], c64[2,1]) tuple(a, b)\n}\n";
  HL_ASSERT_OK(hl_parse_hlo_module(hlo, strlen(hlo), "t.hlo", &m));
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, NULL, 0, &out));
  const hl_instruction_t *root = m->entry->root;
  hl_literal_t *operands[2] = {out->elements[0], out->elements[1]};
  HL_ASSERT_ERROR_CONTAINS(hl_nonfinite_check(root, operands, 2, out, true, false, NULL),
                           "produced NaN: first at index [1,0] of tuple leaf 1; result "
                           "c64[2,1] has 1 NaN and 0 Inf of 2 elements; operand 0 ('a') bf16[2] "
                           "min -3 max 1, 0 NaN, 0 Inf; operand 1 ('b') c64[2,1] min 0 max 2, 1 "
                           "NaN, 0 Inf");
  CU_ASSERT_PTR_NULL(hl_nonfinite_check(root, operands, 2, out, false, true, NULL));
  hl_literal_release(out);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"check_infs_in_loop", test_check_infs_in_loop},
    {"check_nans_passes_infs", test_check_nans_passes_infs},
    {"state_records_loop_and_stack", test_state_records_loop_and_stack},
    {"nonfinite_summaries", test_nonfinite_summaries},
    {"chains_blocked_unless_values_wanted", test_chains_blocked_unless_values_wanted},
    {"marker_names_last_plain_instruction", test_marker_names_last_plain_instruction},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("debug_observer", tests)
