#include "launcher/worker.h"

#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "channels/host_feeds.h"
#include "channels/mpi_channels.h"
#include "collectives/agree.h"
#include "collectives/mpi_comm.h"
#include "collectives/shm/shm_layer.h"
#include "launcher/binding.h"
#include "launcher/checked_results.h"
#include "launcher/debug_session.h"
#include "launcher/global_io.h"
#include "runtime/spmd/grid.h"
#include "launcher/inputs.h"
#include "launcher/outputs.h"
#include "launcher/partition_hook.h"
#include "launcher/timing.h"
#include "runtime/debug/collective_check.h"
#include "runtime/base/alloc.h"
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
  int rank, size;
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
  hl_agree_style_t style = {"hlo-launch: ", name_rank, (void *)w, NULL};
  hl_status_t all =
      hl_mpi_agree(MPI_COMM_WORLD, st, others_may_block ? kAgreeWaitSeconds : -1, &style);
  if (!all) return true;
  if (w->rank == 0) {
    fprintf(stderr, "%s\n", hl_status_message(all));
    fflush(stderr);
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
  MPI_Allgather(&mine, 1, MPI_LONG_LONG, lengths, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
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
    MPI_Gatherv(text, (int)length, MPI_CHAR, all, counts, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
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
          MPI_Recv(buf, n, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          fwrite(buf, 1, (size_t)n, stdout);
        }
      hl_free(buf);
    } else {
      for (size_t off = 0; off < length; off += (size_t)kChunk) {
        int n = length - off < (size_t)kChunk ? (int)(length - off) : kChunk;
        MPI_Send(text + off, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    }
  }
  hl_free(lengths);
  if (w->rank == 0) fflush(stdout);
}

static hl_status_t execute(const worker_t *w, hl_comm_t *comm, hl_executable_t *exe,
                           const hl_inputs_t *inputs, hl_literal_t **out_result) {
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
      .profile = w->profile,
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
static bool execute_runs(worker_t *w, hl_comm_t *comm, const hl_program_t *program,
                         const hl_inputs_t *inputs, hl_literal_t **result) {
  bool timed = w->options->repeat > 0;
  int64_t runs = timed ? w->options->repeat : 1;
  hl_executable_t *exe = NULL;
  double *seconds = hl_calloc((size_t)runs, sizeof(double));
  hl_status_t st = seconds ? hl_executable_create(program->module, &exe) : HL_OOM();
  bool ok = agree(w, st, false);
  for (int64_t i = 0; ok && i < runs; i++) {
    hl_literal_release(*result);
    *result = NULL;
    if (timed) MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    hl_debug_session_phase(&w->debug, HL_PHASE_RUNNING);
    st = execute(w, comm, exe, inputs, result);
    double mine = MPI_Wtime() - start;
    hl_debug_session_phase(&w->debug, HL_PHASE_WAITING);
    w->profile_seconds += mine;
    w->profile_runs++;
    ok = agree(w, st, true);
    hl_debug_session_phase(&w->debug, HL_PHASE_DONE);
    if (ok && timed)
      MPI_Reduce(&mine, &seconds[i], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
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
  hl_executable_destroy(exe);
  hl_free(seconds);
  return ok;
}

// Pairs the program's channels with every other rank's (collective: every
// rank gets here, and a rank whose own step failed still takes part in the
// exchange, with no endpoints, so the others do not hang) and opens the host
// feeds. Every rank reaches the same verdict on the pairing.
static hl_status_t setup_channels(worker_t *w, hl_comm_t *comm, const hl_program_t *program) {
  const hl_launch_options_t *o = w->options;
  HL_RETURN_IF_ERROR(hl_mpi_channels_connect(comm, MPI_COMM_WORLD, program->module,
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
  MPI_Allreduce(&checked_here, &checked_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!checked_anywhere) return true;  // snapshots without a recorded result
  if (!checked) {
    snprintf(line, sizeof(line), "no expectation (its snapshot records no result)");
    matched = true;
  }
  char *all = w->rank == 0 ? hl_calloc((size_t)w->size, kLine) : NULL;
  MPI_Gather(line, kLine, MPI_CHAR, all, kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
  int mine = matched ? 0 : 1, differ = 0;
  MPI_Allreduce(&mine, &differ, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
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
  hl_status_t st = hl_global_output_assemble(MPI_COMM_WORLD, w->options, program, result, &w->grid,
                                             w->rank, flag, &global);
  char line[512] = "";
  bool matched = false;
  if (!st && global) st = hl_expect_global_check(w->options, global, line, sizeof(line), &matched);
  hl_literal_release(global);
  if (!agree(w, st, false)) return false;
  int differ = w->rank == 0 && !matched;
  MPI_Bcast(&differ, 1, MPI_INT, 0, MPI_COMM_WORLD);
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
  if (o->worker || o->no_collective_check) return NULL;
  unsigned long long hash = 14695981039346656037ull, low = 0, high = 0;  // FNV-1a of the path
  for (const char *p = o->program; *p; p++) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
  MPI_Allreduce(&hash, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
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
  hl_profile_format(w->profile, (int)w->options->profile_top, w->profile_seconds,
                    w->profile_runs, flops_per_s, bytes_per_s, &sb);
  int len = sb.failed ? 0 : (int)sb.length;
  int *lens = w->rank == 0 ? hl_calloc((size_t)w->size, sizeof(int)) : NULL;
  MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
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
  MPI_Gatherv(hl_strbuf_cstr(&sb), len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
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

static bool run(worker_t *w) {
  const hl_launch_options_t *o = w->options;
  hl_program_t program;
  memset(&program, 0, sizeof(program));
  hl_inputs_t inputs;
  memset(&inputs, 0, sizeof(inputs));
  hl_literal_t *result = NULL;
  hl_comm_t *comm = NULL;
  bool ok = false, debug_begun = false;

  // Every rank loads the program itself (the file must be readable on every
  // host, as the program binary is).
  hl_status_t st = hl_ffi_plugins_load(o->custom_call_libraries, o->custom_call_library_count);
  if (!st)
    st = hl_program_load_file_with(
        o->program, &(hl_program_load_options_t){o->max_inflated_bytes}, &program);
  if (!st) st = hl_verify_module(program.module);
  if (!agree(w, st, false)) goto done;
  if (!agree(w, resolve_grid(w, program.module), false)) goto done;
  // A global program (shardings, no collectives of its own) becomes the
  // per-partition program here; every rank partitions it the same way.
  bool partitioned = false;
  if (!agree(w, hl_partition_if_global(o, &program, w->grid.replicas, w->grid.partitions, &partitioned), false)) goto done;
  if (!agree(w, check_collectives_here(w, program.module), false)) goto done;
  if (o->report_bindings)
    hl_binding_report(MPI_COMM_WORLD, &w->binding, w->rank, w->replica, w->partition,
                      (hl_bind_policy_t)o->bind_to);
  if (!agree(w, hl_outputs_check_options(o), false)) goto done;
  if (!agree(w,
             o->input_source == HL_INPUT_GLOBAL
                 ? hl_global_args_build(o, &program, &w->grid, w->partition, &inputs)
                 : hl_inputs_build(o, &program, w->replica, w->partition, &inputs),
             false))
    goto done;
  // Created only once every rank got this far: it is collective.
  if (!agree(w, hl_mpi_comm_create(MPI_COMM_WORLD, &comm), false)) goto done;
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
  if (!agree(w, hl_debug_session_begin(&w->debug, o, MPI_COMM_WORLD, w->rank, w->size), false))
    goto done;
  debug_begun = true;
  if (!agree(w, hl_debug_session_start(&w->debug, program.module, w->grid.replicas,
                                       w->grid.partitions), false))
    goto done;
  // Freed only after the agreement, which a failed rank may end with
  // MPI_Abort: freeing is collective too, and the others may never get there.
  if (!execute_runs(w, comm, &program, &inputs, &result)) goto done;
  if (!agree(w,
             hl_debug_session_write_trace(&w->debug, w->grid.replicas, w->grid.partitions,
                                          &w->channels),
             false))
    goto done;
  if (w->profile) print_profile(w);
  if (o->output_dir &&
      !agree(w, hl_outputs_write(o->output_dir, result, w->replica, w->partition, &inputs), false))
    goto done;
  if (o->global_output) {
    if (!agree(w, hl_global_output_check(o, &program, result, &w->grid), false)) goto done;
    if (!agree(w,
               hl_global_output_write(MPI_COMM_WORLD, o, &program, result, &w->grid, w->rank,
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
  hl_mpi_channels_release_routes(&w->channels);
  hl_host_feeds_close(&w->channels);
  hl_comm_destroy(comm);
  hl_literal_release(result);
  hl_inputs_deinit(&inputs);
  hl_program_deinit(&program);
  return ok;
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
  worker_t w = {.options = options};
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
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
  bool ok = run(&w);
  hl_thread_pool_destroy(w.pool);
  hl_profile_destroy(w.profile);
  int code = ok ? w.exit_code : 1;
  // After a reported failure the ranks exit 0 when the launcher can learn
  // the real status from the file, so mpiexec adds no banner of its own.
  if (write_status_file(&w, code)) code = 0;
  MPI_Finalize();
  return code;
}
