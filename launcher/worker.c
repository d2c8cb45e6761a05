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

#include "collectives/agree.h"
#include "collectives/mpi_polite.h"
#include "launcher/batch_list.h"
#include "launcher/binding.h"
#include "launcher/checked_results.h"
#include "launcher/global_io.h"
#include "launcher/inputs.h"
#include "launcher/outputs.h"
#include "launcher/partition_hook.h"
#include "launcher/spawn.h"
#include "launcher/starter.h"
#include "launcher/timing.h"
#include "runner/runner.h"
#include "launcher/host_watch.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/custom_calls/ffi_plugin.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/loader/program_loader.h"
#include "runtime/spmd/grid.h"
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
  char prefix[512];           // of every message line: "hlo-launch: " (batch: "... program X: ")
  bool grid_known;
  hl_grid_t grid;
  int64_t replica, partition;
  hl_binding_t binding;
  int exit_code;              // of a job that ran to the end (HL_EXIT_MISMATCH: --expect)
  hl_thread_pool_t *pool;     // --threads (NULL: one thread)
} worker_t;

// "rank 3 (replica 1, partition 1)", or "rank 3" before the grid is known.
static void describe_rank(const worker_t *w, int rank, char *buf, size_t n) {
  hl_grid_name_rank(w->grid_known ? &w->grid : NULL, rank, buf, n);
}

static void name_rank(void *ctx, int rank, char *buf, size_t n) {
  describe_rank(ctx, rank, buf, n);
}

// The verdict of an agreement (collectives/agree.h; the runner's steps
// return theirs): true when every rank succeeded. Otherwise rank 0 prints
// the failures (identical ones merged), the batch's verdict line keeps the
// first, and every rank returns false. Consumes `all`.
static bool report(const worker_t *w, hl_status_t all) {
  if (!all) return true;
  if (w->rank == 0) {
    fprintf(stderr, "%s\n", hl_status_message(all));
    fflush(stderr);
  }
  if (w->failure && w->failure->length == 0) {
    // The verdict line: the first failure, without the line prefix.
    const char *msg = hl_status_message(all);
    size_t skip = strlen(w->prefix);
    if (strncmp(msg, w->prefix, skip) == 0) msg += skip;
    hl_strbuf_append_n(w->failure, msg, strcspn(msg, "\n"));
  }
  hl_status_free(all);
  return false;
}

// Every rank calls this at the same point with its status (NULL = ok); it
// returns true when every rank succeeded (report above). Before the program
// runs no rank can be blocked in a collective that needs another, so the
// agreement waits as long as it takes.
static bool agree(const worker_t *w, hl_status_t st) {
  hl_agree_style_t style = {w->prefix, name_rank, (void *)w, NULL};
  return report(w, hl_mpi_agree(w->comm, st, -1, &style));
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
  hl_polite_bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
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
  hl_polite_allgather(&mine, 1, MPI_LONG_LONG, lengths, 1, MPI_LONG_LONG, w->comm);
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
    hl_polite_gatherv(text, (int)length, MPI_CHAR, all, counts, offsets, MPI_CHAR, 0, w->comm);
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
          hl_polite_recv(buf, n, MPI_CHAR, r, 0, w->comm, MPI_STATUS_IGNORE);
          fwrite(buf, 1, (size_t)n, stdout);
        }
      hl_free(buf);
    } else {
      for (size_t off = 0; off < length; off += (size_t)kChunk) {
        int n = length - off < (size_t)kChunk ? (int)(length - off) : kChunk;
        hl_polite_send(text + off, n, MPI_CHAR, 0, 0, w->comm);
      }
    }
  }
  hl_free(lengths);
  if (w->rank == 0) fflush(stdout);
}

// Runs the program once, or --repeat times with the timing report on rank
// 0's stderr. Every run ends with an agreement (the runner's), so a rank
// that fails in run k ends the job instead of leaving the others in run
// k + 1.
static bool execute_runs(worker_t *w, hl_runner_t *runner, const hl_inputs_t *inputs,
                         hl_literal_t **result) {
  bool timed = w->options->repeat > 0;
  int64_t runs = timed ? w->options->repeat : 1;
  double *seconds = hl_calloc((size_t)runs, sizeof(double));
  bool ok = agree(w, seconds ? NULL : HL_OOM());
  for (int64_t i = 0; ok && i < runs; i++) {
    hl_literal_release(*result);
    *result = NULL;
    if (timed) hl_polite_barrier(w->comm);
    double mine = 0;
    ok = report(w, hl_runner_run(runner, inputs->args, inputs->count, result, &mine));
    if (ok && timed)
      hl_polite_reduce(&mine, &seconds[i], 1, MPI_DOUBLE, MPI_MAX, 0, w->comm);
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
  hl_free(seconds);
  return ok;
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
  if (!agree(w, st)) return false;
  int checked_here = checked, checked_anywhere = 0;
  hl_polite_allreduce(&checked_here, &checked_anywhere, 1, MPI_INT, MPI_MAX, w->comm);
  if (!checked_anywhere) return true;  // snapshots without a recorded result
  if (!checked) {
    snprintf(line, sizeof(line), "no expectation (its snapshot records no result)");
    matched = true;
  }
  char *all = w->rank == 0 ? hl_calloc((size_t)w->size, kLine) : NULL;
  hl_polite_gather(line, kLine, MPI_CHAR, all, kLine, MPI_CHAR, 0, w->comm);
  int mine = matched ? 0 : 1, differ = 0;
  hl_polite_allreduce(&mine, &differ, 1, MPI_INT, MPI_SUM, w->comm);
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
  if (!agree(w, hl_global_result_check(w->options, program, result, &w->grid, flag))) return false;
  hl_literal_t *global = NULL;
  hl_status_t st = hl_global_output_assemble(w->comm, w->options, program, result, &w->grid,
                                             w->rank, flag, &global);
  char line[512] = "";
  bool matched = false;
  if (!st && global) st = hl_expect_global_check(w->options, global, line, sizeof(line), &matched);
  hl_literal_release(global);
  if (!agree(w, st)) return false;
  int differ = w->rank == 0 && !matched;
  hl_polite_bcast(&differ, 1, MPI_INT, 0, w->comm);
  if (w->rank == 0) {
    fprintf(stderr, "hlo-launch: --expect-global: %s\n", line);
    fflush(stderr);
  }
  if (differ) w->exit_code = HL_EXIT_MISMATCH;
  return true;
}

// Batch mode: the launcher checked none of the batch's programs, so each
// rank runs its pre-launch checks (custom-call targets, instructions,
// collectives) on the program it is about to run.
static hl_status_t check_batch_program(void *ctx, const hl_module_t *module,
                                       const hl_grid_t *grid) {
  return hl_spawn_check_program(ctx, module, grid);
}

// Rank 0's watchdog found a hang and printed its report: the launcher
// learns the status from its status file; the debug session then ends the
// job with MPI_Abort.
static void end_hung_job(void *ctx) {
  const hl_launch_options_t *o = ctx;
  if (!o->status_file) return;
  int fd = open(o->status_file, O_WRONLY | O_TRUNC);
  if (fd >= 0) {
    dprintf(fd, "%d\n", HL_EXIT_HANG);
    close(fd);
  }
}

// The runner's options (runner/runner.h) from the command line: the
// embedding API fills the same struct from hlo_runner_options_t.
static void runner_options(const worker_t *w, bool global, hl_runner_options_t *ro) {
  const hl_launch_options_t *o = w->options;
  hl_runner_collective_check_t check = HL_RUNNER_CHECK_NONE;
  // The static collective check: hlo-launch's spawner ran it already
  // (--worker); ranks started by a user's own mpirun / srun run it when
  // every rank runs the same program file (an MPMD job's programs differ).
  if (!o->no_collective_check && !w->batch && !o->worker) check = HL_RUNNER_CHECK_SAME_NAME;
  *ro = (hl_runner_options_t){
      .grid = &w->grid,
      .global_program = global,
      .collective_check = check,
      .check_name = o->program,
      .check_module = w->batch && !o->no_collective_check ? check_batch_program : NULL,
      .check_ctx = (void *)o,
      .fusion_pass = !o->no_fusion_pass,
      .no_fusion_blocking = o->no_fusion_blocking,
      .no_warm_start = o->no_warm_start,
      .pool = w->pool,
      .collectives = (hl_collectives_mode_t)o->collectives,
      .collectives_tuning = o->collectives_tuning,
      .collectives_tune = o->collectives_tune,
      .collectives_tuning_out = o->collectives_tuning_out,
      .collectives_tune_report = o->report_bindings,
      .infeed_files = o->infeed_files,
      .infeed_file_count = o->infeed_file_count,
      .infeed_dir = o->infeed_dir,
      .outfeed_dir = o->outfeed_dir,
      .debug = {.label = o->program,
                .hang_timeout_s = o->hang_timeout_s,
                .debug_dir = o->debug_dir,
                .trace_file = o->trace_file,
                .check_nans = o->check_nans,
                .check_infs = o->check_infs,
                .end_job = end_hung_job,
                .end_job_ctx = (void *)o},
      .profile = o->profile_top > 0,
      .profile_first_apart = o->repeat > 1,
      .line_prefix = w->prefix,
      // During a run the other ranks may be stuck in a collective that
      // needs a failed one: it waits this long, then aborts the job.
      .stuck_seconds = kAgreeWaitSeconds,
  };
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
  if (!agree(w, st) || !agree(w, resolve_grid(w, program->module))) {
    hl_program_deinit(program);
    return false;
  }
  return true;
}

// The steps after loading, on the program's ranks (w->comm), through the
// runner (runner/runner.h) that api/ uses too; takes `program` over.
static bool run_loaded(worker_t *w, hl_program_t *loaded) {
  const hl_launch_options_t *o = w->options;
  hl_program_t program = *loaded;
  hl_inputs_t inputs;
  memset(&inputs, 0, sizeof(inputs));
  hl_literal_t *result = NULL;
  hl_runner_t *runner = NULL;
  bool ok = false;
  // A global program (shardings, no collectives of its own) becomes the
  // per-partition program in the runner (launcher/partition_hook.h says
  // which are global).
  bool global = false, ambiguous = false;
  if (!agree(w, hl_program_is_global(o, &program, &global, &ambiguous))) goto done;
  // --seed on a global program: the global arrays drawn whole and cut into
  // this partition's shards, before partitioning turns the parameters into
  // shards (global_io.h).
  bool drawn_globally = o->input_source == HL_INPUT_RANDOM && w->grid.partitions > 1 && global;
  if (drawn_globally &&
      !agree(w, hl_global_random_args(o, &program, &w->grid, w->partition, &inputs)))
    goto done;
  hl_runner_options_t ro;
  runner_options(w, global, &ro);
  // The runner takes the module over (it partitions and fuses it); the
  // program borrows the module that runs back for the inputs and outputs.
  hl_module_t *module = program.module;
  program.module = NULL;
  if (!report(w, hl_runner_create(module, true, w->comm, &ro, &runner))) goto done;
  program.module = (hl_module_t *)hl_runner_module(runner);
  if (o->report_bindings)
    hl_binding_report(w->comm, &w->binding, w->rank, w->replica, w->partition,
                      (hl_bind_policy_t)o->bind_to);
  if (!agree(w, hl_outputs_check_options(o))) goto done;
  if (!agree(w, drawn_globally ? NULL
                : o->input_source == HL_INPUT_GLOBAL
                    ? hl_global_args_build(o, &program, &w->grid, w->partition, &inputs)
                    : hl_inputs_build(o, &program, w->replica, w->partition, &inputs)))
    goto done;
  // Communicators, channels, debug session: collective, so made only once
  // every rank got this far (the executable's warm start runs meanwhile).
  if (!report(w, hl_runner_start(runner))) goto done;
  if (!execute_runs(w, runner, &inputs, &result)) goto done;
  // The profile right after the runs: its peak memory line reads the peaks.
  if (o->profile_top > 0)
    hl_runner_print_profile(runner, "hlo-launch: ", (int)o->profile_top, stderr);
  if (!report(w, hl_runner_write_trace(runner))) goto done;
  if (o->output_dir &&
      !agree(w, hl_outputs_write(o->output_dir, result, w->replica, w->partition, &inputs)))
    goto done;
  if (o->global_output) {
    if (!agree(w, hl_global_output_check(o, &program, result, &w->grid))) goto done;
    if (!agree(w, hl_global_output_write(w->comm, o, &program, result, &w->grid, w->rank,
                                         &inputs)))
      goto done;
  }
  if (o->record_dir &&
      !agree(w, hl_record_write(o->record_dir, &program, &inputs, result, w->replica,
                                w->partition)))
    goto done;
  if (hl_expect_wanted(o, &program) && !check_expectation(w, &program, result)) goto done;
  if (o->expect_global && !check_global_expectation(w, &program, result)) goto done;
  if (!o->quiet) {
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_outputs_format(result, w->replica, w->partition, w->rank, &sb);
    hl_status_t fail = sb.failed ? HL_OOM() : NULL;
    if (!agree(w, fail)) {
      hl_strbuf_deinit(&sb);
      goto done;
    }
    print_results(w, hl_strbuf_cstr(&sb), sb.length);
    hl_strbuf_deinit(&sb);
  }
  ok = true;

done:
  // Every rank gets here together unless the job is being aborted.
  hl_literal_release(result);
  program.module = NULL;  // the runner's
  hl_runner_free(runner, !ok);
  hl_inputs_deinit(&inputs);
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
  snprintf(w->prefix, sizeof(w->prefix), "hlo-launch: program %s: ", e->label);
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
  snprintf(w->prefix, sizeof(w->prefix), "hlo-launch: ");
  return ok;
}

// Batch mode (launcher/batch_list.h): the programs one after another; rank 0
// prints a line per program and, unless the launcher keeps the count across
// re-launches (--batch-progress), the summary. Returns the exit status.
static int run_batch(worker_t *w) {
  const hl_launch_options_t *o = w->options;
  hl_batch_t batch;
  if (!agree(w, hl_batch_build(o, &batch))) return 1;
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
    hl_polite_bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) break;
  }
  if (w->rank == 0 && !o->batch_progress) {
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
  }
  if (progress) fclose(progress);
  hl_strbuf_deinit(&failure);
  hl_batch_deinit(&batch);
  hl_polite_bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return failed ? 1 : 0;
}

static int worker_main(const hl_launch_options_t *options);

int hl_worker_main(const hl_launch_options_t *options) {
  // The fusion JIT's generator (libLLVM) loads on the background compiler's
  // thread when the first loop is queued (the fusion pass), and the process
  // waits for that load and first compile before it exits, on every path.
  // Not loaded ahead at process start (overlapping MPI_Init; tried): that
  // cost every rank of a program that compiles nothing ~15 ms and ~50 MB
  // resident, for loops ready ~20 ms sooner.
  if (options->no_fusion_jit) hl_jit_set_enabled(false);  // before any fusion is compiled
  if (options->cache_dir) hl_jit_set_cache_dir(options->cache_dir);
  int code = worker_main(options);
  hl_jit_settle();
  return code;
}

static int worker_main(const hl_launch_options_t *options) {
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
  worker_t w = {.options = options, .comm = MPI_COMM_WORLD, .prefix = "hlo-launch: "};
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  hl_mpi_polite_init(MPI_COMM_WORLD);  // before any blocking MPI call (mpi_polite.h)
  hl_host_watch_join(w.rank);  // the launcher's watch over this host (host_watch.h)
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
  int code;
  if (hl_batch_wanted(options)) {
    code = run_batch(&w);
  } else {
    bool ok = run(&w);
    code = ok ? w.exit_code : 1;
  }
  hl_thread_pool_destroy(w.pool);
  // After a reported failure the ranks exit 0 when the launcher can learn
  // the real status from the file, so mpiexec adds no banner of its own.
  if (write_status_file(&w, code)) code = 0;
  // MPI_Finalize synchronizes inside, busy-polling under MPICH: the ranks
  // that finish first wait here politely instead (mpi_polite.h).
  if (hl_mpi_polite()) hl_polite_barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
