// hlo-launch's command line.
#ifndef HL_LAUNCHER_OPTIONS_H_
#define HL_LAUNCHER_OPTIONS_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/base/status.h"

// Where each process's entry arguments come from.
typedef enum hl_input_source {
  HL_INPUT_DEFAULT,   // snapshot arguments if the program has them, else random (seed 0)
  HL_INPUT_ARGS,      // --args: the same files for every process
  HL_INPUT_ARGS_DIR,  // --args-dir: a directory per process
  HL_INPUT_RANDOM,    // --seed
  HL_INPUT_ZEROS,     // --zeros
  HL_INPUT_GLOBAL,    // --global-args: global arrays cut by each parameter's sharding
} hl_input_source_t;

// Who starts the ranks (outside an MPI job).
typedef enum hl_launcher_kind {
  HL_LAUNCHER_AUTO,    // srun inside a Slurm allocation, else mpiexec
  HL_LAUNCHER_MPIRUN,  // --launcher mpirun
  HL_LAUNCHER_SRUN,    // --launcher srun
} hl_launcher_kind_t;

typedef struct hl_launch_options {
  const char *program;
  int64_t np;                    // 0: not given
  int64_t replicas, partitions;  // 0: not given
  hl_input_source_t input_source;
  char **arg_files;              // --args, split at commas (owned)
  int arg_file_count;
  const char *args_dir;
  uint64_t seed;
  const char *output_dir;
  bool quiet;
  bool dry_run;
  const char *mpiexec;           // --mpiexec, else NULL: the built-with MPI's (starter.h)
  const char **mpiexec_args;     // --mpiexec-arg, in order (owned array)
  int mpiexec_arg_count;
  double timeout_s;              // 0: none
  // Placement and where the job runs (launcher/binding.h, spawn.c).
  int bind_to;                   // hl_bind_policy_t: core (default), numa, none
  bool report_bindings;
  const char *hosts;             // -H / --host: "h1:4,h2:4"
  const char *hostfile;          // --hostfile
  hl_launcher_kind_t launcher;
  // Global arrays, cut and assembled by sharding (launcher/global_io.h).
  char **global_arg_files;       // --global-args, split at commas (owned)
  int global_arg_file_count;
  const char *global_output;     // --global-output FILE.npy
  const char *output_sharding;   // --output-sharding: the result's sharding (HLO syntax)
  char **arg_shardings;          // --arg-shardings, split between shardings (owned)
  int arg_sharding_count;
  // Host transfers (channels/host_feeds.h).
  char **infeed_files;           // --infeed, split at commas (owned)
  int infeed_file_count;
  const char *infeed_dir;        // --infeed-dir
  const char *outfeed_dir;       // --outfeed-dir
  // MPMD ("-np 2 a.hlo : -np 2 b.hlo"): one entry per program, the first
  // being `program`; np is then their total. 0 entries without ':'.
  const char **mpmd_programs;    // (owned array)
  int64_t *mpmd_np;              // (owned)
  int mpmd_count;
  bool help, version;
  const char *probe_output_dir;   // --probe-output-dir: where interpreter.probe writes
  bool split_input_file;          // --split-input-file: run each `// -----` case of a .mlir
  // Batch mode (launcher/batch_list.h, batch.c): PROGRAM arguments in order
  // (`program` is the first; NULL with --programs alone).
  const char **programs;          // (owned array)
  int program_count;
  const char *programs_file;      // --programs LISTFILE
  bool fail_fast;                 // --fail-fast
  const char *batch_progress;     // internal --batch-progress FILE: rank 0 notes each program's verdict
  int64_t batch_start;            // internal --batch-start K: skip the first K programs (a re-launch)
  bool describe;                  // --describe: print the program's arguments / results, run nothing
  bool explain_groups;            // --explain-groups: print each collective's groups, run nothing
  bool explain_partitioning;      // --explain-partitioning: print the partitioner's decisions, run nothing
  bool global_program;            // --global-program: PROGRAM is global; partition it (runtime/spmd)
  int64_t repeat;                // --repeat N: runs of the program, timed (0: not given, one run)
  uint64_t max_inflated_bytes;   // --max-inflated-size: gzip'd program limit (0: default)
  const char **custom_call_libraries;  // --custom-call-library SPEC, in order (owned array)
  int custom_call_library_count;
  // Debugging (runtime/debug, launcher/debug_session.c, docs/DEBUGGING.md).
  double hang_timeout_s;         // --hang-timeout S (default 300; 0: no watchdog)
  const char *debug_dir;         // --debug-dir DIR: the per-job directory of rank states / reports
  bool check_nans, check_infs;   // --check-nans / --check-infs
  bool no_collective_check;      // --no-collective-check: skip the static check before the run
  // Checked results (launcher/checked_results.h).
  const char *expect_dir;        // --expect DIR
  const char *expect_global;     // --expect-global FILE.npy
  double rtol, atol, ulp;        // --rtol / --atol / --ulp (0: exact)
  const char *record_dir;        // --record DIR
  const char *trace_file;        // --trace FILE.json: one Chrome trace-event file for the job
  int collectives;               // --collectives: hl_collectives_mode_t (collectives/shm/shm_layer.h)
  const char *collectives_tuning; // --collectives-tuning FILE (collectives/shm/shm_tuning.h)
  bool collectives_tune;          // --collectives-tune (collectives/shm/shm_autotune.h)
  const char *collectives_tuning_out; // --collectives-tuning-out FILE: the measured table
  // Speed (runtime/fusion, runtime/threads/thread_pool.h).
  int64_t threads;               // --threads N (0: not given: the rank's cpuset size)
  bool no_fusion_blocking;       // --no-fusion-blocking: run fusions op by op (reference mode)
  bool no_fusion_pass;           // --no-fusion-pass: run unfused programs op by op
  bool no_warm_start;            // --no-warm-start: plans and buffers in the first run
  bool no_fusion_jit;            // --no-fusion-jit: blocked fusions without compiled loops
  const char *cache_dir;          // --cache-dir: the fusion JIT's disk cache of compiled loops
  int64_t profile_top;           // --profile[=N]: per-rank instruction profile, top N (0: off)
  // Internal: set on the command line the launcher gives mpiexec.
  bool worker;                   // --worker: run as one rank
  const char *status_file;       // --status-file: rank 0 writes the job's exit code here
} hl_launch_options_t;

// Parses argv (argv[0] is the program name). "-np N" is accepted as well as
// "-n N" and "--np N". Errors are usage errors (the caller exits 2).
// Strings point into argv, which must outlive the options.
hl_status_t hl_launch_options_parse(int argc, char **argv, hl_launch_options_t *out_options);
void hl_launch_options_deinit(hl_launch_options_t *options);

void hl_launch_print_help(FILE *out);
void hl_launch_print_version(FILE *out);

#endif  // HL_LAUNCHER_OPTIONS_H_
