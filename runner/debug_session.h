// A runner's per-process debugging session (docs/DEBUGGING.md): the job's
// debug directory, this process's state file, the executor observer (stack,
// flight recorder, --check-nans / --check-infs), the hang watchdog
// (--hang-timeout) and the --trace recorder. Everything is off, and the
// executor gets no observer, when hang_timeout_s is 0 and no check or trace
// is asked for. (Messages name hlo-launch's flags: the embedding API exposes
// only the checks.)
#ifndef HL_RUNNER_DEBUG_SESSION_H_
#define HL_RUNNER_DEBUG_SESSION_H_

#include <mpi.h>
#include <stdbool.h>

#include "collectives/progress_hook.h"
#include "runtime/debug/debug_observer.h"
#include "runtime/debug/rank_state.h"
#include "runtime/debug/watchdog.h"

// The exit status of a job that the hang watchdog ended.
enum { HL_EXIT_HANG = 3 };

typedef struct hl_debug_session_options {
  const char *label;       // the program, as the rank state names it
  double hang_timeout_s;   // --hang-timeout (0: no watchdog, no state file)
  const char *debug_dir;   // --debug-dir (NULL: a new directory in $TMPDIR)
  const char *trace_file;  // --trace FILE.json (NULL: no trace)
  bool check_nans, check_infs;
  // Called on process 0 after the watchdog printed its report; it must end
  // the job (NULL: MPI_Abort of MPI_COMM_WORLD with HL_EXIT_HANG).
  void (*end_job)(void *ctx);
  void *end_job_ctx;
} hl_debug_session_options_t;

typedef struct hl_debug_session {
  const hl_debug_session_options_t *options;  // borrowed for the session's life
  MPI_Comm comm;
  int rank, size;
  char dir[4096];          // "" when no directory is used
  bool made_dir;           // created by rank 0 here (removed after a clean run)
  hl_rank_state_t *state;
  hl_debug_observer_t *observer;
  hl_watchdog_t *watchdog;
  hl_trace_recorder_t *trace;  // --trace
  hl_progress_hook_t progress_hook;  // --trace: the progress thread's spans into `trace`
  int64_t clock_offset_ns;     // this rank's CLOCK_MONOTONIC minus rank 0's (--trace)
  int64_t clock_uncertainty_ns;  // its error bound (0: rank 0's kernel, the same clock)
  int64_t trace_origin_ns;     // rank 0's clock when the session began
} hl_debug_session_t;

// Collective over `comm`: rank 0 prepares the directory (--debug-dir, else
// a new one in $TMPDIR) and tells the others; each rank creates its state.
hl_status_t hl_debug_session_begin(hl_debug_session_t *session,
                                   const hl_debug_session_options_t *options, MPI_Comm comm,
                                   int rank, int size);
// Starts the watchdog, once the program and grid are known.
hl_status_t hl_debug_session_start(hl_debug_session_t *session, const hl_module_t *module,
                                   int64_t num_replicas, int64_t num_partitions);
// The observer for hl_exec_options_t (NULL: nothing to observe).
hl_exec_observer_t *hl_debug_session_observer(const hl_debug_session_t *session);
void hl_debug_session_phase(hl_debug_session_t *session, hl_rank_phase_t phase);
// --trace: collective; rank 0 gathers every rank's spans and writes the file.
hl_status_t hl_debug_session_write_trace(hl_debug_session_t *session, int64_t num_replicas,
                                         int64_t num_partitions,
                                         const hl_channel_env_t *channels);
// Stops the watchdog. After a clean run (collective then) the state files
// and a directory made here are removed; after a failure they stay.
void hl_debug_session_end(hl_debug_session_t *session, bool clean);

#endif  // HL_RUNNER_DEBUG_SESSION_H_
