// runtime/stablehlo/: lexer tokens, parser forms (pretty and generic ops,
// regions, result groups, aliases, loc), dense literals (lists, splats, hex,
// complex, resources), the lowering's IR, and MLIR-style diagnostics.
// hl-test-libs: hl_stablehlo hl_ir hl_base
#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_dense.h"
#include "runtime/stablehlo/mlir_lexer.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/stablehlo.h"
#include "tests/unit/test_util.h"

static void test_lexer_tokens(void) {
  const char *src = "%r#1 = \"x\" @f ^bb0 #a.b !t 0x1F -2.5e3 -> {-# #-} // c\n tensor";
  hl_mlir_lexer_t lx;
  hl_mlir_lexer_init(&lx, src, strlen(src), "t.mlir");
  hl_mlir_tok_kind_t want[] = {HL_MTOK_VALUE, HL_MTOK_PUNCT, HL_MTOK_STRING, HL_MTOK_SYMBOL,
                               HL_MTOK_BLOCK, HL_MTOK_HASH,  HL_MTOK_BANG,   HL_MTOK_INT,
                               HL_MTOK_FLOAT, HL_MTOK_ARROW, HL_MTOK_META_BEGIN,
                               HL_MTOK_META_END, HL_MTOK_IDENT, HL_MTOK_EOF};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    CU_ASSERT_EQUAL(lx.tok.kind, want[i]);
    if (i == 12) {
      CU_ASSERT_EQUAL(lx.tok.line, 2);
      CU_ASSERT_EQUAL(lx.tok.column, 2);
    }
    hl_mlir_lex_next(&lx);
  }
}

static void parse_ok(const char *src, hl_mlir_file_t *f) {
  HL_ASSERT_OK(hl_mlir_parse(src, strlen(src), "t.mlir", 1, f));
}

static void test_parse_pretty_and_generic(void) {
  const char *src =
      "#map = dense<[1, 2]> : tensor<2xi64>\n"
      "!ty = tensor<2xi64>\n"
      "module @m attributes {mhlo.num_replicas = 2 : i32} {\n"
      "  func.func public @main(%a: !ty {jax.arg_info = \"a\"}) -> (!ty, tensor<2xi64>) {\n"
      "    %c = stablehlo.constant dense<3> : tensor<2xi64> loc(#loc1)\n"
      "    %s:2 = \"stablehlo.sort\"(%a, %c) <{dimension = 0 : i64, is_stable = true}> ({\n"
      "    ^bb0(%x: tensor<i64>, %y: tensor<i64>, %z: tensor<i64>, %w: tensor<i64>):\n"
      "      %p = stablehlo.compare LT, %x, %y, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "      stablehlo.return %p : tensor<i1>\n"
      "    }) : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)\n"
      "    return %s#0, %s#1 : !ty, tensor<2xi64>\n"
      "  }\n"
      "}\n"
      "#loc1 = loc(\"f.py\":1:2)\n";
  hl_mlir_file_t f;
  parse_ok(src, &f);
  CU_ASSERT_STRING_EQUAL(f.module_name, "m");
  CU_ASSERT_EQUAL(f.module_attr_count, 1);
  CU_ASSERT_EQUAL(f.op_count, 1);
  const hl_mlir_op_t *fn = &f.ops[0];
  CU_ASSERT_STRING_EQUAL(fn->symbol, "main");
  CU_ASSERT_EQUAL(fn->operand_type_count, 1);
  CU_ASSERT_EQUAL(fn->result_type_count, 2);
  CU_ASSERT_EQUAL(fn->operand_types[0].dims[0], 2);
  const hl_mlir_block_t *b = &fn->regions[0].blocks[0];
  CU_ASSERT_EQUAL(b->op_count, 3);
  const hl_mlir_op_t *sort = &b->ops[1];
  CU_ASSERT_TRUE(sort->generic);
  CU_ASSERT_EQUAL(sort->result_count, 2);
  CU_ASSERT_EQUAL(sort->region_count, 1);
  CU_ASSERT_EQUAL(sort->regions[0].blocks[0].arg_count, 4);
  CU_ASSERT_PTR_NOT_NULL(hl_mlir_op_attr(sort, "is_stable"));
  const hl_mlir_op_t *cmp = &sort->regions[0].blocks[0].ops[0];
  CU_ASSERT_EQUAL(cmp->item_count, 2);  // LT, SIGNED
  CU_ASSERT_STRING_EQUAL(cmp->items[0].s, "LT");
  const hl_mlir_op_t *ret = &b->ops[2];
  CU_ASSERT_EQUAL(ret->operands[1].index, 1);
  hl_mlir_file_deinit(&f);
}

static hl_literal_t *dense(const char *body, hl_shape_t shape) {
  hl_mlir_attr_t a = {.kind = HL_MATTR_DENSE, .raw = body, .raw_len = strlen(body), .line = 1,
                      .column = 1};
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_mlir_dense_literal(NULL, &a, &shape, &lit));
  return lit;
}

static void test_dense_forms(void) {
  int64_t d2[] = {2}, d22[] = {2, 2};
  hl_literal_t *l = dense("[[1, -2], [3, 4]]", hl_shape_array(HL_S8, 2, d22));
  CU_ASSERT_EQUAL(((int8_t *)l->data)[1], -2);
  hl_literal_release(l);
  l = dense("7", hl_shape_array(HL_S32, 2, d22));  // splat
  CU_ASSERT_EQUAL(((int32_t *)l->data)[3], 7);
  hl_literal_release(l);
  l = dense("\"0x0000803F00000040\"", hl_shape_array(HL_F32, 1, d2));  // hex blob
  CU_ASSERT_EQUAL(((float *)l->data)[0], 1.0f);
  CU_ASSERT_EQUAL(((float *)l->data)[1], 2.0f);
  hl_literal_release(l);
  l = dense("[0x7FC00000, -1.5]", hl_shape_array(HL_F32, 1, d2));  // hex float bits
  CU_ASSERT_TRUE(((float *)l->data)[0] != ((float *)l->data)[0]);
  CU_ASSERT_EQUAL(((float *)l->data)[1], -1.5f);
  hl_literal_release(l);
  l = dense("[(1.0, -2.0), (0.5, 3.0)]", hl_shape_array(HL_C64, 1, d2));
  CU_ASSERT_EQUAL(((float *)l->data)[1], -2.0f);
  CU_ASSERT_EQUAL(((float *)l->data)[2], 0.5f);
  hl_literal_release(l);
  l = dense("[true, false]", hl_shape_array(HL_PRED, 1, d2));
  CU_ASSERT_EQUAL(((uint8_t *)l->data)[0], 1);
  hl_literal_release(l);
  l = dense("[-8, 7]", hl_shape_array(HL_S4, 1, d2));
  CU_ASSERT_EQUAL(((int8_t *)l->data)[0], -8);
  hl_literal_release(l);
  hl_mlir_attr_t bad = {.kind = HL_MATTR_DENSE, .raw = "[1, 2, 3]", .raw_len = 9, .line = 4,
                        .column = 9};
  hl_shape_t s = hl_shape_array(HL_S32, 1, d2);
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_dense_literal(NULL, &bad, &s, &out), "4:");
}

// i1 hex: a byte per element (MLIR since 2026, JAX's testdata), bits packed
// from the lowest (MLIR before: llvm-project c6964b1b), one-byte splats.
static void test_dense_i1_hex(void) {
  int64_t d3[] = {3}, d12[] = {12}, d4[] = {4};
  hl_literal_t *l = dense("\"0x010001\"", hl_shape_array(HL_PRED, 1, d3));
  const uint8_t *b = l->data;
  CU_ASSERT_TRUE(b[0] == 1 && b[1] == 0 && b[2] == 1);
  hl_literal_release(l);
  l = dense("\"0x2D09\"", hl_shape_array(HL_PRED, 1, d12));  // packed: 0x2D = 00101101
  b = l->data;
  const uint8_t want[12] = {1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1};
  CU_ASSERT_EQUAL(memcmp(b, want, 12), 0);
  hl_literal_release(l);
  l = dense("\"0x01\"", hl_shape_array(HL_PRED, 1, d12));  // splat
  CU_ASSERT_EQUAL(((uint8_t *)l->data)[11], 1);
  hl_literal_release(l);
  l = dense("\"0xFF\"", hl_shape_array(HL_PRED, 1, d4));  // old splat
  CU_ASSERT_EQUAL(((uint8_t *)l->data)[3], 1);
  hl_literal_release(l);
  hl_shape_t s4 = hl_shape_array(HL_PRED, 1, d4), s3 = hl_shape_array(HL_PRED, 1, d3);
  hl_literal_t *out = NULL;
  hl_mlir_attr_t amb = {.kind = HL_MATTR_DENSE, .raw = "\"0x05\"", .raw_len = 6, .line = 1, .column = 1};
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_dense_literal(NULL, &amb, &s4, &out), "ambiguous");
  hl_mlir_attr_t two = {.kind = HL_MATTR_DENSE, .raw = "\"0x010200\"", .raw_len = 10, .line = 1, .column = 1};
  HL_ASSERT_ERROR_CONTAINS(hl_mlir_dense_literal(NULL, &two, &s3, &out), "0 or 1");
}

// The pretty reduce of two inputs: inputs before inits, and the reducer's
// (accumulator, element) pairs as the block's accumulators, then elements.
static void test_pretty_reduce_pairs(void) {
  const char *src =
      "func.func @main(%a: tensor<3xf32>, %b: tensor<3xi32>) -> (tensor<f32>, tensor<i32>) {\n"
      "  %x = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %y = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %r:2 = stablehlo.reduce(%a init: %x), (%b init: %y) across dimensions = [0] : "
      "(tensor<3xf32>, tensor<3xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)\n"
      "   reducer(%p: tensor<f32>, %q: tensor<f32>) (%s: tensor<i32>, %t: tensor<i32>) loc(#l) {\n"
      "    %u = stablehlo.add %p, %q : tensor<f32>\n"
      "    %v = stablehlo.add %s, %t : tensor<i32>\n"
      "    stablehlo.return %u, %v : tensor<f32>, tensor<i32>\n"
      "  } loc(#l)\n"
      "  return %r#0, %r#1 : tensor<f32>, tensor<i32>\n"
      "}\n";
  hl_mlir_file_t f;
  HL_ASSERT_OK(hl_mlir_parse(src, strlen(src), "r.mlir", 1, &f));
  const hl_mlir_op_t *red = &f.ops[0].regions[0].blocks[0].ops[2];
  CU_ASSERT_EQUAL_FATAL(red->operand_count, 4);
  const char *ops[] = {"a", "b", "x", "y"}, *args[] = {"p", "s", "q", "t"};
  for (int i = 0; i < 4; i++) CU_ASSERT_STRING_EQUAL(red->operands[i].name, ops[i]);
  CU_ASSERT_EQUAL_FATAL(red->region_count, 1);
  const hl_mlir_block_t *blk = &red->regions[0].blocks[0];
  CU_ASSERT_EQUAL_FATAL(blk->arg_count, 4);
  for (int i = 0; i < 4; i++) CU_ASSERT_STRING_EQUAL(blk->arg_names[i], args[i]);
  CU_ASSERT_EQUAL(blk->arg_types[1].dtype, HL_S32);
  hl_mlir_file_deinit(&f);
}

static void test_dense_resource(void) {
  const char *src =
      "func.func @main() -> tensor<2xi32> {\n"
      "  %0 = stablehlo.constant dense_resource<blob1> : tensor<2xi32>\n"
      "  return %0 : tensor<2xi32>\n"
      "}\n"
      "{-#\n  dialect_resources: {\n    builtin: {\n"
      "      blob1: \"0x040000000500000006000000\"\n    }\n  }\n#-}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_stablehlo_load(src, strlen(src), "r.mlir", 1, &m));
  const hl_literal_t *lit = m->entry->root->attrs.literal;
  CU_ASSERT_PTR_NOT_NULL_FATAL(lit);
  CU_ASSERT_EQUAL(((int32_t *)lit->data)[0], 5);
  CU_ASSERT_EQUAL(((int32_t *)lit->data)[1], 6);
  hl_module_destroy(m);
}

static void test_lowering_ir(void) {
  const char *src =
      "module attributes {mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 2 : i32} {\n"
      "func.func private @sq(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
      "  %0 = stablehlo.multiply %x, %x : tensor<3xf32>\n"
      "  func.return %0 : tensor<3xf32>\n"
      "}\n"
      "func.func @main(%a: tensor<3xf32>, %n: tensor<i64>) -> tensor<3xf32> {\n"
      "  %one = stablehlo.constant dense<1> : tensor<i64>\n"
      "  %r0, %r1 = stablehlo.while(%i = %one, %v = %a) : tensor<i64>, tensor<3xf32>\n"
      "  cond {\n"
      "    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  } do {\n"
      "    %s = func.call @sq(%v) : (tensor<3xf32>) -> tensor<3xf32>\n"
      "    %j = stablehlo.add %i, %one : tensor<i64>\n"
      "    stablehlo.return %j, %s : tensor<i64>, tensor<3xf32>\n"
      "  }\n"
      "  return %r1 : tensor<3xf32>\n"
      "}\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_stablehlo_load(src, strlen(src), "w.mlir", 1, &m));
  CU_ASSERT_EQUAL(m->replica_count, 4);
  CU_ASSERT_EQUAL(m->num_partitions, 2);
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  CU_ASSERT_EQUAL(m->entry->parameter_count, 2);
  CU_ASSERT_PTR_EQUAL(m->computations[m->computation_count - 1], m->entry);
  // The loop carries (i, v) plus the captured %n and %one: a 4-tuple.
  const hl_instruction_t *loop = NULL;
  for (int i = 0; i < m->entry->instruction_count; i++)
    if (m->entry->instructions[i]->opcode == HL_OP_WHILE) loop = m->entry->instructions[i];
  CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
  CU_ASSERT_EQUAL(loop->shape.tuple_count, 4);
  CU_ASSERT_EQUAL(loop->called_count, 2);
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_GET_TUPLE_ELEMENT);
  CU_ASSERT_EQUAL(m->entry->root->attrs.tuple_index, 1);
  hl_module_destroy(m);
}

static void test_run_parallel_grid(void) {
  const char *src =
      "func.func @id(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
      "  func.return %x : tensor<2xi32>\n"
      "}\n"
      "func.func @main() {\n"
      "  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
      "  %r:6 = \"interpreter.run_parallel\"(%a, %a, %a, %a, %a, %a) {\n"
      "    programs = [[@id, @id], [@id, @id], [@id, @id]]\n"
      "  } : (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, "
      "tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, "
      "tensor<2xi32>, tensor<2xi32>)\n"
      "  func.return\n"
      "}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_stablehlo_load(src, strlen(src), "p.mlir", 1, &m));
  CU_ASSERT_EQUAL(m->replica_count, 3);
  CU_ASSERT_EQUAL(m->num_partitions, 2);
  int conditionals = 0, gathers = 0;
  for (int i = 0; i < m->entry->instruction_count; i++) {
    const hl_instruction_t *inst = m->entry->instructions[i];
    if (inst->opcode == HL_OP_CONDITIONAL) {
      conditionals++;
      CU_ASSERT_EQUAL(inst->called_count, 6);
    }
    if (inst->opcode == HL_OP_ALL_GATHER) {
      gathers++;
      CU_ASSERT_TRUE(inst->attrs.use_global_device_ids);
    }
  }
  CU_ASSERT_EQUAL(conditionals, 1);
  CU_ASSERT_EQUAL(gathers, 6);
  hl_module_destroy(m);
  // A run_parallel whose operands do not match its programs' arguments.
  const char *bad = "func.func @id(%x: tensor<i32>) -> tensor<i32> {\n  func.return %x : tensor<i32>\n}\n"
                    "func.func @main() {\n"
                    "  %r = \"interpreter.run_parallel\"() {programs = [[@id]]} : () -> tensor<i32>\n"
                    "  func.return\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(bad, strlen(bad), "p.mlir", 1, &m),
                           "p.mlir:5:8: error: 'interpreter.run_parallel' has 0 operands");
}

static void test_diagnostics(void) {
  const char *src = "func.func @main() {\n  %0 = stablehlo.constant dense<1> : tensor<i32>\n"
                    "  %1 = stablehlo.frobnicate %0 : tensor<i32>\n  func.return\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src, strlen(src), "d.mlir", 1, &m),
                           "d.mlir:3:8: error: 'stablehlo.frobnicate' is not supported");
  const char *src2 = "func.func @main() {\n  %0 = stablehlo.constant dense<1> : tensor<3xq32>\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src2, strlen(src2), "d.mlir", 10, &m),
                           "d.mlir:11:");
  CU_ASSERT_PTR_NULL(m);
  // Two top-level modules (a fuzz finding: the second's name replaced the
  // first's, which leaked).
  const char *src3 = "module @a {}\nmodule @b {\n  func.func @main() {\n    func.return\n  }\n}\n";
  HL_ASSERT_ERROR_CONTAINS(hl_stablehlo_load(src3, strlen(src3), "d.mlir", 1, &m),
                           "d.mlir:2:1: error: a second module");
  CU_ASSERT_PTR_NULL(m);
}

static void test_split_and_detect(void) {
  const char *src = "func.func @a() {\n  func.return\n}\n// -----\nfunc.func @b() {\n"
                    "  func.return\n}\n";
  hl_mlir_case_t *cases;
  int n;
  HL_ASSERT_OK(hl_stablehlo_split_cases(src, strlen(src), &cases, &n));
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(cases[1].first_line, 5);
  CU_ASSERT_EQUAL(strncmp(src + cases[1].offset, "func.func @b", 12), 0);
  hl_free(cases);
  CU_ASSERT_TRUE(hl_stablehlo_looks_like(src, strlen(src)));
  CU_ASSERT_TRUE(hl_stablehlo_looks_like("// c\nmodule @x {}", 15));
  CU_ASSERT_FALSE(hl_stablehlo_looks_like("HloModule m\n", 12));
}

static CU_TestInfo tests[] = {
    {"lexer_tokens", test_lexer_tokens},
    {"parse_pretty_and_generic", test_parse_pretty_and_generic},
    {"dense_forms", test_dense_forms},
    {"dense_resource", test_dense_resource},
    {"dense_i1_hex", test_dense_i1_hex},
    {"pretty_reduce_pairs", test_pretty_reduce_pairs},
    {"lowering_ir", test_lowering_ir},
    {"run_parallel_grid", test_run_parallel_grid},
    {"diagnostics", test_diagnostics},
    {"split_and_detect", test_split_and_detect},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("stablehlo", tests)
