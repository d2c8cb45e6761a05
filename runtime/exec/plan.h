// Execution plans: what the executor works out once per computation before
// walking it, kept as flat arrays so the walk does no allocation and no
// string work per instruction.
//
// A plan fixes the evaluation order (operands and control predecessors before
// users, otherwise the IR order) and, for every position, the values that die
// there: a value is released right after its last user ran (right after
// itself when nothing uses it); the root's value is kept and handed to the
// caller.
//
// Also here: executor statistics (live values, for tests and debugging) and
// the cancellation flag that the while loop polls.
#ifndef HL_RUNTIME_EXEC_PLAN_H_
#define HL_RUNTIME_EXEC_PLAN_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/kernels/kernel.h"

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

typedef struct hl_plan {
  const hl_computation_t *computation;
  int count;                        // instructions, == computation->instruction_count
  const hl_instruction_t **order;   // [count] evaluation order
  hl_kernel_fn_t *kernels;          // [count] kernel of order[p]
  int *operand_start;               // [count+1] operand_slots[operand_start[p]..[p+1])
  int *operand_slots;               // value slots (instruction indices) of order[p]'s operands
  int *release_start;               // [count+1] release_slots[release_start[p]..[p+1])
  int *release_slots;               // slots whose value dies right after position p
  int root_slot;                    // computation->root->index
  int max_operands;
  // Unfused element-wise chains run blocked (elementwise_chains.h); NULL /
  // 0 when there are none. chain_at[q]: the chain whose root is at q, -2 an
  // interior member, -1 neither. Values a chain reads live until its root.
  struct hl_plan_chain *chains;
  int chain_count;
  int *chain_at;
  // Scratch for one activation (HLO has no recursion, so a computation is
  // active at most once at a time; `active` detects malformed recursive modules).
  hl_literal_t **values;            // [count], NULL between activations
  hl_literal_t **operand_buffer;    // [max_operands]
  bool active;
} hl_plan_t;

// Builds the plan of `computation`. Errors (cycles through control
// predecessors, operands from another computation, wrong operand counts, no
// root) name the instruction.
hl_status_t hl_plan_create(const hl_computation_t *computation, hl_plan_t **out_plan);
void hl_plan_destroy(hl_plan_t *plan);  // NULL-safe

// Position in plan->order of the last use of slot `slot` (its own position
// when unused; -1 for the root, which is never released). For tests.
int hl_plan_last_use(const hl_plan_t *plan, int slot);

// A small map computation -> plan, filled lazily; one per executable.
typedef struct hl_plan_cache hl_plan_cache_t;

hl_status_t hl_plan_cache_create(int capacity_hint, hl_plan_cache_t **out_cache);
void hl_plan_cache_destroy(hl_plan_cache_t *cache);  // NULL-safe
// The plan of `computation`, built on first request.
hl_status_t hl_plan_cache_get(hl_plan_cache_t *cache, const hl_computation_t *computation,
                              hl_plan_t **out_plan);

//===----------------------------------------------------------------------===//
// Statistics (process-wide, not thread-safe; for tests and debugging)
//===----------------------------------------------------------------------===//

typedef struct hl_exec_stats {
  int64_t live_values;            // values held by running frames right now
  int64_t peak_live_values;       // maximum of live_values since the last reset
  int64_t instructions_executed;  // kernel calls since the last reset
  int64_t plans_built;            // plans created since the last reset
  int64_t buffers_donated;        // operand buffers handed to a result (no copy)
} hl_exec_stats_t;

hl_exec_stats_t hl_exec_stats(void);
void hl_exec_stats_reset(void);  // zeroes every counter except live_values
// Used by the executor's walk.
extern hl_exec_stats_t hl_exec_stats_counters_;

//===----------------------------------------------------------------------===//
// Cancellation
//===----------------------------------------------------------------------===//

// Asks running executions to stop: loops (while) check the flag each
// iteration (kernels ask through the kernel contract's service table,
// hl_kernel_cancel_requested) and fail with "execution cancelled".
// Async-signal-safe, so a SIGINT handler may call it. The flag stays set
// until cleared.
void hl_exec_request_cancel(void);
void hl_exec_clear_cancel(void);
bool hl_exec_cancel_requested(void);

#endif  // HL_RUNTIME_EXEC_PLAN_H_
