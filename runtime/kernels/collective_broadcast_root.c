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
// agree on the roots: hl_collective_dynamic_roots (collective_reduce.c)
// exchanges them first, so a disagreement or an out-of-range root fails on
// every member instead of pairing different transfers.
//
// A root other than position 0 moves the data with the communicator's
// all-gather (every member's block; the root's is kept): the comm.h
// broadcast entry always sends from position 0, and a dynamic root is rare
// enough not to need a transfer of its own.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/collective_support.h"
#include "runtime/kernels/element_access.h"

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
