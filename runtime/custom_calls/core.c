// The core custom-call targets: annotations real XLA / JAX dumps carry, and
// the ordinary-math targets TopK and Threefry.
//
// | target                              | result                                        |
// |-------------------------------------|-----------------------------------------------|
// | Sharding                            | the operand (a sharding annotation; this      |
// |                                     | runtime's SPMD values are already per rank)   |
// | SPMDFullToShardShape                | the operand, when the shapes agree (one       |
// | SPMDShardToFullShape                | partition: shard = full); else an error       |
// | annotate_device_placement           | the operand (memory-space annotations: host   |
// | MoveToHost, MoveToDevice            | and device memory are the same here)          |
// | PinToDevice, PinToHost              |                                               |
// | TopK                                | (values, s32 indices) of the k largest along  |
// |                                     | the last dimension, k from the result shape   |
// | ApproxTopK                          | exact: sort by its comparator, first top_k    |
// | cu_threefry2x32, cu_threefry2x32_ffi| JAX's GPU Threefry2x32-20: operands key0,     |
// | hip_threefry2x32(_ffi)              | key1, x0, x1 (u32, each the result shape or a |
// |                                     | scalar), result (u32, u32)                    |
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/custom_calls/ffi_attrs.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/rng.h"

static hl_status_t identity(const hl_custom_call_t *call, hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  hl_literal_t *const *operands = call->operands;
  const char *target = call->name;
  if (inst->operand_count != 1)
    return HL_INVALID("%s: custom-call target \"%s\" takes 1 operand, got %d",
                      hl_instruction_location(inst), target, inst->operand_count);
  if (!hl_shape_equal(&operands[0]->shape, &inst->shape))
    return HL_UNIMPL("%s: custom-call target \"%s\" changes the shape %s to %s; only the "
                     "single-partition form (same shape) is supported",
                     hl_instruction_location(inst), target,
                     HL_SHAPE_STR(&operands[0]->shape), HL_SHAPE_STR(&inst->shape));
  *out = hl_literal_retain(operands[0]);
  return NULL;
}

static hl_status_t top_k(const hl_custom_call_t *call, hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  hl_literal_t *const *operands = call->operands;
  const hl_shape_t *rs = &inst->shape;
  if (inst->operand_count != 1 || rs->dtype != HL_TUPLE || rs->tuple_count != 2 ||
      rs->tuple[0].rank < 1)
    return HL_INVALID("%s: custom-call \"TopK\" needs 1 operand and a (values, indices) result, "
                      "got %s", hl_instruction_location(inst), HL_SHAPE_STR(rs));
  // The topk kernel reads k and largest from the instruction: hand it a
  // shallow copy carrying them (XLA's TopK custom call is always largest).
  hl_instruction_t tmp = *inst;
  tmp.opcode = HL_OP_TOPK;
  tmp.attrs.k = rs->tuple[0].dims[rs->tuple[0].rank - 1];
  tmp.attrs.largest = true;
  HL_RETURN_IF_ERROR_CTX(hl_kernel_topk(call->ctx, &tmp, operands, out), "%s: custom-call \"TopK\"",
                         hl_instruction_location(inst));
  return NULL;
}

// ApproxTopK (jax.lax.approx_max_k / approx_min_k): N operands and N init
// values, called_computations = [comparator], attributes top_k, reduction_dim,
// recall_target, aggregate_to_topk, reduction_input_size_override. Off TPU,
// XLA runs its exact fallback (xla/service/topk_rewriter.cc / approx_topk):
// a sort by the comparator along reduction_dim, then the first top_k. An
// exact top-k meets every recall_target; the init values only pad.
static hl_status_t approx_top_k(const hl_custom_call_t *call, hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  *out = NULL;
  int n = inst->operand_count / 2;
  const hl_shape_t *rs = &inst->shape;
  int nr = rs->dtype == HL_TUPLE ? rs->tuple_count : 1;
  if (n < 1 || inst->operand_count != 2 * n || nr != n || inst->called_count != 1 || n > 8)
    return HL_INVALID("%s: custom-call \"ApproxTopK\" needs N operands, N init values, N "
                      "results (N <= 8) and one comparator, got %d operands, %d results",
                      loc, inst->operand_count, nr);
  int64_t k, dim, aggregate = 1;
  bool found;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "top_k", &k));
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "reduction_dim", &dim));
  HL_RETURN_IF_ERROR(hl_ffi_attr_int_opt(call, "aggregate_to_topk", &aggregate, &found));
  if (!aggregate)
    return HL_UNIMPL("%s: custom-call \"ApproxTopK\" with aggregate_to_topk = false (the "
                     "TPU's partial-reduction output) is not supported", loc);
  const hl_shape_t *s0 = &call->operands[0]->shape;
  if (dim < 0) dim += s0->rank;
  if (dim < 0 || dim >= s0->rank || k < 0 || k > s0->dims[dim])
    return HL_INVALID("%s: custom-call \"ApproxTopK\" top_k %lld / reduction_dim %lld do not fit "
                      "operand %s", loc, (long long)k, (long long)dim, HL_SHAPE_STR(s0));
  hl_shape_t shapes[8];
  for (int j = 0; j < n; j++) {
    const hl_shape_t *r = rs->dtype == HL_TUPLE ? &rs->tuple[j] : rs;
    const hl_shape_t *x = &call->operands[j]->shape;
    bool ok = r->dtype == x->dtype && r->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++)
      ok = r->dims[i] == (i == dim ? k : x->dims[i]) && x->dims[i] == s0->dims[i];
    if (!ok)
      return HL_INVALID("%s: custom-call \"ApproxTopK\" result %d is %s for operand %s and "
                        "top_k %lld", loc, j, HL_SHAPE_STR(r), HL_SHAPE_STR(x), (long long)k);
    shapes[j] = *x;
  }
  hl_instruction_t sort = *inst;
  sort.opcode = HL_OP_SORT;
  sort.operand_count = n;
  int64_t dims[1] = {dim};
  sort.attrs.dimensions = (hl_i64_list_t){dims, 1};
  hl_status_t st = NULL;
  if (n > 1) {
    st = hl_shape_tuple(shapes, n, &sort.shape);
  } else {
    sort.shape = shapes[0];
  }
  hl_literal_t *sorted = NULL, *parts[8] = {NULL};
  if (!st) st = hl_kernel_sort(call->ctx, &sort, call->operands, &sorted);
  if (n > 1) hl_shape_deinit(&sort.shape);
  int64_t outer = 1, inner = 1, len = s0->dims[dim];
  for (int i = 0; i < s0->rank; i++) {
    if (i < dim) outer *= s0->dims[i];
    if (i > dim) inner *= s0->dims[i];
  }
  for (int j = 0; j < n && !st; j++) {
    const hl_literal_t *src = n > 1 ? sorted->elements[j] : sorted;
    st = hl_literal_create_uninitialized(rs->dtype == HL_TUPLE ? &rs->tuple[j] : rs, &parts[j]);
    size_t es = hl_dtype_size(src->shape.dtype);
    for (int64_t o = 0; !st && o < outer; o++)
      memcpy((char *)parts[j]->data + (size_t)(o * k * inner) * es,
             (const char *)src->data + (size_t)(o * len * inner) * es, (size_t)(k * inner) * es);
  }
  if (!st) {
    if (n > 1) {
      st = hl_literal_create_tuple(parts, n, out);
    } else {
      *out = parts[0];
      parts[0] = NULL;
    }
  }
  for (int j = 0; j < n; j++) hl_literal_release(parts[j]);
  hl_literal_release(sorted);
  return st ? hl_status_annotate(st, "%s: custom-call \"ApproxTopK\"", loc) : NULL;
}

static hl_status_t threefry(const hl_custom_call_t *call, hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  hl_literal_t *const *operands = call->operands;
  const char *target = call->name;
  *out = NULL;
  const hl_shape_t *rs = &inst->shape;
  if (inst->operand_count != 4 || rs->dtype != HL_TUPLE || rs->tuple_count != 2 ||
      rs->tuple[0].dtype != HL_U32 || !hl_shape_equal(&rs->tuple[0], &rs->tuple[1]))
    return HL_INVALID("%s: custom-call \"%s\" needs 4 u32 operands and a (u32, u32) result of "
                      "one shape, got %d operands and %s", hl_instruction_location(inst),
                      target, inst->operand_count, HL_SHAPE_STR(rs));
  const hl_shape_t *s = &rs->tuple[0];
  int64_t n = hl_shape_element_count(s);
  for (int i = 0; i < 4; i++) {
    const hl_shape_t *os = &operands[i]->shape;
    if (os->dtype != HL_U32 || (hl_shape_element_count(os) != 1 && !hl_shape_same_dims(os, s)))
      return HL_INVALID("%s: custom-call \"%s\" operand %d is %s, expected u32 scalar or %s",
                        hl_instruction_location(inst), target, i, HL_SHAPE_STR(os),
                        HL_SHAPE_STR(s));
  }
  hl_literal_t *parts[2] = {NULL, NULL};
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(s, &parts[0]));
  hl_status_t st = hl_literal_create_uninitialized(s, &parts[1]);
  if (!st) {
    const uint32_t *in[4];
    bool scalar[4];
    for (int i = 0; i < 4; i++) {
      in[i] = operands[i]->data;
      scalar[i] = hl_literal_element_count(operands[i]) == 1;
    }
    uint32_t *y0 = parts[0]->data, *y1 = parts[1]->data;
    for (int64_t e = 0; e < n; e++) {
      uint32_t v[4];
      for (int i = 0; i < 4; i++) v[i] = in[i][scalar[i] ? 0 : e];
      hl_threefry2x32(v[0], v[1], &v[2], &v[3]);
      y0[e] = v[2];
      y1[e] = v[3];
    }
    st = hl_literal_create_tuple(parts, 2, out);
  }
  hl_literal_release(parts[0]);
  hl_literal_release(parts[1]);
  return st;
}

const hl_custom_call_target_t hl_custom_calls_core[] = {
    {"Sharding", identity, NULL},
    // Shardy's export form of a function result's sharding (an annotation).
    {"xla.sdy.FuncResultSharding", identity, NULL},
    {"SPMDFullToShardShape", identity, NULL},
    {"SPMDShardToFullShape", identity, NULL},
    {"annotate_device_placement", identity, NULL},
    {"MoveToHost", identity, NULL},
    {"MoveToDevice", identity, NULL},
    {"PinToDevice", identity, NULL},
    {"PinToHost", identity, NULL},
    {"TopK", top_k, NULL},
    {"ApproxTopK", approx_top_k, NULL},
    {"cu_threefry2x32", threefry, NULL},
    {"cu_threefry2x32_ffi", threefry, NULL},
    {"hip_threefry2x32", threefry, NULL},
    {"hip_threefry2x32_ffi", threefry, NULL},
    {NULL, NULL, NULL},
};
