// The debugging observer of the executor (runtime/exec/observer.h): keeps
// the rank's instruction stack, while-loop iterations and flight recorder in
// its rank state (for the hang watchdog and post-mortems), and optionally
// stops the run at the first NaN / Inf an instruction produces.
#ifndef HL_RUNTIME_DEBUG_DEBUG_OBSERVER_H_
#define HL_RUNTIME_DEBUG_DEBUG_OBSERVER_H_

#include <stdbool.h>

#include "runtime/debug/rank_state.h"
#include "runtime/debug/trace_recorder.h"
#include "runtime/exec/observer.h"

typedef struct hl_debug_observer_options {
  hl_rank_state_t *state;  // NULL: no stack / flight recorder (NaN checks only)
  bool check_nans, check_infs;
  hl_trace_recorder_t *trace;  // --trace: a span per instruction (NULL: none)
} hl_debug_observer_options_t;

typedef struct hl_debug_observer hl_debug_observer_t;

hl_status_t hl_debug_observer_create(const hl_debug_observer_options_t *options,
                                     hl_debug_observer_t **out_observer);
void hl_debug_observer_destroy(hl_debug_observer_t *observer);  // NULL-safe
// The hook object to put in hl_exec_options_t.observer.
hl_exec_observer_t *hl_debug_observer_base(hl_debug_observer_t *observer);

// True for the opcodes that wait for other processes: collectives, their
// -start / -done forms, send / recv and their -done forms.
bool hl_debug_opcode_communicates(hl_opcode_t opcode);

#endif  // HL_RUNTIME_DEBUG_DEBUG_OBSERVER_H_
