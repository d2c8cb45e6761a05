// collective-broadcast with has_dynamic_root (newest XLA; StableHLO's
// interpreter suite runs it). Semantics from XLA's own sources:
//   - xla/backends/gpu/runtime/collective_broadcast_thunk.cc
//     (RunCollectiveBroadcast): the last operand holds one s32 root per data
//     operand, read on every rank, and data operand k is broadcast from the
//     group member at position roots[k] (a rank of the group's
//     communicator), instead of position 0.
//   - xla/hlo/parser/hlo_parser.cc: `has_dynamic_root=true` on
//     collective-broadcast; the roots operand is not part of the result.
// As for collective-reduce (collective_reduce.c), the group's members must
// agree on the roots: they exchange them first (a small all-gather), so a
// disagreement or an out-of-range root fails on every member instead of
// pairing different transfers.
//
// A root other than position 0 moves the data with the communicator's
// all-gather (every member's block; the root's is kept): the comm.h
// broadcast entry always sends from position 0, and a dynamic root is rare
// enough not to need a transfer of its own.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/collective_support.h"
#include "runtime/kernels/element_access.h"

hl_status_t hl_collective_dynamic_roots(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, int data, int size,
                                        int32_t *roots) {
  const char *loc = hl_instruction_location(inst);
  const hl_literal_t *r = operands[data];
  if (r->shape.dtype != HL_S32 || r->shape.rank != 1 || r->shape.dims[0] != data)
    return HL_INVALID("%s: with has_dynamic_root=true the last operand must be s32[%d] (one "
                      "root per broadcast operand), got %s", loc, data, HL_SHAPE_STR(&r->shape));
  memcpy(roots, r->data, (size_t)data * sizeof(*roots));
  hl_comm_t *comm = hl_kernel_options(ctx)->comm;
  if (comm && size > 1) {
    size_t bytes = (size_t)data * sizeof(int32_t);
    int32_t *all = hl_malloc(bytes * (size_t)size);
    if (!all) return HL_OOM();
    hl_status_t st = comm->vtable->all_gather(comm, inst, roots, all, bytes, NULL);
    // The message names the group's range of values, the same on every
    // member (the launcher reports identical messages once for all ranks).
    for (int k = 0; k < data && !st; k++) {
      int32_t lo = all[k], hi = all[k];
      for (int m = 1; m < size; m++) {
        int32_t v = all[(size_t)m * (size_t)data + (size_t)k];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      if (lo != hi)
        st = HL_INVALID("%s: the processes of its group disagree on the root of operand %d (it "
                        "ranges over [%d, %d]); has_dynamic_root needs one root per group",
                        loc, k, (int)lo, (int)hi);
    }
    hl_free(all);
    HL_RETURN_IF_ERROR(st);
  }
  for (int k = 0; k < data; k++)
    if (roots[k] < 0 || roots[k] >= size)
      return HL_INVALID("%s: dynamic root %d of operand %d is out of range [0, %d) (the group "
                        "size)", loc, (int)roots[k], k, size);
  return NULL;
}

hl_status_t hl_collective_broadcast_from(hl_comm_t *comm, const hl_instruction_t *inst,
                                         int root, int size, const void *send, void *recv,
                                         size_t bytes) {
  char *all = hl_malloc(bytes * (size_t)size + 1);
  if (!all) return HL_OOM();
  hl_status_t st = comm->vtable->all_gather(comm, inst, send, all, bytes, NULL);
  if (!st && bytes) memcpy(recv, all + (size_t)root * bytes, bytes);
  hl_free(all);
  return st;
}
