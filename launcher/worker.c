#include "launcher/worker.h"

#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "channels/host_feeds.h"
#include "channels/mpi_channels.h"
#include "collectives/agree.h"
#include "collectives/mpi_comm.h"
#include "collectives/shm/shm_layer.h"
#include "launcher/batch_list.h"
#include "launcher/binding.h"
#include "launcher/checked_results.h"
#include "launcher/debug_session.h"
#include "launcher/global_io.h"
#include "runtime/spmd/grid.h"
#include "launcher/inputs.h"
#include "launcher/outputs.h"
#include "launcher/partition_hook.h"
#include "launcher/spawn.h"
#include "launcher/starter.h"
#include "runtime/fusion/fusion_pass.h"
#include "launcher/timing.h"
#include "runtime/debug/collective_check.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/custom_calls/ffi_plugin.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/profile.h"
#include "runtime/exec/thread_pool.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/loader/program_loader.h"
#include "runtime/verifier/verifier.h"

// How long a failed rank waits for the others to reach the same agreement
// point before it aborts the job: enough for ranks that are still computing
// the same step, short enough that a rank blocked in a collective waiting
// for the failed one does not keep the user waiting.
static const double kAgreeWaitSeconds = 3.0;

typedef struct worker {
  const hl_launch_options_t *options;
  MPI_Comm comm;              // the program's ranks: the job's, or in batch mode its grid's
  int rank, size;             // in `comm`
  const hl_batch_t *batch;    // batch mode: the programs (NULL: one program)
  int entry;                  // batch mode: the program running now
  hl_strbuf_t *failure;       // batch mode, rank 0: the program's first failure message
  bool grid_known;
  hl_grid_t grid;
  int64_t replica, partition;
  hl_binding_t binding;
  hl_channel_env_t channels;  // channel routes and host feeds (channels/)
  hl_debug_session_t debug;   // hang watchdog, NaN checks (launcher/debug_session.h)
  int exit_code;              // of a job that ran to the end (HL_EXIT_MISMATCH: --expect)
  hl_thread_pool_t *pool;     // --threads (NULL: one thread)
  hl_profile_t *profile;      // --profile (NULL: off)
  double profile_seconds;     // this rank's execution time over the profiled runs
  int64_t profile_runs;
  // --profile with --repeat N > 1: run 1 (cold: plans, JIT, first touch of
  // memory) in a table of its own; `profile` then holds runs 2-N.
  hl_profile_t *profile_first;
  double profile_first_seconds;
  int64_t live_bound, live_params;  // --profile: the entry's live-set lower bound
  double peak_arrays, peak_resident;  // and the process's peaks after the runs
} worker_t;

// "rank 3 (replica 1, partition 1)", or "rank 3" before the grid is known.
static void describe_rank(const worker_t *w, int rank, char *buf, size_t n) {
  if (w->grid_known)
    snprintf(buf, n, "rank %d (replica %lld, partition %lld)", rank,
             (long long)hl_grid_replica(&w->grid, rank),
             (long long)hl_grid_partition(&w->grid, rank));
  else
    snprintf(buf, n, "rank %d", rank);
}

static void name_rank(void *ctx, int rank, char *buf, size_t n) {
  describe_rank(ctx, rank, buf, n);
}

// Every rank calls this at the same point with its status (NULL = ok); it
// returns true when every rank succeeded. Otherwise rank 0 has printed the
// failures (collectives/agree.h merges identical ones) and every rank
// returns false. `others_may_block`: the other ranks may be stuck in a
// collective that needs this one (during execution), so a failed rank that
// cannot reach agreement in time aborts the job instead.
static bool agree(const worker_t *w, hl_status_t st, bool others_may_block) {
  char prefix[512] = "hlo-launch: ";
  if (w->batch)
    snprintf(prefix, sizeof(prefix), "hlo-launch: program %s: ",
             w->batch->entries[w->entry].label);
  hl_agree_style_t style = {prefix, name_rank, (void *)w, NULL};
  hl_status_t all = hl_mpi_agree(w->comm, st, others_may_block ? kAgreeWaitSeconds : -1, &style);
  if (!all) return true;
  if (w->rank == 0) {
    fprintf(stderr, "%s\n", hl_status_message(all));
    fflush(stderr);
  }
  if (w->failure && w->failure->length == 0) {
    // The verdict line: the first failure, without the line prefix.
    const char *msg = hl_status_message(all);
    size_t skip = strlen(prefix);
    if (strncmp(msg, prefix, skip) == 0) msg += skip;
    hl_strbuf_append_n(w->failure, msg, strcspn(msg, "\n"));
  }
  hl_status_free(all);
  return false;
}

// Rank 0 tells the launcher that started mpiexec how the job ended, so the
// ranks can exit 0 after a reported failure and mpiexec adds no banner. The
// file is opened without O_CREAT: a rank 0 on another host than the launcher
// finds no file and the ranks fall back to exiting 1.
static bool write_status_file(const worker_t *w, int code) {
  if (!w->options->status_file) return false;
  int ok = 0;
  if (w->rank == 0) {
    int fd = open(w->options->status_file, O_WRONLY | O_TRUNC);
    if (fd >= 0) {
      ok = dprintf(fd, "%d\n", code) > 0;
      ok = close(fd) == 0 && ok;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

static hl_status_t resolve_grid(worker_t *w, const hl_module_t *m) {
  const hl_launch_options_t *o = w->options;
  if (w->batch) {  // each program on its own grid, at most the job's size
    HL_RETURN_IF_ERROR(hl_grid_resolve(o->np, o->replicas, o->partitions, m->replica_count,
                                       m->num_partitions, &w->grid));
    if (w->grid.processes > w->size)
      return HL_INVALID("the program needs %lld processes, the job has %d",
                        (long long)w->grid.processes, w->size);
    w->grid_known = true;
    w->replica = hl_grid_replica(&w->grid, w->rank);
    w->partition = hl_grid_partition(&w->grid, w->rank);
    return NULL;
  }
  if (o->np && o->np != w->size)
    return HL_INVALID("-np is %lld, but the MPI job has %d process%s", (long long)o->np, w->size,
                      w->size == 1 ? "" : "es");
  HL_RETURN_IF_ERROR(hl_grid_resolve(w->size, o->replicas, o->partitions, m->replica_count,
                                     m->num_partitions, &w->grid));
  w->grid_known = true;
  w->replica = hl_grid_replica(&w->grid, w->rank);
  w->partition = hl_grid_partition(&w->grid, w->rank);
  return NULL;
}

// Sends every rank's result text to rank 0, which prints them in rank order.
static void print_results(const worker_t *w, const char *text, size_t length) {
  long long mine = (long long)length;
  long long *lengths = hl_calloc((size_t)w->size, sizeof(long long));
  MPI_Allgather(&mine, 1, MPI_LONG_LONG, lengths, 1, MPI_LONG_LONG, w->comm);
  long long total = 0;
  for (int r = 0; r < w->size; r++) total += lengths[r];
  if (total < (1ll << 30)) {
    int *counts = NULL, *offsets = NULL;
    char *all = NULL;
    if (w->rank == 0) {
      counts = hl_calloc((size_t)w->size, sizeof(int));
      offsets = hl_calloc((size_t)w->size, sizeof(int));
      for (int r = 0, off = 0; r < w->size; r++) {
        counts[r] = (int)lengths[r];
        offsets[r] = off;
        off += counts[r];
      }
      all = hl_malloc((size_t)total + 1);
    }
    MPI_Gatherv(text, (int)length, MPI_CHAR, all, counts, offsets, MPI_CHAR, 0, w->comm);
    if (w->rank == 0) fwrite(all, 1, (size_t)total, stdout);
    hl_free(counts);
    hl_free(offsets);
    hl_free(all);
  } else {
    // Past what int counts can address: one rank at a time, in chunks.
    const int kChunk = 1 << 28;
    if (w->rank == 0) {
      fwrite(text, 1, length, stdout);
      char *buf = hl_malloc((size_t)kChunk);
      for (int r = 1; r < w->size; r++)
        for (long long off = 0; off < lengths[r]; off += kChunk) {
          int n = lengths[r] - off < kChunk ? (int)(lengths[r] - off) : kChunk;
          MPI_Recv(buf, n, MPI_CHAR, r, 0, w->comm, MPI_STATUS_IGNORE);
          fwrite(buf, 1, (size_t)n, stdout);
        }
      hl_free(buf);
    } else {
      for (size_t off = 0; off < length; off += (size_t)kChunk) {
        int n = length - off < (size_t)kChunk ? (int)(length - off) : kChunk;
        MPI_Send(text + off, n, MPI_CHAR, 0, 0, w->comm);
      }
    }
  }
  hl_free(lengths);
  if (w->rank == 0) fflush(stdout);
}

static hl_status_t execute(const worker_t *w, hl_comm_t *comm, hl_executable_t *exe,
                           const hl_inputs_t *inputs, hl_profile_t *profile,
                           hl_literal_t **out_result) {
  hl_exec_options_t opts = {
      .replica_id = w->replica,
      .partition_id = w->partition,
      .num_replicas = w->grid.replicas,
      .num_partitions = w->grid.partitions,
      .comm = comm,
      .channels = (hl_channel_env_t *)&w->channels,
      .observer = hl_debug_session_observer(&w->debug),
      .no_fusion_blocking = w->options->no_fusion_blocking,
      .pool = w->pool,
      .profile = profile,
  };
  const char *inject = getenv("HL_TEST_EXEC_FAIL_RANK");
  if (inject && *inject) {
    // Test hook: that rank fails while the others block in a barrier, as
    // they would in a collective that needs it; the job must still end.
    if (atoi(inject) == w->rank)
      return HL_INVALID("injected execution failure (HL_TEST_EXEC_FAIL_RANK)");
    return comm->vtable->barrier(comm);
  }
  return hl_executable_run(exe, &opts, inputs->args, inputs->count, out_result);
}

// Runs the program once, or --repeat times with the timing report on rank
// 0's stderr. Every run ends with an agreement, so a rank that fails in run k
// ends the job instead of leaving the others in run k + 1.
static bool execute_runs(worker_t *w, hl_comm_t *comm, hl_executable_t *exe,
                         const hl_inputs_t *inputs, hl_literal_t **result) {
  bool timed = w->options->repeat > 0;
  int64_t runs = timed ? w->options->repeat : 1;
  double *seconds = hl_calloc((size_t)runs, sizeof(double));
  hl_status_t st = seconds ? NULL : HL_OOM();
  if (!st && w->profile && runs > 1) st = hl_profile_create(&w->profile_first);
  bool ok = agree(w, st, false);
  for (int64_t i = 0; ok && i < runs; i++) {
    hl_literal_release(*result);
    *result = NULL;
    if (timed) MPI_Barrier(w->comm);
    double start = MPI_Wtime();
    hl_debug_session_phase(&w->debug, HL_PHASE_RUNNING);
    hl_profile_t *profile = i == 0 && w->profile_first ? w->profile_first : w->profile;
    st = execute(w, comm, exe, inputs, profile, result);
    double mine = MPI_Wtime() - start;
    hl_debug_session_phase(&w->debug, HL_PHASE_WAITING);
    if (profile == w->profile_first && profile) {
      w->profile_first_seconds = mine;
    } else {
      w->profile_seconds += mine;
      w->profile_runs++;
    }
    ok = agree(w, st, true);
    hl_debug_session_phase(&w->debug, HL_PHASE_DONE);
    if (ok && timed)
      MPI_Reduce(&mine, &seconds[i], 1, MPI_DOUBLE, MPI_MAX, 0, w->comm);
  }
  if (ok && timed && w->rank == 0) {
    hl_strbuf_t line;
    hl_strbuf_init(&line);
    hl_status_t fmt = hl_timing_format(seconds, runs, w->size, &line);
    if (fmt) hl_status_free(fmt);
    else fprintf(stderr, "hlo-launch: %s\n", hl_strbuf_cstr(&line));
    fflush(stderr);
    hl_strbuf_deinit(&line);
  }
  if (ok && w->profile) hl_profile_memory_peaks(&w->peak_arrays, &w->peak_resident);
  if (ok && w->profile && !hl_executable_live_set_bound(exe, &w->live_bound, &w->live_params))
    w->live_bound = 0;
  hl_free(seconds);
  return ok;
}

// Pairs the program's channels with every other rank's (collective: every
// rank gets here, and a rank whose own step failed still takes part in the
// exchange, with no endpoints, so the others do not hang) and opens the host
// feeds. Every rank reaches the same verdict on the pairing.
static hl_status_t setup_channels(worker_t *w, hl_comm_t *comm, const hl_program_t *program) {
  const hl_launch_options_t *o = w->options;
  HL_RETURN_IF_ERROR(hl_mpi_channels_connect(comm, w->comm, program->module,
                                             w->grid.replicas, w->grid.partitions, w->rank,
                                             &w->channels));
  return hl_host_feeds_open(o->infeed_files, o->infeed_file_count, o->infeed_dir, o->outfeed_dir,
                            w->replica, w->partition, &w->channels);
}

// --expect: every rank compares its result; rank 0 prints one line per rank
// and the job's exit status says whether all matched. False: an error
// (already reported).
static bool check_expectation(worker_t *w, const hl_program_t *program,
                              const hl_literal_t *result) {
  enum { kLine = 512 };
  char line[kLine];
  bool checked = false, matched = false;
  hl_status_t st = hl_expect_check(w->options, program, result, w->replica, w->partition, line,
                                   sizeof(line), &checked, &matched);
  if (!agree(w, st, false)) return false;
  int checked_here = checked, checked_anywhere = 0;
  MPI_Allreduce(&checked_here, &checked_anywhere, 1, MPI_INT, MPI_MAX, w->comm);
  if (!checked_anywhere) return true;  // snapshots without a recorded result
  if (!checked) {
    snprintf(line, sizeof(line), "no expectation (its snapshot records no result)");
    matched = true;
  }
  char *all = w->rank == 0 ? hl_calloc((size_t)w->size, kLine) : NULL;
  MPI_Gather(line, kLine, MPI_CHAR, all, kLine, MPI_CHAR, 0, w->comm);
  int mine = matched ? 0 : 1, differ = 0;
  MPI_Allreduce(&mine, &differ, 1, MPI_INT, MPI_SUM, w->comm);
  if (w->rank == 0 && all) {
    for (int r = 0; r < w->size; r++) {
      char who[96];
      describe_rank(w, r, who, sizeof(who));
      fprintf(stderr, "hlo-launch: --expect: %s: %.*s\n", who, kLine, all + (size_t)r * kLine);
    }
    if (differ)
      fprintf(stderr, "hlo-launch: --expect: %d of %d processes differ\n", differ, w->size);
    fflush(stderr);
  }
  hl_free(all);
  if (differ) w->exit_code = HL_EXIT_MISMATCH;
  return true;
}

// --expect-global: the partitions' shards assembled on rank 0 (as for
// --global-output), compared there; its verdict is every rank's exit status.
// False: an error (already reported).
static bool check_global_expectation(worker_t *w, const hl_program_t *program,
                                     const hl_literal_t *result) {
  const char *flag = "--expect-global";
  if (!agree(w, hl_global_result_check(w->options, program, result, &w->grid, flag), false)) return false;
  hl_literal_t *global = NULL;
  hl_status_t st = hl_global_output_assemble(w->comm, w->options, program, result, &w->grid,
                                             w->rank, flag, &global);
  char line[512] = "";
  bool matched = false;
  if (!st && global) st = hl_expect_global_check(w->options, global, line, sizeof(line), &matched);
  hl_literal_release(global);
  if (!agree(w, st, false)) return false;
  int differ = w->rank == 0 && !matched;
  MPI_Bcast(&differ, 1, MPI_INT, 0, w->comm);
  if (w->rank == 0) {
    fprintf(stderr, "hlo-launch: --expect-global: %s\n", line);
    fflush(stderr);
  }
  if (differ) w->exit_code = HL_EXIT_MISMATCH;
  return true;
}

// The static collective check (runtime/debug/collective_check.h) for ranks
// started by a user's own mpirun / srun; hlo-launch's spawner ran it already
// (--worker). Collective: it applies only when every rank runs the same
// program file (an MPMD job's programs differ), and then every rank reaches
// the same verdict.
static hl_status_t check_collectives_here(const worker_t *w, const hl_module_t *module) {
  const hl_launch_options_t *o = w->options;
  if (o->no_collective_check) return NULL;
  if (w->batch)  // the launcher checked none of the batch's programs
    return hl_spawn_check_program(o, module, &w->grid);
  if (o->worker) return NULL;
  unsigned long long hash = 14695981039346656037ull, low = 0, high = 0;  // FNV-1a of the path
  for (const char *p = o->program; *p; p++) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
  MPI_Allreduce(&hash, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, w->comm);
  MPI_Allreduce(&hash, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, w->comm);
  if (low != high) return NULL;
  return hl_collective_check(module, w->grid.replicas, w->grid.partitions);
}

// The steps after MPI_Init; returns true when the job succeeded everywhere.
// --profile: every rank formats its table and roofline line (rates
// measured in the rank itself, after the runs); rank 0 prints them in rank
// order to stderr.
static void print_profile(worker_t *w) {
  double flops_per_s = 0, bytes_per_s = 0;
  hl_profile_measure_machine(w->pool, &flops_per_s, &bytes_per_s);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  char who[96];
  describe_rank(w, w->rank, who, sizeof(who));
  hl_strbuf_appendf(&sb, "hlo-launch: profile of %s (%d thread%s):\n", who,
                    hl_thread_pool_size(w->pool), hl_thread_pool_size(w->pool) == 1 ? "" : "s");
  if (w->profile_first) {
    hl_strbuf_append(&sb, "  first run (cold: plans, compiled loops, first touch of memory):\n");
    hl_profile_format(w->profile_first, (int)w->options->profile_top, w->profile_first_seconds,
                      1, flops_per_s, bytes_per_s, &sb);
    hl_strbuf_appendf(&sb, "  runs 2-%lld (steady state):\n", (long long)w->profile_runs + 1);
  }
  hl_profile_format(w->profile, (int)w->options->profile_top, w->profile_seconds,
                    w->profile_runs, flops_per_s, bytes_per_s, &sb);
  if (w->live_bound > 0)
    hl_profile_format_memory(w->peak_arrays, w->peak_resident, w->live_bound, w->live_params, &sb);
  int len = sb.failed ? 0 : (int)sb.length;
  int *lens = w->rank == 0 ? hl_calloc((size_t)w->size, sizeof(int)) : NULL;
  MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, w->comm);
  int *offs = w->rank == 0 ? hl_calloc((size_t)w->size, sizeof(int)) : NULL;
  char *all = NULL;
  if (w->rank == 0 && lens && offs) {
    int total = 0;
    for (int r = 0; r < w->size; r++) {
      offs[r] = total;
      total += lens[r];
    }
    all = hl_malloc((size_t)total + 1);
  }
  MPI_Gatherv(hl_strbuf_cstr(&sb), len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, w->comm);
  if (w->rank == 0 && all) {
    int total = offs[w->size - 1] + lens[w->size - 1];
    fwrite(all, 1, (size_t)total, stderr);
    fflush(stderr);
  }
  hl_free(all);
  hl_free(lens);
  hl_free(offs);
  hl_strbuf_deinit(&sb);
}

// Every rank loads the program itself (the file must be readable on every
// host, as the program binary is) and resolves its grid. False: an error
// (reported; `program` is released).
static bool load_program(worker_t *w, hl_program_t *program) {
  const hl_launch_options_t *o = w->options;
  memset(program, 0, sizeof(*program));
  w->grid_known = false;
  hl_status_t st = hl_ffi_plugins_load(o->custom_call_libraries, o->custom_call_library_count);
  if (!st)
    st = w->batch ? hl_batch_load(w->batch, w->entry, o, program)
                  : hl_program_load_file_with(
                        o->program, &(hl_program_load_options_t){o->max_inflated_bytes, true},
                        program);
  // Dynamic shapes: refined before verifying, on every rank from process 0's
  // arguments (the grid is not known before the module is), so all agree.
  // (A batch entry is refined by hl_batch_load, from its own inputs.)
  if (!st && !w->batch) st = hl_inputs_refine_program(o, program, 0, 0);
  if (!st) st = hl_verify_module(program->module);
  if (!agree(w, st, false) || !agree(w, resolve_grid(w, program->module), false)) {
    hl_program_deinit(program);
    return false;
  }
  return true;
}

// The steps after loading, on the program's ranks (w->comm); takes
// `program` over.
static bool run_loaded(worker_t *w, hl_program_t *loaded) {
  const hl_launch_options_t *o = w->options;
  hl_program_t program = *loaded;
  hl_inputs_t inputs;
  memset(&inputs, 0, sizeof(inputs));
  hl_literal_t *result = NULL;
  hl_comm_t *comm = NULL;
  hl_executable_t *exe = NULL;
  bool ok = false, debug_begun = false;
  // A global program (shardings, no collectives of its own) becomes the
  // per-partition program here; every rank partitions it the same way.
  bool partitioned = false;
  // --seed on a global program: the global arrays drawn whole and cut into
  // this partition's shards, before partitioning turns the parameters into
  // shards (global_io.h).
  bool drawn_globally = false;
  if (o->input_source == HL_INPUT_RANDOM && w->grid.partitions > 1) {
    bool global = false, ambiguous = false;
    hl_status_t st = hl_program_is_global(o, program.module, &global, &ambiguous);
    if (!st && global)
      st = hl_global_random_args(o, &program, &w->grid, w->partition, &inputs);
    if (!agree(w, st, false)) goto done;
    drawn_globally = global;
  }
  if (!agree(w, hl_partition_if_global(o, &program, w->grid.replicas, w->grid.partitions, &partitioned), false)) goto done;
  if (!agree(w, check_collectives_here(w, program.module), false)) goto done;
  // Unfused programs (StableHLO, "before optimizations" dumps) get the
  // fusions XLA's CPU compiler would form; fused ones pass unchanged.
  // --check-nans / --check-infs look at every value the program names, so
  // they keep its instructions as written.
  bool fuse = !o->no_fusion_pass && !o->check_nans && !o->check_infs;
  if (fuse && !agree(w, hl_fusion_pass_run(program.module, NULL, NULL), false)) goto done;
  // Plans, compiled loops and the first run's buffers while the arguments
  // are made and the ranks connect (executor.h, warm start).
  if (!agree(w, hl_executable_create(program.module, &exe), false)) goto done;
  if (!o->no_warm_start) hl_executable_warm_start(exe);
  if (o->report_bindings)
    hl_binding_report(w->comm, &w->binding, w->rank, w->replica, w->partition,
                      (hl_bind_policy_t)o->bind_to);
  if (!agree(w, hl_outputs_check_options(o), false)) goto done;
  if (!agree(w,
             drawn_globally ? NULL
             : o->input_source == HL_INPUT_GLOBAL
                 ? hl_global_args_build(o, &program, &w->grid, w->partition, &inputs)
                 : hl_inputs_build(o, &program, w->replica, w->partition, &inputs),
             false))
    goto done;
  // Created only once every rank got this far: it is collective.
  if (!agree(w, hl_mpi_comm_create(w->comm, &comm), false)) goto done;
  if (!agree(w, hl_shm_layer_install(comm, (hl_collectives_mode_t)o->collectives), false))
    goto done;
  if (o->collectives_tuning &&
      !agree(w, hl_shm_layer_set_tuning_file(comm, o->collectives_tuning), false))
    goto done;
  if (o->collectives_tune &&
      !agree(w, hl_shm_layer_set_autotune(comm, o->collectives_tuning_out, o->report_bindings),
             false))
    goto done;
  if (!agree(w, comm->vtable->prepare(comm, program.module, w->grid.replicas, w->grid.partitions),
             false))
    goto done;
  if (!agree(w, setup_channels(w, comm, &program), false)) goto done;
  if (!agree(w, hl_debug_session_begin(&w->debug, o, w->comm, w->rank, w->size), false))
    goto done;
  debug_begun = true;
  if (!agree(w, hl_debug_session_start(&w->debug, program.module, w->grid.replicas,
                                       w->grid.partitions), false))
    goto done;
  // Freed only after the agreement, which a failed rank may end with
  // MPI_Abort: freeing is collective too, and the others may never get there.
  if (!execute_runs(w, comm, exe, &inputs, &result)) goto done;
  if (!agree(w,
             hl_debug_session_write_trace(&w->debug, w->grid.replicas, w->grid.partitions,
                                          &w->channels),
             false))
    goto done;
  if (w->profile) print_profile(w);
  hl_profile_destroy(w->profile_first);
  w->profile_first = NULL;
  if (o->output_dir &&
      !agree(w, hl_outputs_write(o->output_dir, result, w->replica, w->partition, &inputs), false))
    goto done;
  if (o->global_output) {
    if (!agree(w, hl_global_output_check(o, &program, result, &w->grid), false)) goto done;
    if (!agree(w,
               hl_global_output_write(w->comm, o, &program, result, &w->grid, w->rank,
                                      &inputs),
               false))
      goto done;
  }
  if (o->record_dir &&
      !agree(w, hl_record_write(o->record_dir, &program, &inputs, result, w->replica,
                                w->partition), false))
    goto done;
  if (hl_expect_wanted(o, &program) && !check_expectation(w, &program, result)) goto done;
  if (o->expect_global && !check_global_expectation(w, &program, result)) goto done;
  if (!o->quiet) {
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_outputs_format(result, w->replica, w->partition, w->rank, &sb);
    hl_status_t fail = sb.failed ? HL_OOM() : NULL;
    if (!agree(w, fail, false)) {
      hl_strbuf_deinit(&sb);
      goto done;
    }
    print_results(w, hl_strbuf_cstr(&sb), sb.length);
    hl_strbuf_deinit(&sb);
  }
  ok = true;

done:
  // Every rank gets here together unless the job is being aborted.
  if (debug_begun) hl_debug_session_end(&w->debug, ok);
  if (!ok && w->channels.route_count) hl_mpi_channels_retire(comm);
  hl_mpi_channels_release_routes(&w->channels);
  hl_host_feeds_close(&w->channels);
  hl_comm_destroy(comm);
  hl_profile_destroy(w->profile_first);  // a failed run's
  w->profile_first = NULL;
  hl_literal_release(result);
  hl_inputs_deinit(&inputs);
  hl_executable_destroy(exe);
  hl_program_deinit(&program);
  return ok;
}

static bool run(worker_t *w) {
  hl_program_t program;
  return load_program(w, &program) && run_loaded(w, &program);
}

// Waits at a barrier of the whole job without spinning: ranks outside a
// program's grid wait here while the others run it, and on an
// oversubscribed node a spinning wait would take their cores.
static void wait_for_the_job(void) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    struct timespec pause = {0, 500000};
    nanosleep(&pause, NULL);
  }
}

// The file name part of a path or label ("dir/x.mlir:12" -> "x.mlir:12").
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// Rank 0's verdict line for program `k` (reasons on one line).
static void print_verdict(const hl_batch_entry_t *e, bool ok, const hl_strbuf_t *failure) {
  if (ok) {
    printf("hlo-launch: program %s: passed\n", e->label);
  } else {
    printf("hlo-launch: program %s: FAILED: ", e->label);
    const char *why = failure->length ? hl_strbuf_cstr(failure) : "see the messages above";
    for (const char *p = why; *p; p++) putchar(*p == '\n' ? ' ' : *p);
    putchar('\n');
  }
  fflush(stdout);
}

// One program of a batch, on the ranks of its grid (a communicator of its
// own, so no message of one program can match a receive of the next; its
// channels, collectives layer and debug session are made and released
// inside). Every rank of the job calls this; true on rank 0 when it passed.
static bool run_batch_entry(worker_t *w, const hl_batch_t *batch, int k) {
  const hl_launch_options_t *job = w->options;
  const hl_batch_entry_t *e = &batch->entries[k];
  hl_launch_options_t po = *job;  // the job's options, for this program
  po.program = e->path;
  char output_dir[4096];
  if (job->output_dir) {
    snprintf(output_dir, sizeof(output_dir), "%s/%s", job->output_dir, base_name(e->label));
    po.output_dir = output_dir;
  }
  // Its own inputs: DIR/<file name>/ when --args-dir DIR has that folder.
  char args_dir[4096];
  po.args_dir = hl_batch_args_dir(job, e, args_dir, sizeof(args_dir));
  // Directories a program writes into are its own (a probe's file number
  // counts the files already there).
  char outfeed_dir[4096], probe_dir[4096];
  if (job->outfeed_dir) {
    snprintf(outfeed_dir, sizeof(outfeed_dir), "%s/%s", job->outfeed_dir, base_name(e->label));
    po.outfeed_dir = outfeed_dir;
  }
  if (job->probe_output_dir) {
    snprintf(probe_dir, sizeof(probe_dir), "%s/%d", job->probe_output_dir, k);
    po.probe_output_dir = probe_dir;
    setenv("HLO_PROBE_OUTPUT_DIR", probe_dir, 1);  // where interpreter.probe's kernel looks
  }
  int world_rank = w->rank, world_size = w->size;
  w->options = &po;
  w->batch = batch;
  w->entry = k;
  w->exit_code = 0;
  bool ok = true;
  if (!e->empty) {
    hl_program_t program;
    ok = load_program(w, &program);
    if (ok) {
      int in_grid = w->rank < w->grid.processes;
      MPI_Comm mine;
      MPI_Comm_split(MPI_COMM_WORLD, in_grid ? 0 : MPI_UNDEFINED, w->rank, &mine);
      if (in_grid) {
        w->comm = mine;
        w->size = (int)w->grid.processes;
        w->profile_seconds = 0;
        w->profile_runs = 0;
        if (w->profile) {  // each program's own profile
          hl_profile_destroy(w->profile);
          w->profile = NULL;
          hl_status_t prof_st = hl_profile_create(&w->profile);
          if (prof_st) hl_status_free(prof_st);
        }
        ok = run_loaded(w, &program);
        if (ok && w->exit_code) {
          ok = false;
          if (w->failure && w->failure->length == 0)
            hl_strbuf_append(w->failure, "the results differ from the expected ones (--expect)");
        }
        MPI_Comm_free(&mine);
      } else {
        hl_program_deinit(&program);
      }
    }
  }
  w->comm = MPI_COMM_WORLD;
  w->rank = world_rank;
  w->size = world_size;
  w->options = job;
  w->grid_known = false;
  return ok;
}

// Batch mode (launcher/batch_list.h): the programs one after another; rank 0
// prints a line per program and, unless the launcher keeps the count across
// re-launches (--batch-progress), the summary. Returns the exit status.
static int run_batch(worker_t *w) {
  const hl_launch_options_t *o = w->options;
  hl_batch_t batch;
  if (!agree(w, hl_batch_build(o, &batch), false)) return 1;
  FILE *progress = w->rank == 0 && o->batch_progress ? fopen(o->batch_progress, "a") : NULL;
  hl_strbuf_t failure;
  hl_strbuf_init(&failure);
  int passed = 0, failed = 0;
  for (int k = (int)o->batch_start; k < batch.count; k++) {
    if (progress) {
      fprintf(progress, "%d started\n", k);
      fflush(progress);
    }
    hl_strbuf_deinit(&failure);
    hl_strbuf_init(&failure);
    w->failure = w->rank == 0 ? &failure : NULL;
    bool ok = run_batch_entry(w, &batch, k);
    w->batch = NULL;
    w->failure = NULL;
    wait_for_the_job();
    int stop = 0;
    if (w->rank == 0) {
      if (ok)
        passed++;
      else
        failed++;
      print_verdict(&batch.entries[k], ok, &failure);
      if (progress) {
        fprintf(progress, "%d %s\n", k, ok ? "passed" : "failed");
        fflush(progress);
      }
      stop = !ok && o->fail_fast;
    }
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) break;
  }
  if (w->rank == 0 && !o->batch_progress) {
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
  }
  if (progress) fclose(progress);
  hl_strbuf_deinit(&failure);
  hl_batch_deinit(&batch);
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return failed ? 1 : 0;
}

int hl_worker_main(const hl_launch_options_t *options) {
  // Big buffers from the heap, and freed memory kept mapped: glibc would
  // mmap() every large literal fresh and page-fault all of it again on each
  // instruction (halving 64 MiB element-wise ops; bench/bench_elementwise).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  int provided;
  hl_binding_prepare_mpi();
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "hlo-launch: MPI_Init failed\n");
    return 1;
  }
  worker_t w = {.options = options, .comm = MPI_COMM_WORLD};
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  // Started by another MPI's starter, every rank is a job of its own: one
  // message, and no N copies of a 1-process run.
  char singleton[1024];
  if (w.size == 1 && hl_starter_explain_singleton(singleton, sizeof(singleton))) {
    if (singleton[0]) fprintf(stderr, "hlo-launch: %s\n", singleton);
    MPI_Finalize();
    return 1;
  }
  // Bound before the program is loaded, so its memory is first touched
  // from the rank's own cores (and NUMA node).
  hl_binding_apply(MPI_COMM_WORLD, (hl_bind_policy_t)options->bind_to, &w.binding);
  if (options->no_fusion_jit) hl_jit_set_enabled(false);  // before any fusion is compiled
  // Threads of this rank: --threads, else its cpuset's size; BLAS runs on
  // one (the gemm tiles use the pool). Started after binding, so they
  // inherit the rank's cpuset.
  int threads = hl_binding_set_threads(&w.binding, (int)options->threads);
  hl_status_t pool_st = threads > 1 ? hl_thread_pool_create(threads, &w.pool) : NULL;
  if (pool_st) {  // no threads: the rank still runs, on one
    fprintf(stderr, "hlo-launch: rank %d: %s; running on one thread\n", w.rank,
            hl_status_message(pool_st));
    hl_status_free(pool_st);
  }
  if (options->profile_top > 0) {
    hl_status_t prof_st = hl_profile_create(&w.profile);
    if (prof_st) {  // no profile: the rank still runs
      fprintf(stderr, "hlo-launch: rank %d: %s; not profiling\n", w.rank,
              hl_status_message(prof_st));
      hl_status_free(prof_st);
    }
  }
  int code;
  if (hl_batch_wanted(options)) {
    code = run_batch(&w);
  } else {
    bool ok = run(&w);
    code = ok ? w.exit_code : 1;
  }
  hl_thread_pool_destroy(w.pool);
  hl_profile_destroy(w.profile);
  // After a reported failure the ranks exit 0 when the launcher can learn
  // the real status from the file, so mpiexec adds no banner of its own.
  if (write_status_file(&w, code)) code = 0;
  MPI_Finalize();
  return code;
}
