// The kernel contract's helpers built on the executor's services (kernel.h).
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
