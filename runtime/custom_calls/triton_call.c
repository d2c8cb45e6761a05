// `custom-call(...), custom_call_target="__triton", called_computations={C}`:
// the form XLA's GPU compiler gave Triton GEMMs before they became kCustom
// fusions (early 2023 gemm_rewriter_triton / triton_autotuner tests; the
// backend_config holds the tiling, AutotuneResult::TritonGemmKey). As with a
// kCustom fusion, the value is the called computation's on the operands; the
// tiling only steered code generation.
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

hl_status_t hl_custom_calls_triton_check(const hl_instruction_t *inst, const char *name) {
  const char *loc = hl_instruction_location(inst);
  if (inst->called_count != 1)
    return HL_INVALID("%s: custom-call \"%s\" needs exactly one called computation (the Triton "
                      "GEMM's HLO), got %d", loc, name, inst->called_count);
  const hl_computation_t *c = inst->called_computations[0];
  if (c->parameter_count != inst->operand_count)
    return HL_INVALID("%s: custom-call \"%s\" has %d operands but its computation %s takes %d",
                      loc, name, inst->operand_count, c->name, c->parameter_count);
  for (int i = 0; i < inst->operand_count; i++)
    if (!hl_shape_same_dims(&inst->operands[i]->shape, &c->parameters[i]->shape) ||
        inst->operands[i]->shape.dtype != c->parameters[i]->shape.dtype)
      return HL_INVALID("%s: custom-call \"%s\" operand %d is %s, its computation's parameter is "
                        "%s", loc, name, i, HL_SHAPE_STR(&inst->operands[i]->shape),
                        HL_SHAPE_STR(&c->parameters[i]->shape));
  if (!c->root || c->root->shape.dtype != inst->shape.dtype ||
      (inst->shape.dtype != HL_TUPLE && !hl_shape_same_dims(&c->root->shape, &inst->shape)))
    return HL_INVALID("%s: custom-call \"%s\" result %s differs from its computation's root",
                      loc, name, HL_SHAPE_STR(&inst->shape));
  return NULL;
}

static hl_status_t run_triton(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  HL_RETURN_IF_ERROR(hl_custom_calls_triton_check(call->inst, call->name));
  return hl_kernel_call_computation(call->ctx, call->inst->called_computations[0],
                                    call->operands, call->inst->operand_count, out);
}

const hl_custom_call_target_t hl_custom_calls_triton[] = {
    {"__triton", run_triton, NULL},
    {NULL, NULL, NULL},
};
