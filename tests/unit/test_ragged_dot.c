// ragged-dot (runtime/kernels/ragged_dot.c): XLA's three modes (ragged
// non-contracting, contracting and batch dimension), positions past the
// group total (zero), and errors. Expected values from numpy: a loop of
// per-group matmuls (lhs[i] @ rhs[group(i)], L[:, grp] @ R[grp], einsum).
#include "tests/unit/hlo_run_util.h"
#include "tests/unit/kernel_test_util.h"

#define M1_INPUTS                                                                           \
  "  l = f64[5,2] constant({{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}})\n"                    \
  "  r = f64[3,2,2] constant({{{1, 0}, {0, 1}}, {{9, 9}, {9, 9}}, {{2, 1}, {-1, 3}}})\n"

// numpy: rows 0-1 use rhs[0] (identity), group 1 is empty, rows 2-3 use
// rhs[2], row 4 is past the total 4 and stays 0.
static void test_mode1_non_contracting(void) {
  hr_expect("HloModule m\nENTRY e {\n" M1_INPUTS
            "  g = s64[3] constant({2, 0, 2})\n"
            "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
            "f64[5,2]", "{{1, 2}, {3, 4}, {4, 23}, {6, 31}, {0, 0}}");
}

// numpy: np.stack([L[:, 0:1] @ R[0:1], L[:, 1:4] @ R[1:4]]), R = arange(12).reshape(4,3) - 5.
static void test_mode2_contracting(void) {
  hr_expect("HloModule m\nENTRY e {\n"
            "  l = f32[2,4] constant({{1, 2, 3, 4}, {5, 6, 7, 8}})\n"
            "  r = f32[4,3] constant({{-5, -4, -3}, {-2, -1, 0}, {1, 2, 3}, {4, 5, 6}})\n"
            "  g = s32[2] constant({1, 3})\n"
            "  ROOT o = f32[2,2,3] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={0}, lhs_ragged_dims={1}, rhs_group_dims={}\n}\n",
            "f32[2,2,3]",
            "{{{-5, -4, -3}, {-25, -20, -15}}, {{15, 24, 33}, {27, 48, 69}}}");
}

// numpy: einsum('bmk,bkn->bmn') with batch 2 past the total 2 zeroed.
static void test_mode3_batch(void) {
  hr_expect("HloModule m\nENTRY e {\n"
            "  l = f32[3,1,2] constant({{{0, 1}}, {{2, 3}}, {{4, 5}}})\n"
            "  r = f32[3,2,1] constant({{{1}, {2}}, {{3}, {4}}, {{5}, {6}}})\n"
            "  g = s32[2] constant({1, 1})\n"
            "  ROOT o = f32[3,1,1] ragged-dot(l, r, g), lhs_batch_dims={0}, "
            "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, "
            "lhs_ragged_dims={0}, rhs_group_dims={}\n}\n",
            "f32[3,1,1]", "{{{2}}, {{18}}, {{0}}}");
}

// numpy: (l[m] @ r[j]).astype(np.int8) per row: s8 wraps (100 * 2 = 200 -> -56).
static void test_integer_wrap(void) {
  hr_expect("HloModule m\nENTRY e {\n"
            "  l = s8[2,2] constant({{100, 0}, {-3, 4}})\n"
            "  r = s8[2,2,2] constant({{{2, 1}, {0, 1}}, {{1, 0}, {0, -1}}})\n"
            "  g = u32[2] constant({1, 1})\n"
            "  ROOT o = s8[2,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
            "s8[2,2]", "{{-56, 100}, {-3, -4}}");
}

// group_sizes [b, g]: batch 0 splits m as {2, 0}, batch 1 as {0, 1} (row 1
// of batch 1 is past the total). numpy: o[b, m] = L[b, m] @ R[group, b].
static void test_group_sizes_per_batch(void) {
  hr_expect("HloModule m\nENTRY e {\n"
            "  l = f32[2,2,1] constant({{{1}, {2}}, {{3}, {4}}})\n"
            "  r = f32[2,2,1,1] constant({{{{10}}, {{20}}}, {{{30}}, {{40}}}})\n"
            "  g = s32[2,2] constant({{2, 0}, {0, 1}})\n"
            "  ROOT o = f32[2,2,1] ragged-dot(l, r, g), lhs_batch_dims={0}, "
            "lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={2}, "
            "lhs_ragged_dims={1}, rhs_group_dims={0}\n}\n",
            "f32[2,2,1]", "{{{10}, {20}}, {{120}, {0}}}");
  hr_expect_error("HloModule m\nENTRY e {\n"
                  "  l = f32[2,2,1] constant({{{1}, {2}}, {{3}, {4}}})\n"
                  "  r = f32[2,2,1,1] constant({{{{10}}, {{20}}}, {{{30}}, {{40}}}})\n"
                  "  g = s32[2,2] constant({{2, 0}, {0, -1}})\n"
                  "  ROOT o = f32[2,2,1] ragged-dot(l, r, g), lhs_batch_dims={0}, "
                  "lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={2}, "
                  "lhs_ragged_dims={1}, rhs_group_dims={0}\n}\n",
                  "group_sizes element 3 = -1 is negative");
}

static void test_errors(void) {
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = s64[3] constant({2, -1, 2})\n"
                  "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
                  "group_sizes[1] = -1 is negative");
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = s64[3] constant({2, 0, 2})\n"
                  "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={}\n}\n",
                  "needs one rhs_group_dims entry");
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = s64[2] constant({2, 2})\n"
                  "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
                  "group_sizes has 2");
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = s64[3] constant({2, 0, 2})\n"
                  "  ROOT o = f64[5,3] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
                  "result dimensions do not match mode 1");
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = f32[3] constant({2, 0, 2})\n"
                  "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n",
                  "group_sizes) must be an integer array");
  hr_expect_error("HloModule m\nENTRY e {\n" M1_INPUTS
                  "  g = s64[3] constant({2, 0, 2})\n"
                  "  ROOT o = f64[5,2] ragged-dot(l, r, g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}\n}\n",
                  "lhs_ragged_dims must have exactly one entry");
}

static CU_TestInfo tests[] = {
    {"mode1_non_contracting", test_mode1_non_contracting},
    {"mode2_contracting", test_mode2_contracting},
    {"mode3_batch", test_mode3_batch},
    {"integer_wrap", test_integer_wrap},
    {"group_sizes_per_batch", test_group_sizes_per_batch},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("ragged_dot", tests)
