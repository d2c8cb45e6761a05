// Element-wise results take over the buffer of an operand that dies at the
// instruction (hl_kernel_reuse_operand in runtime/kernels/kernel.c), and only
// then: values still used later, used twice by the same instruction, or
// owned by the caller keep their buffers. Expected values are hand-worked.
// hl-test-libs: hl_exec hl_text hl_verifier hl_ir hl_base
#include <string.h>

#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static hl_literal_t *f32_vec(const float *v, int n) {
  hl_shape_t s = hl_shape_array(HL_F32, 1, (int64_t[]){n});
  hl_literal_t *lit = NULL;
  if (hl_literal_create(&s, &lit)) return NULL;
  memcpy(lit->data, v, sizeof(float) * (size_t)n);
  return lit;
}

// Runs `text` on a = {1, 2, 3}, b = {4, 5, 6}; returns the result and the donations made.
static hl_literal_t *run(const char *text, int64_t *donated) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "test", &m));
  float av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
  hl_literal_t *args[2] = {f32_vec(av, 3), f32_vec(bv, 3)}, *out = NULL;
  hl_exec_stats_reset();
  HL_ASSERT_OK(hl_execute(m, NULL, args, 2, &out));
  *donated = hl_exec_stats().buffers_donated;
  // The caller's arguments were only borrowed and are unchanged.
  CU_ASSERT_EQUAL(args[0]->refcount, 1);
  CU_ASSERT_EQUAL(((float *)args[0]->data)[0], 1.0f);
  CU_ASSERT_EQUAL(((float *)args[1]->data)[2], 6.0f);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(m);
  return out;
}

static void test_chain_reuses_dying_operands(void) {
  int64_t donated = -1;
  hl_literal_t *r = run("HloModule m\nENTRY e {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
                        "  t = f32[3] add(a, b)\n  u = f32[3] multiply(t, b)\n"
                        "  ROOT n = f32[3] negate(u)\n}\n",
                        &donated);
  // t dies at u, u dies at n; a and b belong to the caller.
  CU_ASSERT_EQUAL(donated, 2);
  float want[3] = {-20, -35, -54};  // -((a + b) * b)
  CU_ASSERT_EQUAL(memcmp(r->data, want, sizeof(want)), 0);
  hl_literal_release(r);
}

static void test_live_or_doubled_operands_are_kept(void) {
  int64_t donated = -1;
  // t is used again by the root: the multiply must not write into it.
  hl_literal_t *r = run("HloModule m\nENTRY e {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
                        "  t = f32[3] add(a, b)\n  u = f32[3] multiply(t, b)\n"
                        "  ROOT out = (f32[3], f32[3]) tuple(t, u)\n}\n",
                        &donated);
  CU_ASSERT_EQUAL(donated, 0);
  float t[3] = {5, 7, 9}, u[3] = {20, 35, 54};
  CU_ASSERT_EQUAL(memcmp(r->elements[0]->data, t, sizeof(t)), 0);
  CU_ASSERT_EQUAL(memcmp(r->elements[1]->data, u, sizeof(u)), 0);
  hl_literal_release(r);
  // add(t, t): t is both operands, so neither may be overwritten mid-loop.
  r = run("HloModule m\nENTRY e {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
          "  t = f32[3] add(a, b)\n  ROOT d = f32[3] add(t, t)\n}\n",
          &donated);
  CU_ASSERT_EQUAL(donated, 0);
  float d[3] = {10, 14, 18};
  CU_ASSERT_EQUAL(memcmp(r->data, d, sizeof(d)), 0);
  hl_literal_release(r);
}

static void test_type_change_is_not_reused(void) {
  int64_t donated = -1;
  // is-finite gives pred from f32: different type, no reuse.
  hl_literal_t *r = run("HloModule m\nENTRY e {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
                        "  t = f32[3] add(a, b)\n  ROOT f = pred[3] is-finite(t)\n}\n",
                        &donated);
  CU_ASSERT_EQUAL(donated, 0);
  CU_ASSERT_EQUAL(r->shape.dtype, HL_PRED);
  CU_ASSERT_EQUAL(((uint8_t *)r->data)[2], 1);
  hl_literal_release(r);
}

static CU_TestInfo tests[] = {
    {"chain_reuses_dying_operands", test_chain_reuses_dying_operands},
    {"live_or_doubled_operands_are_kept", test_live_or_doubled_operands_are_kept},
    {"type_change_is_not_reused", test_type_change_is_not_reused},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("operand_reuse", tests)
