// The executor's observer: one optional hook object the walk calls around
// every instruction, for debugging tools (runtime/debug: hang watchdog,
// flight recorder, NaN / Inf checks). NULL in hl_exec_options_t means no
// observer, and the walk then costs one predictable branch per instruction.
#ifndef HL_RUNTIME_EXEC_OBSERVER_H_
#define HL_RUNTIME_EXEC_OBSERVER_H_

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

typedef struct hl_exec_observer hl_exec_observer_t;

typedef struct hl_exec_observer_vtable {
  // Before inst's kernel runs on its (borrowed) operands.
  void (*enter)(hl_exec_observer_t *observer, const hl_instruction_t *inst,
                hl_literal_t *const *operands, int operand_count);
  // After the kernel returned: result is its value, NULL when it failed (the
  // return value is then ignored). A status stops the run as a kernel error
  // would; it should name the instruction.
  hl_status_t (*leave)(hl_exec_observer_t *observer, const hl_instruction_t *inst,
                       hl_literal_t *const *operands, int operand_count,
                       const hl_literal_t *result);
  // The running instruction calls `computation` (a while calls its condition
  // and body once per iteration; reducers are called per element).
  void (*call)(hl_exec_observer_t *observer, const hl_computation_t *computation);
} hl_exec_observer_vtable_t;

struct hl_exec_observer {
  const hl_exec_observer_vtable_t *vtable;
};

#endif  // HL_RUNTIME_EXEC_OBSERVER_H_
