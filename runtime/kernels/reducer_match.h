// What reduce and reduce-window share about their reducers: recognising
// reducer computations that are one binary op of their two parameters, so
// they can run typed loops instead of calling the computation per element,
// and checking their N inputs and N init values. Private to runtime/kernels.
#ifndef HL_RUNTIME_KERNELS_REDUCER_MATCH_H_
#define HL_RUNTIME_KERNELS_REDUCER_MATCH_H_

#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/kernels/element_access.h"

// The reducer's op when the computation is exactly root = op(param0, param1)
// (either order) on scalars of type t; HL_OP_INVALID_ otherwise.
static inline hl_opcode_t hl_simple_reducer_op(const hl_computation_t *c, hl_dtype_t t) {
  if (!c || c->parameter_count != 2 || !c->root) return HL_OP_INVALID_;
  const hl_instruction_t *r = c->root;
  if (r->operand_count != 2 || r->shape.rank != 0 || r->shape.dtype != t) return HL_OP_INVALID_;
  const hl_instruction_t *a = r->operands[0], *b = r->operands[1];
  if (a->opcode != HL_OP_PARAMETER || b->opcode != HL_OP_PARAMETER ||
      a->attrs.parameter_number == b->attrs.parameter_number)
    return HL_OP_INVALID_;
  if (a->shape.rank != 0 || a->shape.dtype != t || b->shape.rank != 0 || b->shape.dtype != t)
    return HL_OP_INVALID_;
  return r->opcode;
}

// operands[0..n) are inputs of one set of dimensions, operands[n..2n) their
// scalar init values of the same element types; `loc` names the instruction.
static inline hl_status_t hl_check_reducer_inputs(const char *loc, hl_literal_t *const *operands,
                                                  int n) {
  const hl_shape_t *xs = &operands[0]->shape;
  for (int k = 0; k < n; k++) {
    const hl_shape_t *s = &operands[k]->shape, *init = &operands[n + k]->shape;
    if (!hl_shape_is_array(s) || !hl_shape_same_dims(s, xs))
      return HL_INVALID("%s: input %d is %s, expected the dimensions of %s", loc, k,
                        HL_SHAPE_STR(s), HL_SHAPE_STR(xs));
    if (!hl_shape_is_array(init) || init->rank != 0 || init->dtype != s->dtype)
      return HL_INVALID("%s: init value %d is %s, expected a %s scalar", loc, k,
                        HL_SHAPE_STR(init), hl_dtype_name(s->dtype));
  }
  return NULL;
}

#endif  // HL_RUNTIME_KERNELS_REDUCER_MATCH_H_
