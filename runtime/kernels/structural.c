// Structural kernels: values that move through the graph without arithmetic
// (parameters, constants, tuples, tokens, the process's grid coordinates),
// and the kernel of every opcode not run yet.
//
// Convention for every kernel: the message of a returned error does not name
// the instruction; the executor prepends hl_instruction_location once.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/kernel.h"

// parameter: the caller's argument, shared (arguments are immutable).
hl_status_t hl_kernel_parameter(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  hl_literal_t *arg = hl_kernel_frame_argument(ctx, inst->attrs.parameter_number);
  if (!arg)
    return HL_INVALID("parameter %lld has no argument in this call",
                      (long long)inst->attrs.parameter_number);
  *out = hl_literal_retain(arg);
  return NULL;
}

// constant: the literal decoded by the loader, shared.
hl_status_t hl_kernel_constant(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                               hl_literal_t *const *operands, hl_literal_t **out) {
  if (!inst->attrs.literal) return HL_INVALID("constant has no literal value");
  *out = hl_literal_retain(inst->attrs.literal);
  return NULL;
}

// tuple: retains its operands as elements (no copy).
hl_status_t hl_kernel_tuple(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  return hl_literal_create_tuple(operands, inst->operand_count, out);
}

// get-tuple-element: the element, shared.
hl_status_t hl_kernel_get_tuple_element(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *t = operands[0];
  if (t->shape.dtype != HL_TUPLE)
    return HL_INVALID("operand is %s, not a tuple", hl_shape_debug_string(&t->shape));
  int64_t i = inst->attrs.tuple_index;
  if (i < 0 || i >= t->shape.tuple_count)
    return HL_INVALID("index %lld out of range for a tuple of %d element%s", (long long)i,
                      t->shape.tuple_count, hl_plural(t->shape.tuple_count));
  *out = hl_literal_retain(t->elements[i]);
  return NULL;
}

// after-all: a fresh token; ordering is already fixed by the plan.
hl_status_t hl_kernel_after_all(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  return hl_literal_create_token(out);
}

// add-dependency: operand 0's value; operand 1 (a token) only orders.
hl_status_t hl_kernel_add_dependency(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                     hl_literal_t *const *operands, hl_literal_t **out) {
  *out = hl_literal_retain(operands[0]);
  return NULL;
}

static hl_status_t grid_id(const hl_instruction_t *inst, int64_t id, hl_literal_t **out) {
  if (inst->shape.dtype != HL_U32 || inst->shape.rank != 0)
    return HL_INVALID("result shape must be u32[], got %s", hl_shape_debug_string(&inst->shape));
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, out));
  uint32_t v = (uint32_t)id;
  memcpy((*out)->data, &v, sizeof(v));
  return NULL;
}

// replica-id / partition-id: this process's coordinates in the grid, as u32[].
hl_status_t hl_kernel_replica_id(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  return grid_id(inst, o ? o->replica_id : 0, out);
}

hl_status_t hl_kernel_partition_id(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                   hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  return grid_id(inst, o ? o->partition_id : 0, out);
}

hl_status_t hl_kernel_unimplemented(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                    hl_literal_t *const *operands, hl_literal_t **out) {
  return HL_UNIMPL("opcode '%s' is not supported by this executor yet",
                   hl_opcode_name(inst->opcode));
}
