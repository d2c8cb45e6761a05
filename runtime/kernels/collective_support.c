#include "runtime/kernels/collective_support.h"

#include <string.h>

#include "runtime/base/literal.h"
#include "runtime/kernels/reducer_match.h"

hl_status_t hl_collective_group_of(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                   int *out_size, int *out_index) {
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  if (!o->comm) {
    if (o->num_replicas * o->num_partitions != 1)
      return HL_INVALID("%s: a %lldx%lld grid needs a communicator (run it with hlo-launch)",
                        hl_instruction_location(inst), (long long)o->num_replicas,
                        (long long)o->num_partitions);
    *out_size = 1;
    *out_index = 0;
    return NULL;
  }
  return o->comm->vtable->group_of(o->comm, inst, out_size, out_index);
}

// inout[i] = computation(in[i], inout[i]), through the executor. The two
// argument literals are reused from element to element unless the
// computation kept a reference to one.
static hl_status_t run_reducer(void *state, hl_dtype_t dtype, const void *in, void *inout,
                               int64_t count) {
  hl_collective_reducer_state_t *s = state;
  hl_shape_t scalar = hl_shape_scalar(dtype);
  size_t es = hl_dtype_size(dtype);
  hl_literal_t *a = NULL, *b = NULL;
  hl_status_t st = NULL;
  for (int64_t i = 0; i < count && !st; i++) {
    if (!a || a->refcount > 1) {
      hl_literal_release(a);
      a = NULL;
      st = hl_literal_create_uninitialized(&scalar, &a);
    }
    if (!st && (!b || b->refcount > 1)) {
      hl_literal_release(b);
      b = NULL;
      st = hl_literal_create_uninitialized(&scalar, &b);
    }
    if (st) break;
    memcpy(a->data, (const char *)in + (size_t)i * es, es);
    memcpy(b->data, (char *)inout + (size_t)i * es, es);
    hl_literal_t *args[2] = {a, b}, *res = NULL;
    st = hl_kernel_call_computation(s->ctx, s->computation, args, 2, &res);
    if (!st && (res->shape.dtype != dtype || res->shape.rank != 0))
      st = HL_INVALID("reducer '%s' returned %s, expected %s[]", s->computation->name,
                      hl_shape_debug_string(&res->shape), hl_dtype_name(dtype));
    if (!st) memcpy((char *)inout + (size_t)i * es, res->data, es);
    hl_literal_release(res);
  }
  hl_literal_release(a);
  hl_literal_release(b);
  return st;
}

void hl_collective_make_reducer(hl_kernel_context_t *ctx, const hl_computation_t *c,
                                hl_dtype_t dtype, hl_collective_reducer_state_t *state,
                                hl_comm_reducer_t *out) {
  state->ctx = ctx;
  state->computation = c;
  out->combine = run_reducer;
  out->state = state;
  switch (hl_simple_reducer_op(c, dtype)) {
    case HL_OP_ADD: out->op = HL_COMM_REDUCE_ADD; break;
    case HL_OP_MULTIPLY: out->op = HL_COMM_REDUCE_MUL; break;
    case HL_OP_MINIMUM: out->op = HL_COMM_REDUCE_MIN; break;
    case HL_OP_MAXIMUM: out->op = HL_COMM_REDUCE_MAX; break;
    case HL_OP_AND: out->op = HL_COMM_REDUCE_AND; break;
    case HL_OP_OR: out->op = HL_COMM_REDUCE_OR; break;
    case HL_OP_XOR: out->op = HL_COMM_REDUCE_XOR; break;
    default: out->op = HL_COMM_REDUCE_CUSTOM; break;
  }
}
