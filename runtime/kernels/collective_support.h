// What every collective kernel needs besides its own transfer: the process's
// group for an instruction, and the reducer handed to the communicator.
// Private to runtime/kernels (collectives.c, collective_reduce.c,
// collective_broadcast_root.c).
#ifndef HL_RUNTIME_KERNELS_COLLECTIVE_SUPPORT_H_
#define HL_RUNTIME_KERNELS_COLLECTIVE_SUPPORT_H_

#include "runtime/base/status.h"
#include "runtime/comm/comm.h"
#include "runtime/ir/module.h"
#include "runtime/kernels/kernel.h"

// The size of this process's group for `inst` and its position in it
// (1 and 0 without a communicator on a 1x1 grid; an error on a larger grid).
hl_status_t hl_collective_group_of(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                   int *out_size, int *out_index);

// The state behind a reducer that calls `computation` through the executor.
typedef struct hl_collective_reducer_state {
  hl_kernel_context_t *ctx;
  const hl_computation_t *computation;
} hl_collective_reducer_state_t;

// The reducer for computation `c` on elements of type `dtype`: a plain
// add / multiply / minimum / maximum / and / or / xor of the two parameters
// lets the backend use a native reduction; `combine` (the computation, per
// element) stays the reference for everything else. `state` must outlive
// the reducer's use.
void hl_collective_make_reducer(hl_kernel_context_t *ctx, const hl_computation_t *c,
                                hl_dtype_t dtype, hl_collective_reducer_state_t *state,
                                hl_comm_reducer_t *out);

// collective-reduce / collective-broadcast with has_dynamic_root
// (collective_reduce.c): roots[k] = the group position that receives /
// broadcasts data operand k, read from the trailing s32[data] operand; the
// group agrees on them first, and a root outside [0, size) is an error.
hl_status_t hl_collective_dynamic_roots(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                        hl_literal_t *const *operands, int data, int size,
                                        int32_t *roots);
// recv = send of the group member at position `root` (every member calls it).
hl_status_t hl_collective_broadcast_from(hl_comm_t *comm, const hl_instruction_t *inst,
                                         int root, int size, const void *send, void *recv,
                                         size_t bytes);

#endif  // HL_RUNTIME_KERNELS_COLLECTIVE_SUPPORT_H_
