// One process's debugging state, kept in a memory-mapped file of a per-job
// directory so that other processes (the rank that writes the merged hang
// report, the launcher after a rank died) can read it without the owner's
// help, even after the owner was killed: the page cache outlives it.
//
// The owner writes it as it runs (runtime/debug/debug_observer.c): the stack
// of instructions it is inside (innermost last), the while-loop iteration of
// each, and a ring of its last collective / channel events. Instructions are
// named by their module-unique id; a reader with the same program resolves
// them (hl_rank_state_find_instruction).
#ifndef HL_RUNTIME_DEBUG_RANK_STATE_H_
#define HL_RUNTIME_DEBUG_RANK_STATE_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

enum {
  HL_RANK_STATE_MAX_DEPTH = 64,    // deeper call chains keep counting but are not recorded
  HL_RANK_STATE_EVENTS = 32,       // flight recorder: the last collective / channel events
  HL_RANK_STATE_MAGIC = 0x484c4453,  // "HLDS"
};

// A frame id meaning "no instruction" (the frame above the stack, before
// any instruction started there).
#define HL_RANK_STATE_NO_ID INT64_MIN

typedef enum hl_rank_phase {
  HL_PHASE_STARTING = 0,  // before the program runs
  HL_PHASE_RUNNING,       // inside hl_executable_run
  HL_PHASE_WAITING,       // finished the run, waiting for the other ranks to finish theirs
  HL_PHASE_DONE,          // past the run (outputs, shutdown)
} hl_rank_phase_t;

// frames[0 .. depth-1] are the instructions that call computations or
// communicate, outermost first; frames[depth].id (when depth is below
// MAX_DEPTH and it is not HL_RANK_STATE_NO_ID) is the marker: the last other
// instruction started inside the innermost one (only its id is kept).
typedef struct hl_rank_frame {
  int64_t id;          // instruction id
  int64_t iteration;   // while: body runs started - 1 (the 0-based iteration); else -1
  int64_t start_ns;    // CLOCK_MONOTONIC when it was entered
} hl_rank_frame_t;

typedef struct hl_rank_event {
  int64_t id;          // instruction id
  int32_t opcode;
  int32_t depth;       // stack depth, to find its enclosing while loops' iterations
  int64_t iteration;   // innermost enclosing while's iteration (-1: none)
  int64_t start_ns, end_ns;  // end 0: not finished
  int64_t bytes;       // operand bytes (for -done forms: result bytes)
  int64_t serial;      // 1, 2, ... over the rank's life (0: slot unused)
} hl_rank_event_t;

typedef struct hl_rank_state {
  uint32_t magic;
  int32_t rank, pid;
  int32_t phase;              // hl_rank_phase_t
  int32_t depth;              // frames in use (may exceed MAX_DEPTH)
  int32_t signal;             // a fatal signal the process caught (0: none)
  int32_t exited;             // the process called exit() (its atexit handlers ran)
  int64_t phase_ns;           // when the phase began
  int64_t progress_ns;        // when the last instruction finished
  int64_t events_written;     // the ring's next serial - 1
  char host[64];
  char program[256];          // the program file, to know whether ids mean the same
  hl_rank_frame_t frames[HL_RANK_STATE_MAX_DEPTH];
  hl_rank_event_t events[HL_RANK_STATE_EVENTS];
} hl_rank_state_t;

// CLOCK_MONOTONIC in ns (comparable across processes of one host).
int64_t hl_rank_state_now_ns(void);

// Creates (or truncates) `path` and maps a zeroed state into it for `rank`.
hl_status_t hl_rank_state_create(const char *path, int rank, const char *program,
                                 hl_rank_state_t **out_state);
// Maps another process's state read-only; a copy is made so the caller sees
// one consistent-enough snapshot. HL_NOT_FOUND when the file does not exist.
hl_status_t hl_rank_state_read(const char *path, hl_rank_state_t *out_copy);
void hl_rank_state_close(hl_rank_state_t *state);  // NULL-safe; the file stays

void hl_rank_state_set_phase(hl_rank_state_t *state, hl_rank_phase_t phase);

// The instruction with module-unique id `id` (NULL: none).
const hl_instruction_t *hl_rank_state_find_instruction(const hl_module_t *module, int64_t id);

// The path of rank k's state in `dir`: DIR/rank<k>.state.
void hl_rank_state_path(const char *dir, int rank, char *buf, size_t cap);

#endif  // HL_RUNTIME_DEBUG_RANK_STATE_H_
