// scan (runtime/kernels/scan.c) and its attributes in the text parser,
// printer and proto loader / writer (num_carries, is_reverse,
// is_associative: HloInstructionProto fields 95, 94, 96). Expected values are
// hand-worked (running sums / products, written next to each case).
// hl-test-libs: hl_base hl_ir hl_text hl_proto hl_verifier hl_exec
#include <string.h>

#include "hlo.pb-c.h"
#include "runtime/base/alloc.h"
#include "runtime/proto/proto_io.h"
#include "runtime/text/hlo_printer.h"
#include "tests/unit/hlo_run_util.h"
#include "tests/unit/kernel_test_util.h"
#include "tests/unit/proto_test_util.h"

#define ADD_F32                                  \
  "add {\n  x = f32[] parameter(0)\n"            \
  "  acc = f32[] parameter(1)\n"                 \
  "  s = f32[] add(acc, x)\n"                    \
  "  ROOT t = (f32[], f32[]) tuple(s, s)\n}\n"

static void test_cumulative_sum(void) {
  // 1, 1+2, 1+2+3, 1+2+3+4; the final carry is the total.
  hr_expect("HloModule m\n" ADD_F32 "ENTRY e {\n  x = f32[4] constant({1, 2, 3, 4})\n"
            "  i = f32[] constant(0)\n"
            "  ROOT r = (f32[4], f32[]) scan(x, i), dimensions={0}, num_carries=1, to_apply=add\n}\n",
            "(f32[4], f32[])", "({1, 3, 6, 10}, 10)");
  // Reverse: position i holds the sum of x[i..3]; the init is added too.
  hr_expect("HloModule m\n" ADD_F32 "ENTRY e {\n  x = f32[4] constant({1, 2, 3, 4})\n"
            "  i = f32[] constant(100)\n"
            "  ROOT r = (f32[4], f32[]) scan(x, i), dimensions={0}, num_carries=1,"
            " is_reverse=true, is_associative=true, to_apply=add\n}\n",
            "(f32[4], f32[])", "({110, 109, 107, 104}, 110)");
}

static void test_order_is_sequential(void) {
  // c' = 10*c + x is not associative; forward gives 1, 12, 123, reverse 3, 32, 321.
  const char *body = "d {\n  x = s32[] parameter(0)\n  c = s32[] parameter(1)\n"
                     "  ten = s32[] constant(10)\n  m = s32[] multiply(c, ten)\n"
                     "  n = s32[] add(m, x)\n  ROOT t = (s32[], s32[]) tuple(n, n)\n}\n";
  char hlo[1024];
  snprintf(hlo, sizeof(hlo),
           "HloModule m\n%sENTRY e {\n  x = s32[3] constant({1, 2, 3})\n  z = s32[] constant(0)\n"
           "  ROOT r = (s32[3], s32[]) scan(x, z), dimensions={0}, num_carries=1,"
           " is_associative=true, to_apply=d\n}\n", body);
  hr_expect(hlo, "(s32[3], s32[])", "({1, 12, 123}, 123)");
  snprintf(hlo, sizeof(hlo),
           "HloModule m\n%sENTRY e {\n  x = s32[3] constant({1, 2, 3})\n  z = s32[] constant(0)\n"
           "  ROOT r = (s32[3], s32[]) scan(x, z), dimensions={0}, num_carries=1,"
           " is_reverse=true, to_apply=d\n}\n", body);
  hr_expect(hlo, "(s32[3], s32[])", "({321, 32, 3}, 321)");
}

static void test_two_inputs_two_carries_middle_dim(void) {
  // Inputs [2,3,1] scanned over dimension 1; carries: running sum of a and
  // running max of b, per row. Outputs: the sum, and b unchanged (the body
  // returns its parameter, so the kernel must not refill a slice it holds).
  hr_expect("HloModule m\nb {\n  a = s64[2,1] parameter(0)\n  b = s64[2,1] parameter(1)\n"
            "  s = s64[2,1] parameter(2)\n  mx = s64[2,1] parameter(3)\n"
            "  s2 = s64[2,1] add(s, a)\n  m2 = s64[2,1] maximum(mx, b)\n"
            "  ROOT t = (s64[2,1], s64[2,1], s64[2,1], s64[2,1]) tuple(s2, b, s2, m2)\n}\n"
            "ENTRY e {\n  a = s64[2,3,1] constant({{{1}, {2}, {3}}, {{10}, {20}, {30}}})\n"
            "  b = s64[2,3,1] constant({{{5}, {-1}, {7}}, {{-4}, {-9}, {-2}}})\n"
            "  s = s64[2,1] constant({{0}, {0}})\n  mx = s64[2,1] constant({{-100}, {-100}})\n"
            "  ROOT r = (s64[2,3,1], s64[2,3,1], s64[2,1], s64[2,1]) scan(a, b, s, mx),"
            " dimensions={1}, num_carries=2, to_apply=b\n}\n",
            "(s64[2,3,1], s64[2,3,1], s64[2,1], s64[2,1])",
            "({{{1}, {3}, {6}}, {{10}, {30}, {60}}}, {{{5}, {-1}, {7}}, {{-4}, {-9}, {-2}}},"
            " {{6}, {60}}, {{7}, {-2}})");
}

static void test_empty_and_single_value_results(void) {
  // Zero-length scan: to_apply never runs; the carry is the init.
  hr_expect("HloModule m\n" ADD_F32 "ENTRY e {\n  x = f32[0] constant({})\n"
            "  i = f32[] constant(5)\n"
            "  ROOT r = (f32[0], f32[]) scan(x, i), dimensions={0}, num_carries=1, to_apply=add\n}\n",
            "(f32[0], f32[])", "({}, 5)");
  // No output, one carry: the result is the final carry itself (a product).
  hr_expect("HloModule m\nmul {\n  x = u32[] parameter(0)\n  c = u32[] parameter(1)\n"
            "  ROOT p = u32[] multiply(c, x)\n}\nENTRY e {\n  x = u32[4] constant({2, 3, 4, 5})\n"
            "  one = u32[] constant(1)\n"
            "  ROOT r = u32[] scan(x, one), dimensions={0}, num_carries=1, to_apply=mul\n}\n",
            "u32[]", "120");
}

static void test_errors(void) {
  const char *head = "HloModule m\n" ADD_F32 "ENTRY e {\n  x = f32[3] constant({1, 2, 3})\n"
                     "  i = f32[] constant(0)\n";
  char hlo[1024];
  snprintf(hlo, sizeof(hlo), "%s  ROOT r = (f32[3], f32[]) scan(x, i), dimensions={0},"
           " num_carries=-1, to_apply=add\n}\n", head);
  hr_expect_error(hlo, "num_carries=-1 must be between 0 and the operand count 2");
  snprintf(hlo, sizeof(hlo), "%s  ROOT r = (f32[3], f32[]) scan(x, i), dimensions={1},"
           " num_carries=1, to_apply=add\n}\n", head);
  hr_expect_error(hlo, "attribute dimensions must name one dimension below rank 1");
  snprintf(hlo, sizeof(hlo), "%s  ROOT r = (f32[3], f32[]) scan(x, i), dimensions={0},"
           " num_carries=2, to_apply=add\n}\n", head);
  hr_expect_error(hlo, "scan needs at least one input");
  snprintf(hlo, sizeof(hlo), "%s  ROOT r = (f32[4], f32[]) scan(x, i), dimensions={0},"
           " num_carries=1, to_apply=add\n}\n", head);
  hr_expect_error(hlo, "output 0 f32[4] must be to_apply's output f32[] with 3 inserted at "
                  "dimension 0");
  snprintf(hlo, sizeof(hlo), "%s  ROOT r = (f32[3], f64[]) scan(x, i), dimensions={0},"
           " num_carries=1, to_apply=add\n}\n", head);
  hr_expect_error(hlo, "carry 0 of the result is f64[], its init is f32[]");
  // to_apply returns one value but the scan asks for an output and a carry.
  hr_expect_error("HloModule m\nneg {\n  x = f32[] parameter(0)\n  c = f32[] parameter(1)\n"
                  "  ROOT n = f32[] negate(x)\n}\nENTRY e {\n  x = f32[3] constant({1, 2, 3})\n"
                  "  i = f32[] constant(0)\n  ROOT r = (f32[3], f32[]) scan(x, i),"
                  " dimensions={0}, num_carries=1, to_apply=neg\n}\n",
                  "and to_apply 'neg' root f32[] must both hold the outputs and 1 carries");
}

// The kernel's own checks, for instructions that did not pass the verifier.
static void test_kernel_errors(void) {
  kt_reset();
  int64_t d3[] = {3};
  double v[] = {1, 2, 3}, zero = 0;
  hl_instruction_t *inst = kt_inst(HL_OP_SCAN, HL_F32, 0, NULL);
  kt_set_operand_count(inst, 2);
  HL_ASSERT_OK(hl_i64_list_set(&inst->attrs.dimensions, (int64_t[]){0}, 1));
  hl_literal_t *ops[2] = {kt_lit_f64(HL_F32, 1, d3, v), kt_lit_f64(HL_F32, 0, NULL, &zero)};
  hl_literal_t *out = NULL;
  inst->attrs.num_carries = 5;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_scan(NULL, inst, ops, &out),
                           "num_carries=5 must be between 0 and the operand count 2");
  inst->attrs.num_carries = 1;  // no output, one f32[] carry: the result f32[] fits
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_scan(NULL, inst, ops, &out), "has no to_apply computation");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(ops[0]);
  hl_literal_release(ops[1]);
}

static void test_text_and_proto_round_trip(void) {
  const char *text =
      "HloModule m\n" ADD_F32
      "ENTRY e {\n  x = f32[3] constant({1, 2, 3})\n  i = f32[] constant(0)\n"
      "  sc_rev = (f32[3], f32[]) scan(x, i), dimensions={0}, num_carries=1, is_reverse=true,"
      " is_associative=false, to_apply=add\n"
      "  sc_fwd = (f32[3], f32[]) scan(x, i), dimensions={0}, num_carries=1, is_associative=true,"
      " to_apply=add\n"
      "  ROOT t = ((f32[3], f32[]), (f32[3], f32[])) tuple(sc_rev, sc_fwd)\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  hl_instruction_t *s = hl_computation_find_instruction(m->entry, "sc_rev");
  hl_instruction_t *u = hl_computation_find_instruction(m->entry, "sc_fwd");
  CU_ASSERT_FATAL(s != NULL && u != NULL);
  CU_ASSERT_EQUAL(s->attrs.num_carries, 1);
  CU_ASSERT_TRUE(s->attrs.is_reverse);
  CU_ASSERT_EQUAL(s->attrs.is_associative, 2);  // TRI_STATE_FALSE
  CU_ASSERT_FALSE(u->attrs.is_reverse);
  CU_ASSERT_EQUAL(u->attrs.is_associative, 1);  // TRI_STATE_TRUE

  char *printed = hr_print_module(m);
  CU_ASSERT_PTR_NOT_NULL(strstr(printed, "num_carries=1, is_reverse=true, is_associative=false"));
  CU_ASSERT_PTR_NOT_NULL(strstr(printed, "dimensions={0}, num_carries=1, is_associative=true"));

  // text -> module -> text is stable.
  hl_module_t *again = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(printed, strlen(printed), "printed.hlo", &again));
  char *printed2 = hr_print_module(again);
  CU_ASSERT_STRING_EQUAL(printed, printed2);

  // module -> HloProto: fields 94 / 95 / 96 as XLA names them ...
  uint8_t *bytes = NULL;
  size_t n = 0;
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(m, &bytes, &n));
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, n, bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
  const Xla__HloInstructionProto *ps = hl_test_find_instruction_proto(hp->hlo_module, "sc_rev");
  const Xla__HloInstructionProto *pu = hl_test_find_instruction_proto(hp->hlo_module, "sc_fwd");
  CU_ASSERT_FATAL(ps != NULL && pu != NULL);
  CU_ASSERT_TRUE(ps->is_reverse);
  CU_ASSERT_EQUAL(ps->num_carries, 1);
  CU_ASSERT_EQUAL(ps->is_associative, XLA__TRI_STATE__TRI_STATE_FALSE);
  CU_ASSERT_FALSE(pu->is_reverse);
  CU_ASSERT_EQUAL(pu->is_associative, XLA__TRI_STATE__TRI_STATE_TRUE);
  xla__hlo_proto__free_unpacked(hp, NULL);

  // ... and back: proto -> module -> text gives the same text.
  hl_module_t *from_proto = NULL;
  HL_ASSERT_OK(hl_proto_decode(bytes, n, HL_PROTO_HLO_PROTO, "rt", &from_proto, NULL, NULL));
  char *printed3 = hr_print_module(from_proto);
  CU_ASSERT_STRING_EQUAL(printed, printed3);

  hl_free(bytes);
  hl_free(printed);
  hl_free(printed2);
  hl_free(printed3);
  hl_module_destroy(m);
  hl_module_destroy(again);
  hl_module_destroy(from_proto);
}

static CU_TestInfo tests[] = {
    {"cumulative_sum", test_cumulative_sum},
    {"order_is_sequential", test_order_is_sequential},
    {"two_inputs_two_carries_middle_dim", test_two_inputs_two_carries_middle_dim},
    {"empty_and_single_value_results", test_empty_and_single_value_results},
    {"errors", test_errors},
    {"kernel_errors", test_kernel_errors},
    {"text_and_proto_round_trip", test_text_and_proto_round_trip},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("scan", tests)
