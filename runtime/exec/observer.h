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
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

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
  // HL_OBSERVE_ENTER returned successfully (instead of leave: nothing to
  // pop), when the walk could not append its record to `log` itself.
  void (*finished)(hl_exec_observer_t *observer, const hl_instruction_t *inst);
  // hl_executable_run begins a run (NULL: not wanted).
  void (*begin_run)(hl_exec_observer_t *observer);
} hl_exec_observer_vtable_t;

// The end of one instruction on a timeline log (--trace: runtime/debug/
// trace_recorder.h makes the spans from them when it writes the trace).
enum { HL_EXEC_LOG_DEPTH_BITS = 6 };
typedef struct hl_exec_log_record {
  const hl_instruction_t *inst;  // NULL: a boundary only (a run's start)
  uint64_t tick_depth;           // (ticks - base) << HL_EXEC_LOG_DEPTH_BITS | depth
} hl_exec_log_record_t;

// Room the walk appends records to itself, without a call.
typedef struct hl_exec_log {
  hl_exec_log_record_t *next, *end;  // next == end: no room (the observer's `finished` then)
  int64_t base;  // subtracted from every tick value (keeps them small and positive)
  int depth;     // the observer's call depth; 1 << HL_EXEC_LOG_DEPTH_BITS or more: not logged
  bool tsc;      // ticks are time-stamp counter values, else CLOCK_MONOTONIC ns
} hl_exec_log_t;

static inline int64_t hl_exec_log_ticks(const hl_exec_log_t *log) {
#if defined(__x86_64__)
  if (__builtin_expect(log->tsc, 1)) return (int64_t)__rdtsc();
#endif
  (void)log;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Appends inst's end now; false when there is no room or it is too deep.
static inline bool hl_exec_log_append(hl_exec_log_t *log, const hl_instruction_t *inst) {
  uint64_t ticks = (uint64_t)(hl_exec_log_ticks(log) - log->base);
  if (log->next == log->end || (unsigned)log->depth >= (1u << HL_EXEC_LOG_DEPTH_BITS))
    return false;
  *log->next++ =
      (hl_exec_log_record_t){inst, ticks << HL_EXEC_LOG_DEPTH_BITS | (unsigned)log->depth};
  return true;
}

// What the walk calls for an instruction (bits of hl_exec_observer_t.hooks).
enum {
  HL_OBSERVE_ENTER = 1,  // enter before the kernel, leave after it
  HL_OBSERVE_LEAVE = 2,  // alone: after the kernel, a record on `log`, or `finished`
};

struct hl_exec_observer {
  const hl_exec_observer_vtable_t *vtable;
  // Per opcode: HL_OBSERVE_* bits. Instructions that call computations
  // always get enter and leave, whatever their opcode's bits say. One
  // without HL_OBSERVE_ENTER gets its id stored into *marker (relaxed)
  // before its kernel instead.
  uint8_t hooks[HL_OP_COUNT_];
  int64_t *marker;  // never NULL; the observer may move it in enter / leave
  hl_exec_log_t *log;  // HL_OBSERVE_LEAVE alone: the walk appends here (NULL: `finished`)
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
