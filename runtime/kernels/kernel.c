// The kernel contract's helpers (kernel.h): operand reuse through the
// executor's services, FLOPs of a call.
#include "runtime/kernels/kernel.h"

hl_literal_t *hl_kernel_reuse_operand(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, int count) {
  if (!ctx || !hl_shape_is_array(&inst->shape)) return NULL;
  for (int k = 0; k < count; k++) {
    hl_literal_t *x = operands[k];
    if (!x || x->elements || x->shape.dtype != inst->shape.dtype ||
        !hl_shape_same_dims(&x->shape, &inst->shape) || !hl_kernel_operand_is_donatable(ctx, k))
      continue;
    x->shape = inst->shape;  // an array shape owns no memory; only the layout may differ
    return hl_literal_retain(x);
  }
  return NULL;
}

double hl_kernel_flops(const hl_instruction_t *inst, hl_literal_t *const *operands, int n,
                       const hl_literal_t *result) {
  if (!result || !hl_shape_is_array(&result->shape) || n < 2) return 0;
  double out = (double)hl_shape_element_count(&result->shape);
  if (inst->opcode == HL_OP_DOT) {
    const hl_i64_list_t *c = &inst->attrs.dot_dimension_numbers.lhs_contracting_dimensions;
    double k = 1;
    for (int i = 0; i < c->n; i++)
      if (c->v[i] >= 0 && c->v[i] < operands[0]->shape.rank)
        k *= (double)operands[0]->shape.dims[c->v[i]];
    return 2 * out * k;
  }
  if (inst->opcode == HL_OP_CONVOLUTION) {
    // Every output element sums kernel spatial size x input features per group.
    const hl_shape_t *rhs = &operands[1]->shape;
    int64_t of = inst->attrs.convolution_dimension_numbers.kernel_output_feature_dimension;
    if (of < 0 || of >= rhs->rank || rhs->dims[of] == 0) return 0;
    return 2 * out * ((double)hl_shape_element_count(rhs) / (double)rhs->dims[of]);
  }
  return 0;
}
