// runtime/stablehlo/quant_type.c and quant_lower.c: `!quant.uniform` spellings
// (per-tensor, per-axis, storage ranges, unsigned storage, aliases) parse into
// the storage type plus a quantization id on every place a type is written,
// malformed ones are diagnosed at their position, and the lowering expands
// uniform_quantize into the IR's convert / divide / round / clamp.
// hl-test-libs: hl_stablehlo hl_ir hl_base
#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/quant_type.h"
#include "runtime/stablehlo/stablehlo.h"
#include "tests/unit/test_util.h"

static const char *scan(const char *s, hl_mlir_quant_type_t *q) {
  size_t pos = 0;
  return hl_mlir_scan_quant_uniform(s, strlen(s), &pos, q);
}

static void free_q(hl_mlir_quant_type_t *q) {
  hl_free(q->scales);
  hl_free(q->zero_points);
}

static void test_scan_forms(void) {
  hl_mlir_quant_type_t q;
  CU_ASSERT_PTR_NULL(scan("<i8:f32, 0.1:-30>", &q));
  CU_ASSERT_EQUAL(q.storage, HL_S8);
  CU_ASSERT_EQUAL(q.expressed, HL_F32);
  CU_ASSERT_EQUAL(q.axis, -1);
  CU_ASSERT_EQUAL(q.count, 1);
  CU_ASSERT_DOUBLE_EQUAL(q.scales[0], 0.1, 0);
  CU_ASSERT_EQUAL(q.zero_points[0], -30);
  CU_ASSERT_EQUAL(q.storage_min, -128);
  CU_ASSERT_EQUAL(q.storage_max, 127);
  free_q(&q);

  CU_ASSERT_PTR_NULL(scan("<i8<-127:127>:f32:1, {0.1:-30, 5.000000e-01:-20}>", &q));
  CU_ASSERT_EQUAL(q.axis, 1);
  CU_ASSERT_EQUAL(q.count, 2);
  CU_ASSERT_DOUBLE_EQUAL(q.scales[1], 0.5, 0);
  CU_ASSERT_EQUAL(q.zero_points[1], -20);
  CU_ASSERT_EQUAL(q.storage_min, -127);
  CU_ASSERT_EQUAL(q.storage_max, 127);
  free_q(&q);

  CU_ASSERT_PTR_NULL(scan("<u8:bf16, 2.0>", &q));  // zero point omitted: 0
  CU_ASSERT_EQUAL(q.storage, HL_U8);
  CU_ASSERT_EQUAL(q.expressed, HL_BF16);
  CU_ASSERT_EQUAL(q.storage_max, 255);
  CU_ASSERT_EQUAL(q.zero_points[0], 0);
  free_q(&q);
}

static void test_scan_errors(void) {
  hl_mlir_quant_type_t q;
  CU_ASSERT_PTR_NOT_NULL(scan("<i64:f32, 1.0:0>", &q));          // 64-bit storage
  CU_ASSERT_PTR_NOT_NULL(scan("<i8:i32, 1.0:0>", &q));           // integer expressed type
  CU_ASSERT_PTR_NOT_NULL(scan("<i8:f32, {1.0:0, 2.0:0}>", &q));  // per-tensor, 2 params
  CU_ASSERT_PTR_NOT_NULL(scan("<i8:f32, 1.0:300>", &q));         // zero point out of range
  CU_ASSERT_PTR_NOT_NULL(scan("<i8<-200:0>:f32, 1.0:0>", &q));   // range beyond i8
  CU_ASSERT_PTR_NOT_NULL(scan("<i8:f32, -1.0:0>", &q));          // negative scale
  CU_ASSERT_PTR_NOT_NULL(scan("<i8:f32, 1.0:0", &q));            // unterminated
}

static void test_parse_ids(void) {
  const char *src =
      "!q = !quant.uniform<i8:f32, 0.5:1>\n"
      "func.func @main(%a: tensor<2x!q>, %b: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = \"stablehlo.add\"(%a, %a) : (tensor<2x!q>, tensor<2x!q>) -> "
      "tensor<2x!quant.uniform<u8:f32:0, {0.25:3, 0.5:4}>>\n"
      "  %1 = stablehlo.uniform_dequantize %0 : (tensor<2x!quant.uniform<u8:f32:0, {0.25:3, "
      "0.5:4}>>) -> tensor<2xf32>\n"
      "  return %1 : tensor<2xf32>\n"
      "}\n";
  hl_mlir_file_t f;
  HL_ASSERT_OK(hl_mlir_parse(src, strlen(src), "t.mlir", 1, &f));
  const hl_mlir_op_t *fn = &f.ops[0];
  const hl_mlir_block_t *b = &fn->regions[0].blocks[0];
  int qa = hl_mlir_quant_id(&b->arg_quant, 0);
  CU_ASSERT_TRUE(qa > 0);
  CU_ASSERT_EQUAL(b->arg_types[0].dtype, HL_S8);  // the storage type
  CU_ASSERT_EQUAL(hl_mlir_quant_id(&b->arg_quant, 1), 0);
  CU_ASSERT_EQUAL(hl_mlir_quant_id(&fn->operand_type_quant, 0), qa);
  const hl_mlir_op_t *add = &b->ops[0];
  CU_ASSERT_TRUE(hl_mlir_quant_id(&add->operand_type_quant, 1) > 0);
  int qr = hl_mlir_quant_id(&add->result_type_quant, 0);
  CU_ASSERT_TRUE(qr > 0);
  CU_ASSERT_EQUAL(add->result_types[0].dtype, HL_U8);
  CU_ASSERT_EQUAL(f.quant_types[qr - 1].axis, 0);
  CU_ASSERT_EQUAL(f.quant_types[qr - 1].count, 2);
  CU_ASSERT_EQUAL(f.quant_types[qr - 1].line, 3);
  CU_ASSERT_EQUAL(hl_mlir_quant_id(&b->ops[1].result_type_quant, 0), 0);
  hl_mlir_file_deinit(&f);
}

static void test_lowering_and_errors(void) {
  const char *src =
      "func.func @main(%x: tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5:1>> {\n"
      "  %0 = stablehlo.uniform_quantize %x : (tensor<3xf32>) -> "
      "tensor<3x!quant.uniform<i8:f32, 0.5:1>>\n"
      "  return %0 : tensor<3x!quant.uniform<i8:f32, 0.5:1>>\n"
      "}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_stablehlo_load(src, strlen(src), "t.mlir", 1, &m));
  hl_computation_t *c = m->entry;
  CU_ASSERT_EQUAL(c->root->shape.dtype, HL_S8);
  CU_ASSERT_EQUAL(c->root->opcode, HL_OP_CONVERT);
  bool saw_round = false, saw_clamp = false, saw_divide = false;
  for (int i = 0; i < c->instruction_count; i++) {
    hl_opcode_t op = c->instructions[i]->opcode;
    saw_round |= op == HL_OP_ROUND_NEAREST_EVEN;
    saw_clamp |= op == HL_OP_CLAMP;
    saw_divide |= op == HL_OP_DIVIDE;
  }
  CU_ASSERT_TRUE(saw_round && saw_clamp && saw_divide);
  hl_module_destroy(m);

  const char *bad =
      "func.func @main(%x: tensor<3x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<3xi8> {\n"
      "  %0 = stablehlo.popcnt %x : tensor<3x!quant.uniform<i8:f32, 0.5:1>>\n"
      "  return %0 : tensor<3xi8>\n"
      "}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(bad, strlen(bad), "t.mlir", 1, &m),
                           "t.mlir:2:8: error: 'stablehlo.popcnt' on quantized tensors");
  const char *bad_type = "func.func @main(%x: tensor<3x!quant.uniform<i8:f32, 0.5:1, 2>>) {\n"
                         "  return\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(bad_type, strlen(bad_type), "t.mlir", 1, &m),
                           "t.mlir:1:");
}

static CU_TestInfo tests[] = {
    {"scan_forms", test_scan_forms},
    {"scan_errors", test_scan_errors},
    {"parse_ids", test_parse_ids},
    {"lowering_and_errors", test_lowering_and_errors},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("stablehlo_quant", tests)
