// runtime/stablehlo/refine_shapes.c: dynamic ('?') shapes refined from the
// entry's arguments during lowering: the types the IR gets, calls inlined,
// folded shape computations (with the dimension variable as a scalar
// argument), shape_assertion, and the errors for what cannot be refined.
// hl-test-libs: hl_stablehlo hl_ir hl_base
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/stablehlo.h"
#include "tests/unit/test_util.h"

static hl_literal_t *f32_array(int rank, const int64_t *dims) {
  hl_shape_t s = hl_shape_array(HL_F32, rank, dims);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  return lit;
}

static hl_literal_t *i64_scalar(int64_t v) {
  hl_shape_t s = hl_shape_scalar(HL_S64);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  memcpy(lit->data, &v, sizeof(v));
  return lit;
}

static hl_status_t load(const char *src, hl_literal_t **args, int n, hl_module_t **m) {
  return hl_stablehlo_load_with_args(src, strlen(src), "r.mlir", 1, args, n, m, NULL);
}

// JAX's current form: get_dimension_size in @main, the dimension passed to a
// private function that builds shapes from it.
static const char *kExport =
    "module @m attributes {jax.uses_shape_polymorphism = true} {\n"
    "func.func public @main(%x: tensor<?x4xf32>) -> tensor<?x8xf32> {\n"
    "  %b = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>\n"
    "  %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "  %ok = stablehlo.compare GE, %b, %one, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "  stablehlo.custom_call @shape_assertion(%ok, %b) {api_version = 2 : i32, error_message = "
    "\"b = {0} must be >= 1\", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()\n"
    "  %r = call @f(%b, %x) : (tensor<i32>, tensor<?x4xf32>) -> tensor<?x8xf32>\n"
    "  return %r : tensor<?x8xf32>\n"
    "}\n"
    "func.func private @f(%b: tensor<i32> {jax.global_constant = \"b\"}, %x: tensor<?x4xf32>) "
    "-> tensor<?x8xf32> {\n"
    "  %y = stablehlo.concatenate %x, %x, dim = 1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>\n"
    "  %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>\n"
    "  %c8 = stablehlo.constant dense<8> : tensor<1xi32>\n"
    "  %s = stablehlo.concatenate %b1, %c8, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>\n"
    "  %i = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi32>) -> tensor<?x8xf32>\n"
    "  %z = stablehlo.add %y, %i : tensor<?x8xf32>\n"
    "  return %z : tensor<?x8xf32>\n"
    "}\n}\n";

static void test_export_form_refined(void) {
  for (int64_t b = 1; b <= 5; b += 4) {
    int64_t dims[2] = {b, 4};
    hl_literal_t *x = f32_array(2, dims);
    hl_module_t *m = NULL;
    HL_ASSERT_OK(load(kExport, &x, 1, &m));
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    // Calls are inlined: one computation; every shape static.
    CU_ASSERT_EQUAL(m->computation_count, 1);
    const hl_shape_t *r = &m->entry->root->shape;
    CU_ASSERT_EQUAL(r->rank, 2);
    CU_ASSERT_EQUAL(r->dims[0], b);
    CU_ASSERT_EQUAL(r->dims[1], 8);
    CU_ASSERT_EQUAL(r->dynamic_mask, 0u);
    CU_ASSERT_EQUAL(m->entry->parameters[0]->shape.dims[0], b);
    for (int i = 0; i < m->entry->instruction_count; i++) {
      const hl_instruction_t *inst = m->entry->instructions[i];
      CU_ASSERT_EQUAL(inst->shape.dynamic_mask, 0u);
      // The assertion held and left nothing behind.
      CU_ASSERT_FALSE(inst->opcode == HL_OP_CUSTOM_CALL);
    }
    hl_module_destroy(m);
    hl_literal_release(x);
  }
}

static void test_failing_assertion_and_refusals(void) {
  int64_t dims[2] = {0, 4};
  hl_literal_t *x = f32_array(2, dims);
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(load(kExport, &x, 1, &m),
                           "r.mlir:6:3: error: 'stablehlo.custom_call' shape assertion failed: "
                           "b = 0 must be >= 1 (shape_assertion operand values: 0)");
  CU_ASSERT_PTR_NULL(m);
  hl_literal_release(x);
  // No arguments: the program says it needs them.
  bool needs = false;
  HL_ASSERT_ERROR_CONTAINS(
      hl_stablehlo_load_with_args(kExport, strlen(kExport), "r.mlir", 1, NULL, -1, &m, &needs),
      "dynamic shapes");
  CU_ASSERT_TRUE(needs);
  // A static dimension the argument contradicts.
  int64_t wrong[2] = {3, 5};
  x = f32_array(2, wrong);
  HL_ASSERT_ERROR_CONTAINS(load(kExport, &x, 1, &m), "which does not fit its type");
  hl_literal_release(x);
}

// The older form: the dimension variable as a leading i64 argument, shapes
// computed from it (convert, reshape, concatenate, multiply).
static void test_dimension_argument(void) {
  const char *src =
      "func.func public @main(%b: tensor<i64>, %x: tensor<?xf32>) -> tensor<?x3xf32> {\n"
      "  %0 = stablehlo.convert %b : (tensor<i64>) -> tensor<i32>\n"
      "  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>\n"
      "  %2 = stablehlo.constant dense<3> : tensor<1xi32>\n"
      "  %3 = stablehlo.concatenate %1, %2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>\n"
      "  %4 = stablehlo.dynamic_broadcast_in_dim %x, %3, dims = [0] : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x3xf32>\n"
      "  return %4 : tensor<?x3xf32>\n"
      "}\n";
  int64_t d = 6;
  hl_literal_t *args[2] = {i64_scalar(6), f32_array(1, &d)};
  hl_module_t *m = NULL;
  HL_ASSERT_OK(load(src, args, 2, &m));
  CU_ASSERT_EQUAL(m->entry->root->shape.dims[0], 6);
  CU_ASSERT_EQUAL(m->entry->root->shape.dims[1], 3);
  hl_module_destroy(m);
  // A shape read from an array argument's contents is not known before
  // running: an error naming the op.
  hl_literal_release(args[0]);
  const char *from_data =
      "func.func public @main(%s: tensor<1xi32>) -> tensor<?xf32> {\n"
      "  %0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>\n"
      "  return %0 : tensor<?xf32>\n"
      "}\n";
  int64_t one = 1;
  hl_shape_t s = hl_shape_array(HL_S32, 1, &one);
  HL_ASSERT_OK(hl_literal_create(&s, &args[0]));
  HL_ASSERT_ERROR_CONTAINS(load(from_data, args, 1, &m),
                           "r.mlir:2:8: error: 'stablehlo.dynamic_iota' needs operand 0 as a value "
                           "known from the argument shapes");
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
}

static CU_TestInfo tests[] = {
    {"export_form_refined", test_export_form_refined},
    {"failing_assertion_and_refusals", test_failing_assertion_and_refusals},
    {"dimension_argument", test_dimension_argument},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("refine_shapes", tests)
