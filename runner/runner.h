// One program bound to the processes of an MPI communicator: the set-up
// sequence and the runs that hlo-launch's ranks (launcher/worker.c, batch
// mode too) and the embedding API (api/runtime.c) share, so both run a
// program the same way. The sequence:
//
//   hl_runner_create: the grid -> a global program partitioned -> the static
//     checks (collectives, the caller's own) -> the fusion pass -> the
//     executable, its warm start begun;
//   (the caller builds its inputs for the per-partition program here)
//   hl_runner_start: the MPI communicator of collectives/ with its
//     shared-memory layer (tuning, autotuning) -> the collectives prepared ->
//     channels and host feeds -> the debug session (observer, watchdog,
//     trace);
//   hl_runner_run, as often as wanted (plans and compiled loops reused);
//   hl_runner_free.
//
// Every step that the next one depends on ends with an agreement over the
// communicator (collectives/agree.h): the functions that return a status
// return the agreed one, the same on every process, so a failure on one
// process is an error on all and none waits in a collective the others never
// reach. Messages are the caller's to print (style: line_prefix, abort_note).
#ifndef HL_RUNNER_RUNNER_H_
#define HL_RUNNER_RUNNER_H_

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collectives/shm/shm_layer.h"
#include "runner/debug_session.h"
#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/spmd/grid.h"
#include "runtime/threads/thread_pool.h"

// Which processes run the static collective check
// (runtime/debug/collective_check.h).
typedef enum hl_runner_collective_check {
  HL_RUNNER_CHECK_NONE,       // skipped (checked before, or not wanted)
  HL_RUNNER_CHECK_SAME_NAME,  // when every process names the same program
                              // (check_name): an MPMD job's programs differ
  HL_RUNNER_CHECK_ALWAYS,
} hl_runner_collective_check_t;

typedef struct hl_runner_options {
  // The grid: `grid` when the caller resolved it (its processes must be
  // the communicator's size); else from the communicator's size,
  // replicas and partitions (0: as the program says), in `grid_words`.
  const hl_grid_t *grid;
  int64_t replicas, partitions;
  const hl_grid_words_t *grid_words;  // NULL: hl_grid_resolve's
  // A program that may be global (shardings, no collectives of its own) is
  // partitioned for the grid's partitions when it has a Sharding
  // custom-call, or when global_program says so.
  bool global_program;
  hl_runner_collective_check_t collective_check;
  const char *check_name;  // HL_RUNNER_CHECK_SAME_NAME (NULL: the module's source path)
  // The caller's own check of the (partitioned) module, agreed on; NULL: none.
  hl_status_t (*check_module)(void *ctx, const hl_module_t *module, const hl_grid_t *grid);
  void *check_ctx;
  // Unfused programs get XLA CPU's fusions (runtime/fusion/fusion_pass.h);
  // never under check_nans / check_infs, which name every value. Only a
  // module the runner owns (taken over, or partitioned) is rewritten.
  bool fusion_pass;
  bool no_fusion_blocking;  // fusions op by op (the reference mode)
  // The executable is made at the end of hl_runner_create and, unless
  // no_warm_start, warm-started there (runtime/exec/executor.h: plans,
  // compiled loops and the first run's large buffers on a thread of its
  // own while the caller makes its inputs and hl_runner_start connects).
  bool no_warm_start;
  // Threads: `pool` (borrowed) when given, else a pool of `threads` (> 1).
  hl_thread_pool_t *pool;
  int threads;
  // Collectives (collectives/shm/shm_layer.h).
  hl_collectives_mode_t collectives;
  const char *collectives_tuning;      // a tuning table (NULL: none)
  bool collectives_tune;               // measure one at start-up
  const char *collectives_tuning_out;  // where the measured table goes (NULL: nowhere)
  bool collectives_tune_report;        // print the measurement
  // Host transfers (channels/host_feeds.h); any may be NULL / empty.
  char *const *infeed_files;
  int infeed_file_count;
  const char *infeed_dir, *outfeed_dir;
  // Watchdog, state files, NaN / Inf checks, trace (runner/debug_session.h).
  hl_debug_session_options_t debug;
  // Per-instruction profile of the runs (runtime/exec/profile.h);
  // profile_first_apart: the first run (cold) in a table of its own.
  bool profile, profile_first_apart;
  // The agreement's message style (collectives/agree.h) and how long a
  // process whose run failed waits for the others (negative: forever).
  const char *line_prefix;
  const char *abort_note;
  double stuck_seconds;
} hl_runner_options_t;

typedef struct hl_runner hl_runner_t;

// Collective over `comm` (duplicated: the runner's traffic never meets the
// caller's). `module` is borrowed, or owned by the runner when
// take_module (freed by it, even when this fails). *out_runner is NULL
// on error.
hl_status_t hl_runner_create(hl_module_t *module, bool take_module, MPI_Comm comm,
                             const hl_runner_options_t *options, hl_runner_t **out_runner);
// Collective: the rest of the sequence (above). On error the runner is
// still to be freed.
hl_status_t hl_runner_start(hl_runner_t *runner);

// Collective: one run on this process's arguments (borrowed), agreed on
// with stuck_seconds; *out_result is the root's value (NULL on error).
// *out_seconds (may be NULL): this process's time in the executor.
hl_status_t hl_runner_run(hl_runner_t *runner, hl_literal_t *const *args, int nargs,
                          hl_literal_t **out_result, double *out_seconds);

// Collective: the agreement on a status of the caller's (consumed), in the
// runner's style; stuck_seconds as in hl_mpi_agree.
hl_status_t hl_runner_agree(hl_runner_t *runner, hl_status_t mine, double stuck_seconds);
// The same, waiting forever, for a caller's check just before a run: the
// hang watchdog sees a process waiting here for one that never comes (an
// application that skipped a run on one process) as it sees one waiting
// at the end of a run.
hl_status_t hl_runner_agree_before_run(hl_runner_t *runner, hl_status_t mine);

// --trace: collective; process 0 writes every process's spans.
hl_status_t hl_runner_write_trace(hl_runner_t *runner);
// --profile: collective; process 0 writes every process's table (top
// instructions), roofline line and peak memory line (against the entry's
// live-set lower bound; peaks read when this is called, so call it right
// after the runs) to `out`, each headed "<heading_prefix>profile of rank ...".
void hl_runner_print_profile(hl_runner_t *runner, const char *heading_prefix, int top,
                             FILE *out);
// The same text (hl_free), on process 0; NULL on the others, without a
// profile, or without memory. Collective when profiling.
char *hl_runner_profile_text(hl_runner_t *runner, const char *heading_prefix, int top);

// Collective. `failed`: the caller's work around the runs failed (a failed
// run counts by itself): channels are retired, state files kept.
void hl_runner_free(hl_runner_t *runner, bool failed);  // NULL-safe

// The module that runs (after partitioning and fusion: the runner's).
const hl_module_t *hl_runner_module(const hl_runner_t *runner);
const hl_grid_t *hl_runner_grid(const hl_runner_t *runner);
int64_t hl_runner_replica(const hl_runner_t *runner);
int64_t hl_runner_partition(const hl_runner_t *runner);
MPI_Comm hl_runner_comm(const hl_runner_t *runner);
hl_thread_pool_t *hl_runner_pool(const hl_runner_t *runner);
// "rank 3 (replica 1, partition 1)".
void hl_runner_name_rank(const hl_runner_t *runner, int rank, char *buf, size_t size);

#endif  // HL_RUNNER_RUNNER_H_
