// runtime/stablehlo/chlo_lower.c: the IR each CHLO op lowers onto (the
// decompositions of upstream's ChloLegalizeToStablehlo.cpp), diagnostics; and
// the parser forms this work added (generic func.func / builtin.module,
// chlo.top_k's `(x, k = n)`), with the argument-attribute leak fuzz_program_loader
// found (a function whose argument list fails after an attribute dict) and
// its heap overflow (a dense list for a zero-element tensor was stored into it)
// and signed overflow (a 19-digit tensor dimension), and a convolution
// without feature_group_count (its lookup error was dropped, leaking).
// hl-test-libs: hl_stablehlo hl_ir hl_base
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_dense.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/stablehlo.h"
#include "tests/unit/test_util.h"

static hl_module_t *load(const char *src) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_stablehlo_load(src, strlen(src), "c.mlir", 1, &m));
  return m;
}

static int count_op(const hl_computation_t *c, hl_opcode_t op) {
  int n = 0;
  for (int i = 0; i < c->instruction_count; i++) n += c->instructions[i]->opcode == op;
  return n;
}

static const hl_instruction_t *find_op(const hl_computation_t *c, hl_opcode_t op) {
  for (int i = 0; i < c->instruction_count; i++)
    if (c->instructions[i]->opcode == op) return c->instructions[i];
  return NULL;
}

static void test_broadcasting_ir(void) {
  hl_module_t *m = load(
      "func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>, "
      "%d: tensor<2x1xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {\n"
      "  %0 = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
      "  %1 = chlo.broadcast_multiply %a, %c {broadcast_dimensions = array<i64: 0>} : "
      "(tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>\n"
      "  %2 = chlo.broadcast_subtract %d, %a : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
      "  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>\n}\n");
  const hl_computation_t *e = m->entry;
  CU_ASSERT_EQUAL(count_op(e, HL_OP_BROADCAST), 3);
  CU_ASSERT_EQUAL(count_op(e, HL_OP_RESHAPE), 1);  // %d's size-1 dimension 1
  int seen = 0;
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *in = e->instructions[i];
    if (in->opcode != HL_OP_BROADCAST) continue;
    CU_ASSERT_EQUAL(in->attrs.dimensions.n, 1);
    // %b -> dimension 1 (trailing), %c -> 0 (broadcast_dimensions), %d -> 0.
    int64_t want = seen == 0 ? 1 : 0;
    CU_ASSERT_EQUAL(in->attrs.dimensions.v[0], want);
    seen++;
  }
  CU_ASSERT_EQUAL(count_op(e, HL_OP_ADD) + count_op(e, HL_OP_MULTIPLY) +
                      count_op(e, HL_OP_SUBTRACT), 3);
  hl_module_destroy(m);
}

static void test_decompositions_ir(void) {
  hl_module_t *m = load(
      "func.func @main(%x: tensor<5xf32>, %t: tensor<2x4xi32>) -> (tensor<5xi1>, tensor<2x4xi32>, "
      "tensor<2x4xi32>, tensor<5xf32>, tensor<5xf32>) {\n"
      "  %0 = chlo.is_inf %x : tensor<5xf32> -> tensor<5xi1>\n"
      "  %v, %i = chlo.top_k(%t, k = 9) : tensor<2x4xi32> -> (tensor<2x4xi32>, tensor<2x4xi32>)\n"
      "  %1 = chlo.lgamma %x : tensor<5xf32> -> tensor<5xf32>\n"
      "  %2 = chlo.next_after %x, %1 : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>\n"
      "  return %0, %v, %i, %1, %2 : tensor<5xi1>, tensor<2x4xi32>, tensor<2x4xi32>, "
      "tensor<5xf32>, tensor<5xf32>\n}\n");
  const hl_computation_t *e = m->entry;
  const hl_instruction_t *cmp = find_op(e, HL_OP_COMPARE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cmp);
  CU_ASSERT_EQUAL(cmp->attrs.comparison_direction, HL_CMP_EQ);
  CU_ASSERT_EQUAL(cmp->operands[0]->opcode, HL_OP_ABS);  // is_inf = is_pos_inf(abs(x))
  const hl_instruction_t *topk = find_op(e, HL_OP_TOPK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(topk);
  CU_ASSERT_EQUAL(topk->attrs.k, 4);  // min(k, last dimension), as upstream
  CU_ASSERT_TRUE(topk->attrs.largest);
  CU_ASSERT_EQUAL(count_op(e, HL_OP_LGAMMA), 1);
  CU_ASSERT_EQUAL(count_op(e, HL_OP_NEXT_AFTER), 1);
  hl_module_destroy(m);
}

static void test_diagnostics(void) {
  const char *src = "func.func @main(%x: tensor<3xi32>) -> tensor<3xi1> {\n"
                    "  %0 = chlo.is_inf %x : tensor<3xi32> -> tensor<3xi1>\n"
                    "  return %0 : tensor<3xi1>\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src, strlen(src), "c.mlir", 1, &m),
                           "c.mlir:2:8: error: 'chlo.is_inf' is defined for floating-point");
  const char *src2 = "func.func @main(%x: tensor<2x3xf32>, %y: tensor<2xf32>) -> tensor<2x3xf32> {\n"
                     "  %0 = chlo.broadcast_add %x, %y {broadcast_dimensions = array<i64: 0, 1>} :"
                     " (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>\n"
                     "  return %0 : tensor<2x3xf32>\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src2, strlen(src2), "c.mlir", 1, &m),
                           "has 2 broadcast_dimensions for a rank-1 operand");
  CU_ASSERT_PTR_NULL(m);
}

static void test_generic_func(void) {
  hl_module_t *m = load(
      "\"builtin.module\"() <{sym_name = \"g\"}> ({\n"
      "  \"func.func\"() <{arg_attrs = [{jax.arg_info = \"x\"}], function_type = (tensor<2xf32>) "
      "-> tensor<2xf32>, sym_name = \"main\"}> ({\n"
      "  ^bb0(%arg0: tensor<2xf32>):\n"
      "    %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "    \"func.return\"(%0) : (tensor<2xf32>) -> ()\n"
      "  }) : () -> ()\n"
      "}) {mhlo.num_replicas = 2 : i32} : () -> ()\n");
  CU_ASSERT_EQUAL(m->replica_count, 2);
  CU_ASSERT_EQUAL(m->entry->parameter_count, 1);
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_ADD);
  hl_module_destroy(m);
  const char *bad = "\"func.func\"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, "
                    "sym_name = \"main\"}> ({\n^bb0(%a: tensor<3xf32>):\n"
                    "  \"func.return\"(%a) : (tensor<3xf32>) -> ()\n}) : () -> ()\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(bad, strlen(bad), "c.mlir", 1, &m),
                           "block argument 0's type differs from the function type");
}

// fuzz_program_loader: attribute dicts of arguments parsed before a failing
// type leaked (freed by the count of function types, set only at the end).
static void test_argument_attrs_freed_on_error(void) {
  const char *src = "func.func public @main(%a: tensor<4xf32> {mhlo.layout_mode = \"default\"}, "
                    "%b: tensor<3xf32>> {\n  return %a : tensor<4xf32>\n}\n";
  hl_mlir_file_t f;
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_parse(src, strlen(src), "c.mlir", 1, &f), "c.mlir:1:");
  const char *src2 = "func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "
                     "\"\"}, tensor<3xq9>) {\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_parse(src2, strlen(src2), "c.mlir", 1, &f), "c.mlir:1:");
}

// fuzz_program_loader: `dense<[[...8 values...]]> : tensor<0x8xi64>` wrote its
// first value into the zero-element literal. Now: an error; a splat of an
// empty tensor is still read (and checked).
static void test_dense_list_for_empty_tensor(void) {
  const char *src = "func.func @main() -> tensor<0x8xi64> {\n"
                    "  %0 = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<0x8xi64>\n"
                    "  return %0 : tensor<0x8xi64>\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src, strlen(src), "c.mlir", 1, &m),
                           "c.mlir:2:32: error: dense literal: more elements than");
  const char *splat = "func.func @main() -> tensor<0xf32> {\n"
                      "  %0 = stablehlo.constant dense<1.5> : tensor<0xf32>\n"
                      "  return %0 : tensor<0xf32>\n}\n";
  m = load(splat);
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_CONSTANT);
  CU_ASSERT_EQUAL(hl_literal_element_count(m->entry->root->attrs.literal), 0);
  hl_module_destroy(m);
  const char *bad = "func.func @main() -> tensor<0xf32> {\n"
                    "  %0 = stablehlo.constant dense<zz> : tensor<0xf32>\n"
                    "  return %0 : tensor<0xf32>\n}\n";
  m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(bad, strlen(bad), "c.mlir", 1, &m), "c.mlir:2:");
}

// fuzz_program_loader: `tensor<66666666666666666666xf32>` overflowed int64
// while its digits were read (UBSan). Now: an error at the type.
static void test_huge_tensor_dimension(void) {
  const char *src = "func.func @main(%a: tensor<66666666666666666666xf32>) {\n  return\n}\n";
  hl_mlir_file_t f;
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_parse(src, strlen(src), "c.mlir", 1, &f),
                           "tensor dimension too large");
}

static void test_conv_group_counts_optional(void) {
  const char *head =
      "func.func @main(%x: tensor<1x3x1xf32>, %w: tensor<2x1x1xf32>) -> tensor<1x2x1xf32> {\n"
      "  %0 = \"stablehlo.convolution\"(%x, %w) <{dimension_numbers = #stablehlo.conv<raw "
      "input_batch_dimension = 0, input_feature_dimension = 2, input_spatial_dimensions = [1], "
      "kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 2, "
      "kernel_spatial_dimensions = [0], output_batch_dimension = 0, output_feature_dimension = 2, "
      "output_spatial_dimensions = [1]>";
  const char *tail = "}> : (tensor<1x3x1xf32>, tensor<2x1x1xf32>) -> tensor<1x2x1xf32>\n"
                     "  return %0 : tensor<1x2x1xf32>\n}\n";
  char src[1024];
  snprintf(src, sizeof(src), "%s%s", head, tail);
  hl_module_t *m = load(src);
  const hl_instruction_t *conv = find_op(m->entry, HL_OP_CONVOLUTION);
  CU_ASSERT_PTR_NOT_NULL_FATAL(conv);
  CU_ASSERT_EQUAL(conv->attrs.convolution_dimension_numbers.input_feature_dimension, 2);
  CU_ASSERT_EQUAL(conv->attrs.window.dims[0].size, 2);
  hl_module_destroy(m);
  snprintf(src, sizeof(src), "%s, feature_group_count = \"two\"%s", head, tail);
  m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src, strlen(src), "c.mlir", 1, &m),
                           "needs integer attribute 'feature_group_count'");
}

// fuzz_program_loader: `broadcast_in_dim 1arg1` parsed with no operand and
// the lowering read operands[0] (NULL). Each op read that way needs its count.
static void test_missing_operands(void) {
  static const char *const kOps[] = {
      "\"stablehlo.broadcast_in_dim\"() <{broadcast_dimensions = array<i64: 0>}> : () -> tensor<2xf32>",
      "\"stablehlo.slice\"() <{start_indices = array<i64: 0>, limit_indices = array<i64: 1>, "
      "strides = array<i64: 1>}> : () -> tensor<2xf32>",
      "\"stablehlo.dot_general\"(%a) <{dot_dimension_numbers = #stablehlo.dot<>}> : "
      "(tensor<2xf32>) -> tensor<2xf32>",
      "\"stablehlo.pad\"(%a) <{edge_padding_low = array<i64: 0>, edge_padding_high = "
      "array<i64: 0>, interior_padding = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2xf32>",
  };
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); i++) {
    char src[1024];
    snprintf(src, sizeof(src),
             "func.func @main(%%a: tensor<2xf32>) -> tensor<2xf32> {\n  %%0 = %s\n"
             "  return %%0 : tensor<2xf32>\n}\n", kOps[i]);
    hl_module_t *m = NULL;
    HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src, strlen(src), "c.mlir", 1, &m),
                             "operands, has");
    CU_ASSERT_PTR_NULL(m);
  }
}

static CU_TestInfo tests[] = {
    {"broadcasting_ir", test_broadcasting_ir},
    {"decompositions_ir", test_decompositions_ir},
    {"diagnostics", test_diagnostics},
    {"generic_func", test_generic_func},
    {"argument_attrs_freed_on_error", test_argument_attrs_freed_on_error},
    {"dense_list_for_empty_tensor", test_dense_list_for_empty_tensor},
    {"huge_tensor_dimension", test_huge_tensor_dimension},
    {"conv_group_counts_optional", test_conv_group_counts_optional},
    {"missing_operands", test_missing_operands},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("chlo_lower", tests)
