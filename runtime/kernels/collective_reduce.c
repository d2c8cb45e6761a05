// collective-reduce (newest XLA only; not in the spec documents). Semantics
// from XLA's own sources:
//   - xla/backends/gpu/runtime/collective_reduce_thunk.{h,cc}: the operands
//     are reduced with to_apply over each replica group and the result is
//     written only on the root: position 0 of the group, or, with
//     has_dynamic_root, the position held by the trailing s32 operand (one
//     root per reduced operand; out-of-range roots are an error).
//   - collective_reduce_thunk_multigpu_test.cc: the other members'
//     destinations are left undefined. This runtime defines them as zeros
//     (as collective-broadcast gives processes outside its groups), so a
//     run is deterministic.
//   - xla/hlo/parser/hlo_parser.cc: attributes to_apply (required),
//     replica_groups, channel_id, constrain_layout, use_global_device_ids,
//     has_dynamic_root; the group mode is all-reduce's
//     (collectives/groups.c).
// One data operand gives an array result; several give a tuple of them (the
// roots operand is not part of the result).
//
// The roots are per-process values that every member of a group must agree
// on (the GPU thunk passes its root to ncclReduce on every rank). Members
// that disagree would pair different MPI reduces and hang, so with a dynamic
// root the group first agrees on them (one small all-reduce of max(root) and
// max(-root)), and a disagreement fails on every member.
//
// The transfer goes through the communicator's `reduce` entry (comm.h),
// never MPI.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/collective_support.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"

// The root agreement's reference combine: element-wise s32 maximum.
static hl_status_t max_s32(void *state, hl_dtype_t dtype, const void *in, void *inout,
                           int64_t count) {
  (void)state;
  if (dtype != HL_S32) return HL_INTERNAL_ERROR("root agreement on %s", hl_dtype_name(dtype));
  const int32_t *a = in;
  int32_t *b = inout;
  for (int64_t i = 0; i < count; i++)
    if (a[i] > b[i]) b[i] = a[i];
  return NULL;
}

//===----------------------------------------------------------------------===//
// Roots
//===----------------------------------------------------------------------===//

// The trailing s32[data] roots operand of collective-reduce and of
// collective-broadcast (collective_support.h): one small max all-reduce of
// (roots, -roots) tells every member whether the group agrees.
hl_status_t hl_collective_dynamic_roots(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, int data, int size,
                                        int32_t *roots) {
  const char *loc = hl_instruction_location(inst);
  const char *what = inst->opcode == HL_OP_COLLECTIVE_REDUCE ? "reduced" : "broadcast";
  const hl_literal_t *r = operands[data];
  if (r->shape.dtype != HL_S32 || r->shape.rank != 1 || r->shape.dims[0] != data)
    return HL_INVALID("%s: with has_dynamic_root=true the last operand must be s32[%d] (one "
                      "root per %s operand), got %s", loc, data, what, HL_SHAPE_STR(&r->shape));
  memcpy(roots, r->data, (size_t)data * sizeof(*roots));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  if (comm && size > 1) {
    int32_t *both = hl_malloc((size_t)data * 2 * sizeof(int32_t));
    if (!both) return HL_OOM();
    for (int k = 0; k < data; k++) {
      both[k] = roots[k];
      // -INT32_MIN overflows; such a root is out of range anyway.
      both[data + k] = roots[k] == INT32_MIN ? INT32_MAX : -roots[k];
    }
    hl_comm_reducer_t mx = {.op = HL_COMM_REDUCE_MAX, .combine = max_s32, .state = NULL};
    hl_status_t st = comm->vtable->all_reduce(comm, inst, HL_S32, both, both, 2 * (int64_t)data,
                                              &mx, NULL);
    for (int k = 0; k < data && !st; k++)
      if (both[k] != -both[data + k])
        st = HL_INVALID("%s: the processes of its group disagree on the root of operand %d (it "
                        "ranges over [%d, %d]); has_dynamic_root needs one root per group",
                        loc, k, -both[data + k], both[k]);
    hl_free(both);
    HL_RETURN_IF_ERROR(st);
  }
  for (int k = 0; k < data; k++)
    if (roots[k] < 0 || roots[k] >= size)
      return HL_INVALID("%s: dynamic root %d of operand %d is out of range [0, %d) (the group "
                        "size)", loc, (int)roots[k], k, size);
  return NULL;
}

// roots[k]: the group position receiving data operand k's reduction.
static hl_status_t read_roots(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, int data, int size,
                              int32_t *roots) {
  if (inst->attrs.has_dynamic_root)
    return hl_collective_dynamic_roots(ctx, inst, operands, data, size, roots);
  memset(roots, 0, (size_t)data * sizeof(*roots));
  return NULL;
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

hl_status_t hl_kernel_collective_reduce(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, hl_literal_t **out) {
  const char *loc = hl_instruction_location(inst);
  int n = inst->operand_count;
  int data = inst->attrs.has_dynamic_root ? n - 1 : n;
  if (data < 1)
    return HL_INVALID("%s: collective-reduce needs at least one operand to reduce%s", loc,
                      inst->attrs.has_dynamic_root ? " besides the roots operand" : "");
  const hl_computation_t *to_apply = hl_instruction_to_apply(inst);
  if (!to_apply) return HL_INVALID("%s: no reducer computation (to_apply)", loc);
  const hl_shape_t *rs = &inst->shape;
  bool tuple = rs->dtype == HL_TUPLE;
  if (tuple ? rs->tuple_count != data : data != 1)
    return HL_INVALID("%s: result %s must be %s", loc, HL_SHAPE_STR(rs),
                      data == 1 ? "the operand's array shape" : "a tuple of the operands' shapes");
  for (int k = 0; k < data; k++) {
    const hl_shape_t *want = tuple ? &rs->tuple[k] : rs;
    if (!hl_shape_is_array(&operands[k]->shape) || !hl_shape_equal(want, &operands[k]->shape))
      return HL_INVALID("%s: operand %d is %s but its result is %s", loc, k,
                        HL_SHAPE_STR(&operands[k]->shape), HL_SHAPE_STR(want));
  }
  int size, index;
  HL_RETURN_IF_ERROR(hl_collective_group_of(ctx, inst, &size, &index));
  int32_t *roots = hl_malloc((size_t)data * sizeof(*roots));
  hl_literal_t **res = hl_calloc((size_t)data, sizeof(*res));
  hl_status_t st = roots && res ? NULL : HL_OOM();
  if (!st) st = read_roots(ctx, inst, operands, data, size, roots);
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  for (int k = 0; k < data && !st; k++) {
    const hl_literal_t *x = operands[k];
    const hl_shape_t *want = tuple ? &rs->tuple[k] : rs;
    if (!comm || size == 1) {  // reducing one value gives it back
      res[k] = hl_literal_retain(operands[k]);
      continue;
    }
    hl_collective_reducer_state_t rstate;
    hl_comm_reducer_t reducer;
    hl_collective_make_reducer(ctx, to_apply, x->shape.dtype, &rstate, &reducer);
    int64_t count = hl_literal_element_count(x);
    if (index != roots[k]) {
      // The other members send; their result is zeros (see above).
      st = comm->vtable->reduce(comm, inst, x->shape.dtype, x->data, NULL, count, roots[k],
                                &reducer, NULL);
      if (!st) st = hl_literal_create(want, &res[k]);
      continue;
    }
    bool donate = hl_kernel_operand_is_donatable(ctx, k);
    if (donate) res[k] = hl_literal_retain(operands[k]);
    else st = hl_literal_create_uninitialized(want, &res[k]);
    if (!st)
      st = comm->vtable->reduce(comm, inst, x->shape.dtype, donate ? res[k]->data : x->data,
                                res[k]->data, count, roots[k], &reducer, NULL);
  }
  if (!st && tuple) st = hl_literal_create_tuple(res, data, out);
  else if (!st) *out = hl_literal_retain(res[0]);
  for (int k = 0; res && k < data; k++) hl_literal_release(res[k]);
  hl_free(res);
  hl_free(roots);
  return st;
}
