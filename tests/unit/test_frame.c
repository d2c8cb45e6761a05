// runtime/custom_calls/frame.c: operands are handed over in their declared
// layouts and results read back from theirs.
#include "runtime/base/alloc.h"
#include "runtime/custom_calls/frame.h"
#include "tests/unit/kernel_test_util.h"

static hl_custom_call_t call_of(hl_instruction_t *inst, hl_literal_t **ops) {
  return (hl_custom_call_t){NULL, inst, ops, "t", NULL};
}

static void set_constraint(hl_instruction_t *inst, int rank, const int64_t *dims,
                           const int64_t *m2m) {
  inst->attrs.operand_shapes_with_layout = hl_calloc(1, sizeof(hl_shape_t));
  inst->attrs.operand_shapes_with_layout_count = 1;
  hl_shape_t *s = &inst->attrs.operand_shapes_with_layout[0];
  *s = hl_shape_array(HL_F32, rank, dims);
  s->has_layout = true;
  for (int i = 0; i < rank; i++) s->minor_to_major[i] = m2m[i];
}

static void test_column_major_operand_and_result(void) {
  kt_reset();
  int64_t d[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};  // [[1,2,3],[4,5,6]]
  hl_literal_t *x = kt_lit_f64(HL_F32, 2, d, v), *y = NULL;
  hl_literal_t *ops[1] = {x};
  hl_instruction_t *inst = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 2, d);
  kt_set_operand_count(inst, 1);
  set_constraint(inst, 2, d, (const int64_t[]){0, 1});
  inst->shape.has_layout = true;
  inst->shape.minor_to_major[0] = 0;
  inst->shape.minor_to_major[1] = 1;
  hl_custom_call_t call = call_of(inst, ops);
  hl_cc_frame_t f;
  HL_ASSERT_OK(hl_cc_frame_init(&call, &f));
  const float *a = f.args[0].data;
  float want[6] = {1, 4, 2, 5, 3, 6};  // column after column
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(a[i], want[i]);
  // The result is column-major too: writing memory 0..5 gives [[0,2,4],[1,3,5]].
  for (int i = 0; i < 6; i++) ((float *)f.rets[0].data)[i] = (float)i;
  HL_ASSERT_OK(hl_cc_frame_finish(&call, &f, &y));
  float logical[6] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(((float *)y->data)[i], logical[i]);
  hl_cc_frame_deinit(&f);
  hl_literal_release(y);
  hl_literal_release(x);
}

static void test_batched_layout_round_trip(void) {
  kt_reset();
  int64_t d[3] = {2, 3, 4};
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  hl_literal_t *x = kt_lit_f64(HL_F32, 3, d, v);
  hl_literal_t *ops[1] = {x};
  hl_instruction_t *inst = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 3, d);
  kt_set_operand_count(inst, 1);
  set_constraint(inst, 3, d, (const int64_t[]){1, 2, 0});  // jaxlib's batch of column-major
  hl_custom_call_t call = call_of(inst, ops);
  hl_cc_frame_t f;
  HL_ASSERT_OK(hl_cc_frame_init(&call, &f));
  // Batch b, row r, column c sits at b*12 + c*3 + r.
  const float *a = f.args[0].data;
  for (int b = 0; b < 2; b++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 4; c++) CU_ASSERT_EQUAL(a[b * 12 + c * 3 + r], b * 12 + r * 4 + c);
  hl_cc_frame_deinit(&f);
  hl_literal_release(x);
}

static void test_bad_layouts(void) {
  kt_reset();
  int64_t d[2] = {2, 2};
  double v[4] = {0};
  hl_literal_t *x = kt_lit_f64(HL_F32, 2, d, v);
  hl_literal_t *ops[1] = {x};
  hl_instruction_t *inst = kt_inst(HL_OP_CUSTOM_CALL, HL_F32, 2, d);
  kt_set_operand_count(inst, 1);
  set_constraint(inst, 2, d, (const int64_t[]){1, 1});
  hl_custom_call_t call = call_of(inst, ops);
  hl_cc_frame_t f;
  HL_ASSERT_ERROR_CONTAINS(hl_cc_frame_init(&call, &f), "not a permutation");
  hl_cc_frame_deinit(&f);
  int64_t other[2] = {2, 3};
  hl_shape_deinit(&inst->attrs.operand_shapes_with_layout[0]);
  hl_free(inst->attrs.operand_shapes_with_layout);
  set_constraint(inst, 2, other, (const int64_t[]){0, 1});
  HL_ASSERT_ERROR_CONTAINS(hl_cc_frame_init(&call, &f), "layout constraint is");
  hl_cc_frame_deinit(&f);
  hl_literal_release(x);
}

static CU_TestInfo tests[] = {
    {"column_major_operand_and_result", test_column_major_operand_and_result},
    {"batched_layout_round_trip", test_batched_layout_round_trip},
    {"bad_layouts", test_bad_layouts},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("frame", tests)
