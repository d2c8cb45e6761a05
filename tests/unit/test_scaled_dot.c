// scaled-dot (runtime/kernels/scaled_dot.c): block-scaled operands,
// dequantized then contracted. Expected values are hand-worked (each case
// shows the dequantized operands), exact in f32.
// hl-test-libs: hl_base hl_ir hl_text hl_verifier hl_exec
#include "tests/unit/hlo_run_util.h"
#include "tests/unit/kernel_test_util.h"

static void test_f8_blocks_along_contracting(void) {
  // lhs_deq = {{1*2, 2*2, 0.5*0.5, -1.5*0.5}, {3, -2, 0.25*4, 4*4}} = {{2, 4, 0.25, -0.75}, {3, -2, 1, 16}}
  // rhs_deq = {{1, 1, 2, 2}, {0.125, -0.25, 16, 8}}
  // r[0][0] = 2 + 4 + 0.5 - 1.5 = 5; r[0][1] = 0.25 - 1 + 4 - 6 = -2.75
  // r[1][0] = 3 - 2 + 2 + 32 = 35;  r[1][1] = 0.375 + 0.5 + 16 + 128 = 144.875
  hr_expect("HloModule m\nENTRY e {\n"
            "  l = f8e4m3fn[2,4] constant({{1, 2, 0.5, -1.5}, {3, -2, 0.25, 4}})\n"
            "  r = f8e4m3fn[2,4] constant({{1, 1, 1, 1}, {0.5, -1, 2, 1}})\n"
            "  ls = f8e8m0fnu[2,2] constant({{2, 0.5}, {1, 4}})\n"
            "  rs = f8e8m0fnu[2,2] constant({{1, 2}, {0.25, 8}})\n"
            "  ROOT d = f32[2,2] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
            " rhs_contracting_dims={1}\n}\n",
            "f32[2,2]", "{{5, -2.75}, {35, 144.875}}");
}

static void test_blocks_along_free_dimension(void) {
  // lhs_scale [2,1] over lhs [4,1]: rows 0-1 times 10, rows 2-3 times 100;
  // rhs_deq = 1 * 2.
  hr_expect("HloModule m\nENTRY e {\n  l = f32[4,1] constant({{1}, {2}, {3}, {4}})\n"
            "  r = f32[1,1] constant({{1}})\n  ls = f32[2,1] constant({{10}, {100}})\n"
            "  rs = f32[1,1] constant({{2}})\n"
            "  ROOT d = f32[4,1] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
            " rhs_contracting_dims={0}\n}\n",
            "f32[4,1]", "{{20}, {40}, {600}, {800}}");
}

static void test_rank0_scale_is_ignored(void) {
  // XLA's ScaledDotRewriter returns an operand with a rank-0 scale as is:
  // 1*3 + 2*(4*2) = 19 (not 1900).
  hr_expect("HloModule m\nENTRY e {\n  l = f32[1,2] constant({{1, 2}})\n"
            "  r = f32[2,1] constant({{3}, {4}})\n  ls = f32[] constant(100)\n"
            "  rs = f32[2,1] constant({{1}, {2}})\n"
            "  ROOT d = f32[1,1] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
            " rhs_contracting_dims={0}\n}\n",
            "f32[1,1]", "{{19}}");
}

static void test_empty_contracting_and_f64(void) {
  // An empty sum is zero.
  hr_expect("HloModule m\nENTRY e {\n  l = f32[2,0] constant({{}, {}})\n"
            "  r = f32[2,0] constant({{}, {}})\n  ls = f32[2,0] constant({{}, {}})\n"
            "  rs = f32[1,0] constant({{}})\n"
            "  ROOT d = f32[2,2] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
            " rhs_contracting_dims={1}\n}\n",
            "f32[2,2]", "{{0, 0}, {0, 0}}");
  // f64 result: 0.1*3 + 0.2*3 computed in double (f32 products would round
  // 0.1 first): 0.30000000000000004 + 0.6000000000000001.
  hr_expect("HloModule m\nENTRY e {\n  l = f64[1,2] constant({{0.1, 0.2}})\n"
            "  r = f64[2,1] constant({{1}, {1}})\n  ls = f64[1,1] constant({{3}})\n"
            "  rs = f64[1,1] constant({{1}})\n"
            "  ROOT d = f64[1,1] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
            " rhs_contracting_dims={0}\n}\n",
            "f64[1,1]", "{{0.9000000000000001}}");
}

static void test_errors(void) {
  hr_expect_error("HloModule m\nENTRY e {\n  l = f32[2,4] constant({{1, 2, 3, 4}, {5, 6, 7, 8}})\n"
                  "  r = f32[2,4] constant({{1, 1, 1, 1}, {2, 2, 2, 2}})\n"
                  "  ls = f32[2,3] constant({{1, 1, 1}, {1, 1, 1}})\n"
                  "  rs = f32[2,1] constant({{1}, {1}})\n"
                  "  ROOT d = f32[2,2] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
                  " rhs_contracting_dims={1}\n}\n",
                  "lhs_scale dimension 1 (3) does not divide lhs dimension 1 (4)");
  hr_expect_error("HloModule m\nENTRY e {\n  l = f32[2,4] constant({{1, 2, 3, 4}, {5, 6, 7, 8}})\n"
                  "  r = f32[2,4] constant({{1, 1, 1, 1}, {2, 2, 2, 2}})\n"
                  "  ls = f32[2,1] constant({{1}, {1}})\n  rs = f32[2] constant({1, 1})\n"
                  "  ROOT d = f32[2,2] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
                  " rhs_contracting_dims={1}\n}\n",
                  "rhs_scale f32[2] must have the rank of rhs f32[2,4]");
  // The dimension numbers are checked as a dot's.
  hr_expect_error("HloModule m\nENTRY e {\n  l = f32[2,4] constant({{1, 2, 3, 4}, {5, 6, 7, 8}})\n"
                  "  r = f32[2,4] constant({{1, 1, 1, 1}, {2, 2, 2, 2}})\n"
                  "  ls = f32[2,1] constant({{1}, {1}})\n  rs = f32[2,1] constant({{1}, {1}})\n"
                  "  ROOT d = f32[2,2] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1},"
                  " rhs_contracting_dims={0}\n}\n",
                  "contracting dimension 0: lhs size 4 != rhs size 2");
  hr_expect_error("HloModule m\nENTRY e {\n  l = f32[1,1] constant({{1}})\n"
                  "  ROOT d = s32[1,1] scaled-dot(l, l, l, l), lhs_contracting_dims={1},"
                  " rhs_contracting_dims={0}\n}\n",
                  "floating-point results only");

  // The six-operand form (NVFP4 global scales) is refused by the kernel.
  kt_reset();
  int64_t d11[] = {1, 1};
  double one = 1;
  hl_instruction_t *inst = kt_inst(HL_OP_SCALED_DOT, HL_F32, 2, d11);
  kt_set_operand_count(inst, 6);
  hl_literal_t *x = kt_lit_f64(HL_F32, 2, d11, &one), *out = NULL;
  hl_literal_t *ops[6] = {x, x, x, x, x, x};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_scaled_dot(NULL, inst, ops, &out), "global scales");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(x);
}

static CU_TestInfo tests[] = {
    {"f8_blocks_along_contracting", test_f8_blocks_along_contracting},
    {"blocks_along_free_dimension", test_blocks_along_free_dimension},
    {"rank0_scale_is_ignored", test_rank0_scale_is_ignored},
    {"empty_contracting_and_f64", test_empty_contracting_and_f64},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("scaled_dot", tests)
