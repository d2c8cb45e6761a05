// Control flow: call, fusion (run as a call), while and conditional. Each
// runs called computations through the executor, which names the failing
// instruction of the callee and adds this call site.
#include <string.h>

#include "runtime/kernels/kernel.h"

// call / fusion: to_apply (called_computations[0]) on the operands.
hl_status_t hl_kernel_call(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_computation_t *callee = hl_instruction_to_apply(inst);
  if (!callee) return HL_INVALID("no called computation");
  return hl_kernel_call_computation(ctx, callee, operands, inst->operand_count, out);
}

static hl_status_t read_pred(const hl_literal_t *v, const char *what, bool *out) {
  if (v->shape.dtype != HL_PRED || v->shape.rank != 0)
    return HL_INVALID("%s returned %s, expected pred[]", what, hl_shape_debug_string(&v->shape));
  *out = ((const uint8_t *)v->data)[0] != 0;
  return NULL;
}

// while: state = init; while condition(state): state = body(state).
// No iteration limit (programs may loop for long); hl_exec_request_cancel
// stops it (hl_kernel_cancel_requested).
hl_status_t hl_kernel_while(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_computation_t *body = hl_instruction_while_body(inst);
  const hl_computation_t *cond = hl_instruction_while_condition(inst);
  if (!body || !cond) return HL_INVALID("while needs a body and a condition computation");
  hl_literal_t *state = hl_literal_retain(operands[0]);
  hl_status_t st = NULL;
  for (;;) {
    if (hl_kernel_cancel_requested(ctx)) {
      st = HL_ERROR(HL_INTERNAL, "execution cancelled");
      break;
    }
    hl_literal_t *p = NULL;
    st = hl_kernel_call_computation(ctx, cond, &state, 1, &p);
    if (st) break;
    bool go = false;
    st = read_pred(p, "condition", &go);
    hl_literal_release(p);
    if (st || !go) break;
    hl_literal_t *next = NULL;
    st = hl_kernel_call_computation(ctx, body, &state, 1, &next);
    if (st) break;
    hl_literal_release(state);
    state = next;
  }
  if (st) {
    hl_literal_release(state);
    return st;
  }
  *out = state;
  return NULL;
}

// conditional: a pred selector picks branch 0 (true) or 1 (false); an s32
// selector picks branch i, and an out-of-range index picks the last branch
// (XLA semantics). Branch i receives operand i + 1.
hl_status_t hl_kernel_conditional(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                  hl_literal_t *const *operands, hl_literal_t **out) {
  int branches = inst->called_count;
  if (branches < 1) return HL_INVALID("no branch computations");
  if (inst->operand_count != branches + 1)
    return HL_INVALID("%d branches need %d operands (selector + one per branch), got %d",
                      branches, branches + 1, inst->operand_count);
  const hl_literal_t *sel = operands[0];
  int64_t index;
  if (sel->shape.rank == 0 && sel->shape.dtype == HL_PRED) {
    if (branches != 2) return HL_INVALID("a pred selector needs 2 branches, got %d", branches);
    index = ((const uint8_t *)sel->data)[0] ? 0 : 1;
  } else if (sel->shape.rank == 0 && sel->shape.dtype == HL_S32) {
    int32_t v;
    memcpy(&v, sel->data, sizeof(v));
    index = (v < 0 || v >= branches) ? branches - 1 : v;
  } else {
    return HL_INVALID("selector is %s, expected pred[] or s32[]",
                      hl_shape_debug_string(&sel->shape));
  }
  return hl_kernel_call_computation(ctx, inst->called_computations[index], &operands[index + 1],
                                    1, out);
}
