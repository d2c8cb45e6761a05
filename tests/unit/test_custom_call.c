// runtime/custom_calls/custom_call_kernel.c: the supported targets and the error for
// any other. Threefry values: Random123 kat_vectors "threefry2x32 20".
#include "runtime/base/alloc.h"
#include "tests/unit/kernel_test_util.h"

static void set_target(hl_instruction_t *inst, const char *t) {
  inst->attrs.custom_call_target = hl_strdup(t);
}

static void test_identity_targets(void) {
  kt_reset();
  int64_t d[1] = {2};
  double v[2] = {1, 2};
  hl_literal_t *x = kt_lit_f64(HL_F32, 1, d, v), *y = NULL;
  hl_literal_t *ops[1] = {x};
  const char *names[] = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                         "annotate_device_placement", "MoveToHost", "MoveToDevice"};
  for (int i = 0; i < 6; i++) {
    hl_instruction_t *inst = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 1, d);
    kt_set_operand_count(inst, 1);
    set_target(inst, names[i]);
    HL_ASSERT_OK(hl_kernel_custom_call(NULL, inst, ops, &y));
    CU_ASSERT_PTR_EQUAL(y, x);
    hl_literal_release(y);
  }
  // A shape change (a real partitioning) is not supported on one process.
  int64_t d1[1] = {1};
  hl_instruction_t *shard = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 1, d1);
  kt_set_operand_count(shard, 1);
  set_target(shard, "SPMDFullToShardShape");
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_custom_call(NULL, shard, ops, &y), "changes the shape");
  hl_instruction_t *other = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 1, d);
  kt_set_operand_count(other, 1);
  set_target(other, "my_vendor_kernel");
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_custom_call(NULL, other, ops, &y),
                           "custom-call target \"my_vendor_kernel\" is not supported");
  hl_literal_release(x);
}

static void test_threefry(void) {
  kt_reset();
  int64_t d[1] = {2};
  uint64_t k0[2] = {0x13198a2e, 0}, k1[1] = {0x03707344}, x0[2] = {0x243f6a88, 0},
           x1[2] = {0x85a308d3, 0};
  hl_literal_t *a = kt_lit_bits(HL_U32, 1, d, k0), *b = kt_lit_bits(HL_U32, 0, NULL, k1);
  hl_literal_t *c = kt_lit_bits(HL_U32, 1, d, x0), *e = kt_lit_bits(HL_U32, 1, d, x1), *y = NULL;
  hl_literal_t *ops[4] = {a, b, c, e};
  hl_shape_t parts[2] = {hl_shape_array(HL_U32, 1, d), hl_shape_array(HL_U32, 1, d)};
  hl_instruction_t *inst = kt_inst(HL_OP_CUSTOM_CALL, HL_U32, 1, d);
  hl_shape_deinit(&inst->shape);
  HL_ASSERT_OK(hl_shape_tuple(parts, 2, &inst->shape));
  kt_set_operand_count(inst, 4);
  set_target(inst, "cu_threefry2x32");
  HL_ASSERT_OK(hl_kernel_custom_call(NULL, inst, ops, &y));
  // Element 0: the pi vector; element 1: key (0, 0x03707344), counter (0, 0).
  CU_ASSERT_EQUAL(kt_bits(y->elements[0], 0), 0xc4923a9c);
  CU_ASSERT_EQUAL(kt_bits(y->elements[1], 0), 0x483df7a0);
  hl_literal_release(y);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(c);
  hl_literal_release(e);
}

static CU_TestInfo tests[] = {
    {"identity_targets", test_identity_targets},
    {"threefry", test_threefry},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("custom_call", tests)
