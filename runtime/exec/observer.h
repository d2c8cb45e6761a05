// The executor's observer: one optional hook object the walk calls around
// instructions, for debugging tools (runtime/debug: hang watchdog, flight
// recorder, NaN / Inf checks, --trace). NULL in hl_exec_options_t means no
// observer, and the walk then costs one predictable branch per instruction.
//
// Cheap when on (the hang watchdog keeps one on by default): the observer
// says per opcode what it wants (`hooks`), and the walk tests that inline,
// so an instruction the observer only needs to know was started costs one
// relaxed store of its id into `*marker`, no call.
#ifndef HL_RUNTIME_EXEC_OBSERVER_H_
#define HL_RUNTIME_EXEC_OBSERVER_H_

#include <stdbool.h>
#include <stdint.h>

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
  // After the kernel of an instruction with HL_OBSERVE_LEAVE but not
  // HL_OBSERVE_ENTER returned successfully (instead of leave: nothing to pop).
  void (*finished)(hl_exec_observer_t *observer, const hl_instruction_t *inst);
  // hl_executable_run begins a run (NULL: not wanted).
  void (*begin_run)(hl_exec_observer_t *observer);
} hl_exec_observer_vtable_t;

// What the walk calls for an instruction (bits of hl_exec_observer_t.hooks).
enum {
  HL_OBSERVE_ENTER = 1,  // enter before the kernel, leave after it
  HL_OBSERVE_LEAVE = 2,  // alone: `finished` after the kernel
};

struct hl_exec_observer {
  const hl_exec_observer_vtable_t *vtable;
  // Per opcode: HL_OBSERVE_* bits. Instructions that call computations
  // always get enter and leave, whatever their opcode's bits say. One
  // without HL_OBSERVE_ENTER gets its id stored into *marker (relaxed)
  // before its kernel instead.
  uint8_t hooks[HL_OP_COUNT_];
  int64_t *marker;  // never NULL; the observer may move it in enter / leave
  // The observer reads every instruction's value (NaN checks): the walk
  // then runs element-wise chains op by op instead of in one blocked pass.
  bool wants_values;
};

// The hooks the walk runs for `inst` (HL_OBSERVE_* bits).
static inline unsigned hl_exec_observer_hooks(const hl_exec_observer_t *observer,
                                              const hl_instruction_t *inst) {
  if (inst->called_count > 0) return HL_OBSERVE_ENTER | HL_OBSERVE_LEAVE;
  return observer->hooks[inst->opcode];
}

#endif  // HL_RUNTIME_EXEC_OBSERVER_H_
