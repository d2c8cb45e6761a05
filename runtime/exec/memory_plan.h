// What a run of a computation holds in memory, worked out from its plan
// before the run (issue 24): the live-set lower bound that --profile sets the
// measured peak against, and the large blocks a first run would map fresh,
// which the executable's warm start (executor.h) makes resident ahead.
//
// The walk follows the plan's order and releases, with the executor's own
// sharing: parameters are the caller's; constants the module's; tuple,
// get-tuple-element, copy, add-dependency and opt-barrier share their
// operands' buffers; element-wise unary / binary results take over an operand
// that dies there (hl_kernel_reuse_operand); the interior of a blocked
// element-wise chain never exists. Kernels' own scratch, as they declare it
// (kernels/kernel_scratch.h), is walked beside the values while each kernel
// runs: it takes blocks from the simulated cache and counts in the fresh
// blocks, but not in the bound. Nested computations (loop bodies, calls,
// reducers) are not in it, so for programs with loops the bound covers the
// entry's values only.
#ifndef HL_RUNTIME_EXEC_MEMORY_PLAN_H_
#define HL_RUNTIME_EXEC_MEMORY_PLAN_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/exec/plan.h"

typedef struct hl_memory_plan {
  int64_t parameter_bytes;  // the computation's parameters
  int64_t result_bytes;     // its result (the buffers the caller gets)
  // The most bytes alive at once: parameters, plus the values alive at the
  // plan position where they add up most (an instruction's operands and its
  // result together). The least any schedule-following run can hold.
  int64_t live_peak_bytes;
  // Kernels' declared scratch: the most one instruction holds, and the most
  // values and scratch hold together (parameters included).
  int64_t scratch_peak_bytes;
  int64_t with_scratch_peak_bytes;
  // The large blocks (alloc.h: page-rounded mappings) a run of this plan
  // asks for that the allocator's cache of freed pages, fed by the run's
  // own releases, cannot give -- a request's bytes beyond the cached pages
  // gathered into it: the fresh pages of a first run.
  size_t *fresh_blocks;
  int fresh_block_count;
} hl_memory_plan_t;

// `threads`: the pool size the run will have (per-thread scratch panels).
hl_status_t hl_memory_plan_build(const hl_plan_t *plan, int threads, hl_memory_plan_t *out);
void hl_memory_plan_deinit(hl_memory_plan_t *mp);  // NULL-safe

#endif  // HL_RUNTIME_EXEC_MEMORY_PLAN_H_
