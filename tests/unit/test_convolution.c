// hl_kernel_convolution (runtime/kernels/convolution.c). Expected values:
// the StableHLO spec example and small cases worked by hand (noted at each);
// lhs-dilated ones also against NumPy in tests/integration/test_convolution_holes.py;
// the numpy-checked cases live in tests/ops/convolution_*.hlo.
#include "runtime/base/alloc.h"
#include "tests/unit/hlo_run_util.h"
#include "tests/unit/kernel_test_util.h"

static void test_spec_example(void) {
  // StableHLO spec "convolution" example.
  hr_expect("HloModule m\nENTRY e {\n"
            "  lhs = s64[1,4,4,1] constant({{{{1},{2},{5},{6}},{{3},{4},{7},{8}},"
            "{{10},{11},{14},{15}},{{12},{13},{16},{17}}}})\n"
            "  rhs = s64[3,3,1,1] constant({{{{1}},{{1}},{{1}}},{{{1}},{{1}},{{1}}},"
            "{{{1}},{{1}},{{1}}}})\n"
            "  ROOT r = s64[1,2,2,1] convolution(lhs, rhs), window={size=3x3 stride=4x4 "
            "lhs_dilate=2x2}, dim_labels=b01f_01io->b01f\n}\n",
            "s64[1,2,2,1]", "{{{{10},{26}},{{46},{62}}}}");
}

static void test_padding_and_reversal_1d(void) {
  // Hand-worked: padded x = [0,1,2,3,4], kernel [1,10]: windows give
  // 0+10, 1+20, 2+30, 3+40; reversed kernel [10,1]: 1, 12, 23, 34.
  const char *fmt = "HloModule m\nENTRY e {\n"
                    "  x = f32[1,1,4] constant({{{1,2,3,4}}})\n"
                    "  k = f32[1,1,2] constant({{{1,10}}})\n"
                    "  ROOT r = f32[1,1,4] convolution(x, k), window={size=2 pad=1_0%s}, "
                    "dim_labels=bf0_oi0->bf0\n}\n";
  char buf[512];
  snprintf(buf, sizeof(buf), fmt, "");
  hr_expect(buf, "f32[1,1,4]", "{{{10,21,32,43}}}");
  snprintf(buf, sizeof(buf), fmt, " rhs_reversal=1");
  hr_expect(buf, "f32[1,1,4]", "{{{1,12,23,34}}}");
  // Negative padding crops: pad=-1_0 leaves [2,3,4] -> 2+30, 3+40.
  hr_expect("HloModule m\nENTRY e {\n  x = f32[1,1,4] constant({{{1,2,3,4}}})\n"
            "  k = f32[1,1,2] constant({{{1,10}}})\n"
            "  ROOT r = f32[1,1,2] convolution(x, k), window={size=2 pad=-1_0}, "
            "dim_labels=bf0_oi0->bf0\n}\n",
            "f32[1,1,2]", "{{{32,43}}}");
}

static void test_lhs_dilation_1d(void) {
  // Hand-worked (the per-phase path): x = [1,2,3] dilated by 2 and padded
  // 2_2 is [0,0,1,0,2,0,3,0,0]; kernel [1,10,100]: each window meets one or
  // two real elements: 100, 10, 1+200, 20, 2+300, 30, 3.
  const char *fmt = "HloModule m\nENTRY e {\n"
                    "  x = f32[1,1,3] constant({{{1,2,3}}})\n"
                    "  k = f32[1,1,3] constant({{{1,10,100}}})\n"
                    "  ROOT r = %s convolution(x, k), window={size=3 pad=2_2 lhs_dilate=2%s}, "
                    "dim_labels=bf0_oi0->bf0\n}\n";
  char buf[512];
  snprintf(buf, sizeof(buf), fmt, "f32[1,1,7]", "");
  hr_expect(buf, "f32[1,1,7]", "{{{100,10,201,20,302,30,3}}}");
  // Reversed kernel [100,10,1]: 1, 10, 100+2, 20, 200+3, 30, 300.
  snprintf(buf, sizeof(buf), fmt, "f32[1,1,7]", " rhs_reversal=1");
  hr_expect(buf, "f32[1,1,7]", "{{{1,10,102,20,203,30,300}}}");
  // Stride 3: windows at 0, 3, 6 of the padded row: 100, 20, 3.
  snprintf(buf, sizeof(buf), fmt, "f32[1,1,3]", " stride=3");
  hr_expect(buf, "f32[1,1,3]", "{{{100,20,3}}}");
  // rhs_dilate 2 with lhs_dilate 2: output 1 reads only holes (a phase with
  // no real tap, zero); [1,0,2,0,3] with taps at 0 and 2: 1+20, 0, 2+30.
  hr_expect("HloModule m\nENTRY e {\n  x = f32[1,1,3] constant({{{1,2,3}}})\n"
            "  k = f32[1,1,2] constant({{{1,10}}})\n"
            "  ROOT r = f32[1,1,3] convolution(x, k), window={size=2 lhs_dilate=2 "
            "rhs_dilate=2}, dim_labels=bf0_oi0->bf0\n}\n",
            "f32[1,1,3]", "{{{21,0,32}}}");
}

static void test_groups(void) {
  // feature_group_count=2: channel 0 times 1, channel 1 times 2 (1x1 kernel).
  hr_expect("HloModule m\nENTRY e {\n"
            "  x = f32[1,2,3] constant({{{1,2,3},{10,20,30}}})\n"
            "  k = f32[2,1,1] constant({{{1}},{{2}}})\n"
            "  ROOT r = f32[1,2,3] convolution(x, k), window={size=1}, "
            "dim_labels=bf0_oi0->bf0, feature_group_count=2\n}\n",
            "f32[1,2,3]", "{{{1,2,3},{20,40,60}}}");
  // batch_group_count=2: output feature 0 reads batch 0, feature 1 batch 1.
  hr_expect("HloModule m\nENTRY e {\n"
            "  x = f32[2,1,3] constant({{{1,2,3}},{{10,20,30}}})\n"
            "  k = f32[2,1,1] constant({{{3}},{{-1}}})\n"
            "  ROOT r = f32[1,2,3] convolution(x, k), window={size=1}, "
            "dim_labels=bf0_oi0->bf0, batch_group_count=2\n}\n",
            "f32[1,2,3]", "{{{3,6,9},{-10,-20,-30}}}");
}

static void test_types(void) {
  // s8 accumulates in 64 bits and keeps the low bits: 100 + 100 = 200 -> -56.
  hr_expect("HloModule m\nENTRY e {\n  x = s8[1,1,2] constant({{{100,100}}})\n"
            "  k = s8[1,1,2] constant({{{1,1}}})\n"
            "  ROOT r = s8[1,1,1] convolution(x, k), window={size=2}, "
            "dim_labels=bf0_oi0->bf0\n}\n",
            "s8[1,1,1]", "{{{-56}}}");
  // f16: summed in f32 (2049) and rounded once to nearest even: 2048.
  hr_expect("HloModule m\nENTRY e {\n  x = f16[1,1,2] constant({{{2048,1}}})\n"
            "  k = f16[1,1,2] constant({{{1,1}}})\n"
            "  ROOT r = f16[1,1,1] convolution(x, k), window={size=2}, "
            "dim_labels=bf0_oi0->bf0\n}\n",
            "f16[1,1,1]", "{{{2048}}}");
  // c64: (1+2i)(3-i) + (2)(i) = 5+5i + 2i = 5+7i.
  hr_expect("HloModule m\nENTRY e {\n  x = c64[1,1,2] constant({{{(1,2),(2,0)}}})\n"
            "  k = c64[1,1,2] constant({{{(3,-1),(0,1)}}})\n"
            "  ROOT r = c64[1,1,1] convolution(x, k), window={size=2}, "
            "dim_labels=bf0_oi0->bf0\n}\n",
            "c64[1,1,1]", "{{{(5,7)}}}");
}

// Direct kernel calls for the rules the kernel enforces itself.
static hl_instruction_t *conv1d(int64_t out_w, int64_t fgc) {
  int64_t od[3] = {1, 2, out_w};
  hl_instruction_t *inst = kt_inst(HL_OP_CONVOLUTION, HL_F32, 3, od);
  kt_set_operand_count(inst, 2);
  hl_conv_dims_t *dn = &inst->attrs.convolution_dimension_numbers;
  inst->attrs.has_convolution_dimension_numbers = true;
  int64_t sp = 2;
  dn->input_batch_dimension = 0, dn->input_feature_dimension = 1;
  dn->kernel_output_feature_dimension = 0, dn->kernel_input_feature_dimension = 1;
  dn->output_batch_dimension = 0, dn->output_feature_dimension = 1;
  HL_ASSERT_OK(hl_i64_list_set(&dn->input_spatial_dimensions, &sp, 1));
  HL_ASSERT_OK(hl_i64_list_set(&dn->kernel_spatial_dimensions, &sp, 1));
  HL_ASSERT_OK(hl_i64_list_set(&dn->output_spatial_dimensions, &sp, 1));
  inst->attrs.has_window = true;
  inst->attrs.window.n = 1;
  inst->attrs.window.dims = hl_calloc(1, sizeof(hl_window_dim_t));
  inst->attrs.window.dims[0] = (hl_window_dim_t){.size = 1, .stride = 1, .window_dilation = 1,
                                                 .base_dilation = 1};
  inst->attrs.feature_group_count = fgc;
  return inst;
}

static void test_errors(void) {
  kt_reset();
  int64_t xd[3] = {1, 4, 3}, kd[3] = {2, 3, 1};
  double zeros[12] = {0};
  hl_literal_t *x = kt_lit_f64(HL_F32, 3, xd, zeros), *k = kt_lit_f64(HL_F32, 3, kd, zeros);
  hl_literal_t *ops[2] = {x, k}, *y = NULL;
  // 4 input features / 2 groups = 2, but the kernel has 3 input features.
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_convolution(NULL, conv1d(3, 2), ops, &y),
                           "feature_group_count");
  // Result width 5 instead of 3.
  int64_t kd2[3] = {2, 4, 1};
  hl_literal_t *k2 = kt_lit_f64(HL_F32, 3, kd2, zeros);
  ops[1] = k2;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_convolution(NULL, conv1d(5, 1), ops, &y),
                           "does not match the convolution");
  // Correct shapes run.
  HL_ASSERT_OK(hl_kernel_convolution(NULL, conv1d(3, 1), ops, &y));
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 0.0);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(k);
  hl_literal_release(k2);
}

static CU_TestInfo tests[] = {
    {"spec_example", test_spec_example},
    {"padding_and_reversal_1d", test_padding_and_reversal_1d},
    {"lhs_dilation_1d", test_lhs_dilation_1d},
    {"groups", test_groups},
    {"types", test_types},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("convolution", tests)
