// The hang watchdog: a thread per rank that notices when the rank has been
// blocked for --hang-timeout seconds in a collective or channel instruction
// (or at the end-of-run wait), and then has every rank describe itself.
//
// The ranks talk through files of a per-job directory, not MPI, since a
// rank blocked in MPI cannot answer over it: the first rank to time out
// creates DIR/hang; every rank's watchdog, seeing it, writes
// DIR/rank<k>.report (runtime/debug/hang_report.h); rank 0 waits for them
// (a few seconds at most: a dead or frozen rank is described from its state
// file instead), prints the merged report, writes DIR/hang-report.txt and
// calls end_job.
#ifndef HL_RUNTIME_DEBUG_WATCHDOG_H_
#define HL_RUNTIME_DEBUG_WATCHDOG_H_

#include <stdio.h>

#include "runtime/base/status.h"
#include "runtime/debug/rank_state.h"
#include "runtime/ir/module.h"

typedef struct hl_watchdog_config {
  const char *dir;          // the per-job directory (shared by every rank)
  int rank, size;
  int64_t num_replicas, num_partitions;
  double timeout_s;         // > 0
  hl_rank_state_t *state;   // this rank's (written by the debug observer)
  const hl_module_t *module;
  FILE *out;                // where rank 0 prints the merged report (stderr)
  // Rank 0, after the report: ends the job with a non-zero status. It should
  // not return (MPI_Abort); if it does, the watchdog stops.
  void (*end_job)(void *arg, const char *report_path);
  void *end_job_arg;
} hl_watchdog_config_t;

typedef struct hl_watchdog hl_watchdog_t;

hl_status_t hl_watchdog_start(const hl_watchdog_config_t *config, hl_watchdog_t **out_watchdog);
void hl_watchdog_stop(hl_watchdog_t *watchdog);  // NULL-safe; joins the thread

// Records a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM)
// in `state` before the previous handler runs, so a post-mortem names the
// instruction the rank died in. One state per process.
void hl_watchdog_catch_fatal_signals(hl_rank_state_t *state);
// Puts the previous handlers back.
void hl_watchdog_release_fatal_signals(void);

#endif  // HL_RUNTIME_DEBUG_WATCHDOG_H_
