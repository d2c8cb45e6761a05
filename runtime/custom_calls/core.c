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
// | cu_threefry2x32, cu_threefry2x32_ffi| JAX's GPU Threefry2x32-20: operands key0,     |
// | hip_threefry2x32(_ffi)              | key1, x0, x1 (u32, each the result shape or a |
// |                                     | scalar), result (u32, u32)                    |
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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
    {"cu_threefry2x32", threefry, NULL},
    {"cu_threefry2x32_ffi", threefry, NULL},
    {"hip_threefry2x32", threefry, NULL},
    {"hip_threefry2x32_ffi", threefry, NULL},
    {NULL, NULL, NULL},
};
