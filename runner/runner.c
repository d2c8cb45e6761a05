// The runner: one program on a communicator's processes (runner.h).
#include "runner/runner.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "channels/host_feeds.h"
#include "channels/mpi_channels.h"
#include "collectives/agree.h"
#include "collectives/mpi_comm.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/debug/collective_check.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/profile.h"
#include "runtime/fusion/fusion_pass.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/spmd/partitioner.h"

struct hl_runner {
  // What every run reads first, together (the debug session and the
  // options, kilobytes, last).
  hl_executable_t *exe;
  hl_comm_t *hl_comm;
  hl_thread_pool_t *pool;  // options.pool, or own_pool
  hl_module_t *module;
  hl_grid_t grid;
  int64_t replica, partition;
  MPI_Comm comm;  // the runner's duplicate of the caller's
  int rank, size;
  bool grid_known;
  bool owns_module;
  bool failed;  // a step or run failed
  bool debug_begun;
  // Test hook HL_TEST_EXEC_FAIL_RANK (read once, not per run): that rank's
  // runs fail while the others block in a barrier, as they would in a
  // collective that needs it; the job must still end. -1: off.
  int inject_fail_rank;
  int64_t runs;
  // Made once at start: the executor's options (but the profile), the
  // entry's tuple size (-1: an array), the agreement's style.
  hl_exec_options_t exec_options;
  int result_tuple_count;
  hl_agree_style_t style;
  hl_profile_t *profile;        // runs (all, or 2-N with profile_first)
  hl_profile_t *profile_first;  // the first run's, kept apart
  double profile_seconds, profile_first_seconds;
  int64_t profile_runs;
  hl_thread_pool_t *own_pool;
  hl_channel_env_t channels;  // channel routes and host feeds (channels/)
  hl_runner_options_t options;  // the caller's, copied (strings borrowed)
  hl_debug_session_t debug;
};

void hl_runner_name_rank(const hl_runner_t *r, int rank, char *buf, size_t n) {
  hl_grid_name_rank(r->grid_known ? &r->grid : NULL, rank, buf, n);
}

static void name_rank(void *ctx, int rank, char *buf, size_t n) {
  hl_runner_name_rank(ctx, rank, buf, n);
}

hl_status_t hl_runner_agree(hl_runner_t *r, hl_status_t mine, double stuck_seconds) {
  return hl_mpi_agree(r->comm, mine, stuck_seconds, &r->style);
}

hl_status_t hl_runner_agree_before_run(hl_runner_t *r, hl_status_t mine) {
  hl_rank_state_t *state = r->debug.state;
  if (!state) return hl_runner_agree(r, mine, -1);
  int32_t before = __atomic_load_n(&state->phase, __ATOMIC_ACQUIRE);
  hl_rank_state_set_phase(state, HL_PHASE_WAITING);
  hl_status_t all = hl_runner_agree(r, mine, -1);
  hl_rank_state_set_phase(state, (hl_rank_phase_t)before);
  return all;
}

// An agreement on the runner's own step or run: a failure marks the runner
// (its channels are retired, state files kept).
static hl_status_t agree_own(hl_runner_t *r, hl_status_t mine, double stuck_seconds) {
  hl_status_t all = hl_runner_agree(r, mine, stuck_seconds);
  if (all) r->failed = true;
  return all;
}

static hl_status_t resolve_grid(hl_runner_t *r, const hl_module_t *m) {
  const hl_runner_options_t *o = &r->options;
  if (o->grid) {
    if (o->grid->processes != r->size)
      return HL_INTERNAL_ERROR("a grid of %lld processes on a communicator of %d",
                               (long long)o->grid->processes, r->size);
    r->grid = *o->grid;
  } else {
    if (o->replicas < 0 || o->partitions < 0)
      return HL_INVALID("negative replicas or partitions");
    if (o->grid_words)
      HL_RETURN_IF_ERROR(hl_grid_resolve_worded(o->grid_words, r->size, o->replicas,
                                                o->partitions, m->replica_count,
                                                m->num_partitions, &r->grid));
    else
      HL_RETURN_IF_ERROR(hl_grid_resolve(r->size, o->replicas, o->partitions, m->replica_count,
                                         m->num_partitions, &r->grid));
  }
  r->grid_known = true;
  r->replica = hl_grid_replica(&r->grid, r->rank);
  r->partition = hl_grid_partition(&r->grid, r->rank);
  return NULL;
}

// A global program becomes the per-partition program; every process
// partitions it the same way.
static hl_status_t partition_if_global(hl_runner_t *r) {
  const hl_module_t *m = r->module;
  if (r->grid.partitions <= 1 || !hl_spmd_module_may_be_global(m)) return NULL;
  if (!r->options.global_program && !hl_spmd_module_has_sharding_constraint(m)) return NULL;
  hl_spmd_result_t res;
  HL_RETURN_IF_ERROR_CTX(
      hl_spmd_partition_grid(m, (int)r->grid.replicas, (int)r->grid.partitions, &res),
      "partitioning %s", m->source_path ? m->source_path : "the program");
  if (r->owns_module) hl_module_destroy(r->module);
  r->module = res.module;
  r->owns_module = true;
  res.module = NULL;
  hl_spmd_result_deinit(&res);
  return NULL;
}

// The static collective check, where it applies (collective: every
// process reaches the same verdict), then the caller's own.
static hl_status_t check_module(hl_runner_t *r) {
  const hl_runner_options_t *o = &r->options;
  bool check = o->collective_check == HL_RUNNER_CHECK_ALWAYS;
  if (o->collective_check == HL_RUNNER_CHECK_SAME_NAME) {
    const char *name = o->check_name       ? o->check_name
                       : r->module->source_path ? r->module->source_path
                                                : "";
    unsigned long long hash = 14695981039346656037ull, low = 0, high = 0;  // FNV-1a
    for (const char *p = name; *p; p++) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
    hl_polite_allreduce(&hash, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, r->comm);
    hl_polite_allreduce(&hash, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, r->comm);
    check = low == high;
  }
  if (check)
    HL_RETURN_IF_ERROR(hl_collective_check(r->module, r->grid.replicas, r->grid.partitions));
  if (o->check_module) return o->check_module(o->check_ctx, r->module, &r->grid);
  return NULL;
}

// Unfused programs (StableHLO, "before optimizations" dumps) get the
// fusions XLA's CPU compiler would form; fused ones pass unchanged.
static hl_status_t fuse(hl_runner_t *r) {
  const hl_runner_options_t *o = &r->options;
  if (!o->fusion_pass || o->debug.check_nans || o->debug.check_infs || !r->owns_module)
    return NULL;
  return hl_fusion_pass_run(r->module, NULL, NULL);
}

// One set-up step: every process runs it and they agree on the outcome.
#define STEP(expr)                                \
  do {                                            \
    hl_status_t step_ = agree_own(r, (expr), -1); \
    if (step_) return step_;                      \
  } while (0)

// What a caller may pass wrong on one process only: agreed on first.
static hl_status_t check_options(const hl_runner_t *r) {
  const hl_runner_options_t *o = &r->options;
  if (!r->module) return HL_INVALID("no program (NULL)");
  int mode = (int)o->collectives;
  if (mode < (int)HL_COLLECTIVES_AUTO || mode > (int)HL_COLLECTIVES_SHM)
    return HL_INVALID("collectives mode %d is none of auto, mpi and shm", mode);
  return NULL;
}

// The executable of the final module; its warm start (plans, compiled
// loops, the first run's buffers) overlaps what the caller and
// hl_runner_start do next, and the first run waits for it.
static hl_status_t make_executable(hl_runner_t *r) {
  HL_RETURN_IF_ERROR(hl_executable_create(r->module, &r->exe));
  const hl_runner_options_t *o = &r->options;
  hl_executable_set_threads(r->exe, o->pool ? hl_thread_pool_size(o->pool) : o->threads);
  if (!o->no_warm_start) hl_executable_warm_start(r->exe);
  return NULL;
}

static hl_status_t create_steps(hl_runner_t *r) {
  STEP(check_options(r));
  STEP(resolve_grid(r, r->module));
  STEP(partition_if_global(r));
  STEP(check_module(r));
  STEP(fuse(r));
  STEP(make_executable(r));
  return NULL;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first (the MPI
// standard's hook for libraries at process termination): a process that
// ends without freeing its runner (whose executable's destroy does the
// same) still waits there for the fusion JIT's first compile rather than
// exiting under it (jit_kernel.h, hl_jit_settle).
static int settle_at_finalize(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
  hl_jit_settle();
  return MPI_SUCCESS;
}

static void hook_finalize(void) {
  int key;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, settle_at_finalize, &key, NULL) ==
      MPI_SUCCESS)
    MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
}

hl_status_t hl_runner_create(hl_module_t *module, bool take_module, MPI_Comm comm,
                             const hl_runner_options_t *options, hl_runner_t **out_runner) {
  *out_runner = NULL;
  static pthread_once_t hooked = PTHREAD_ONCE_INIT;
  pthread_once(&hooked, hook_finalize);
  hl_runner_t *r = hl_calloc(1, sizeof(*r));
  // A process without memory for its runner cannot take part in the
  // agreements, so the others would wait for it: this is the one error
  // that is not collective (it never happens short of a dying process).
  if (!r) {
    if (take_module) hl_module_destroy(module);
    return HL_OOM();
  }
  r->options = *options;
  r->style = (hl_agree_style_t){options->line_prefix, name_rank, r, options->abort_note};
  r->module = module;
  r->owns_module = take_module;
  r->inject_fail_rank = -1;
  r->comm = MPI_COMM_NULL;
  int err = MPI_Comm_dup(comm, &r->comm);
  if (err != MPI_SUCCESS) {
    r->comm = MPI_COMM_NULL;
    hl_runner_free(r, true);
    return hl_mpi_status(err, "duplicating the communicator");
  }
  MPI_Comm_set_errhandler(r->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(r->comm, &r->rank);
  MPI_Comm_size(r->comm, &r->size);
  hl_status_t st = create_steps(r);
  if (st) {
    hl_runner_free(r, true);
    return st;
  }
  *out_runner = r;
  return NULL;
}

// Pairs the program's channels with every other process's (collective: a
// process whose own step failed still takes part in the exchange, with no
// endpoints, so the others do not hang) and opens the host feeds.
static hl_status_t setup_channels(hl_runner_t *r) {
  const hl_runner_options_t *o = &r->options;
  HL_RETURN_IF_ERROR(hl_mpi_channels_connect(r->hl_comm, r->comm, r->module, r->grid.replicas,
                                             r->grid.partitions, r->rank, &r->channels));
  return hl_host_feeds_open((char **)o->infeed_files, o->infeed_file_count, o->infeed_dir,
                            o->outfeed_dir, r->replica, r->partition, &r->channels);
}

static hl_status_t make_profiles(hl_runner_t *r) {
  if (!r->options.profile) return NULL;
  HL_RETURN_IF_ERROR(hl_profile_create(&r->profile));
  if (r->options.profile_first_apart) return hl_profile_create(&r->profile_first);
  return NULL;
}

hl_status_t hl_runner_start(hl_runner_t *r) {
  const hl_runner_options_t *o = &r->options;
  r->pool = o->pool;
  if (!r->pool && o->threads > 1) {
    STEP(hl_thread_pool_create(o->threads, &r->own_pool));
    r->pool = r->own_pool;
  }
  // The communicator: created only once every process got this far, since
  // it is collective.
  STEP(hl_mpi_comm_create(r->comm, &r->hl_comm));
  STEP(hl_shm_layer_install(r->hl_comm, o->collectives));
  if (o->collectives_tuning) STEP(hl_shm_layer_set_tuning_file(r->hl_comm, o->collectives_tuning));
  if (o->collectives_tune)
    STEP(hl_shm_layer_set_autotune(r->hl_comm, o->collectives_tuning_out,
                                   o->collectives_tune_report));
  STEP(r->hl_comm->vtable->prepare(r->hl_comm, r->module, r->grid.replicas,
                                   r->grid.partitions));
  STEP(setup_channels(r));
  STEP(hl_debug_session_begin(&r->debug, &r->options.debug, r->comm, r->rank, r->size));
  r->debug_begun = true;
  STEP(hl_debug_session_start(&r->debug, r->module, r->grid.replicas, r->grid.partitions));
  STEP(make_profiles(r));
  const char *inject = getenv("HL_TEST_EXEC_FAIL_RANK");
  r->inject_fail_rank = inject && *inject ? atoi(inject) : -1;
  r->exec_options = (hl_exec_options_t){
      .replica_id = r->replica,
      .partition_id = r->partition,
      .num_replicas = r->grid.replicas,
      .num_partitions = r->grid.partitions,
      .comm = r->hl_comm,
      .channels = &r->channels,
      .observer = hl_debug_session_observer(&r->debug),
      .no_fusion_blocking = o->no_fusion_blocking,
      .pool = r->pool,
  };
  const hl_shape_t *root = &r->module->entry->root->shape;
  r->result_tuple_count = hl_shape_is_tuple(root) ? root->tuple_count : -1;
  return NULL;
}
#undef STEP

static hl_status_t execute(hl_runner_t *r, hl_literal_t *const *args, int nargs,
                           hl_profile_t *profile, hl_literal_t **out_result) {
  r->exec_options.profile = profile;
  if (r->inject_fail_rank >= 0) {
    if (r->inject_fail_rank == r->rank)
      return HL_INVALID("injected execution failure (HL_TEST_EXEC_FAIL_RANK)");
    return r->hl_comm->vtable->barrier(r->hl_comm);
  }
  HL_RETURN_IF_ERROR(hl_executable_run(r->exe, &r->exec_options, args, nargs, out_result));
  if (!*out_result) return HL_INTERNAL_ERROR("the executor returned no result");
  if (r->result_tuple_count >= 0 && (*out_result)->shape.tuple_count != r->result_tuple_count)
    return HL_INTERNAL_ERROR("the result has %d elements, the entry %d",
                             (*out_result)->shape.tuple_count, r->result_tuple_count);
  return NULL;
}

hl_status_t hl_runner_run(hl_runner_t *r, hl_literal_t *const *args, int nargs,
                          hl_literal_t **out_result, double *out_seconds) {
  *out_result = NULL;
  hl_profile_t *profile = r->runs == 0 && r->profile_first ? r->profile_first : r->profile;
  // Timed only when someone reads it: a small step costs about a
  // microsecond, and the embedding API's runs are not timed.
  bool timed = out_seconds || profile;
  bool phases = r->debug.state != NULL;  // the watchdog's view of this rank
  if (phases) hl_debug_session_phase(&r->debug, HL_PHASE_RUNNING);
  double start = timed ? MPI_Wtime() : 0;
  hl_status_t st = execute(r, args, nargs, profile, out_result);
  double seconds = timed ? MPI_Wtime() - start : 0;
  if (phases) hl_debug_session_phase(&r->debug, HL_PHASE_WAITING);
  if (profile && profile == r->profile_first) {
    r->profile_first_seconds = seconds;
  } else if (profile) {
    r->profile_seconds += seconds;
    r->profile_runs++;
  }
  r->runs++;
  st = agree_own(r, st, r->options.stuck_seconds);
  if (phases) hl_debug_session_phase(&r->debug, HL_PHASE_DONE);
  if (st) {
    hl_literal_release(*out_result);
    *out_result = NULL;
  }
  if (out_seconds) *out_seconds = seconds;
  return st;
}

hl_status_t hl_runner_write_trace(hl_runner_t *r) {
  return agree_own(
      r,
      hl_debug_session_write_trace(&r->debug, r->grid.replicas, r->grid.partitions,
                                   &r->channels),
      -1);
}

char *hl_runner_profile_text(hl_runner_t *r, const char *heading_prefix, int top) {
  if (!r->profile) return NULL;
  // Memory first: the roofline's measurements below allocate their own.
  double peak_arrays = 0, peak_resident = 0;
  hl_executable_memory_t mem;
  hl_profile_memory_peaks(&peak_arrays, &peak_resident);
  if (!hl_executable_memory_bounds(r->exe, &mem)) mem.live_bound_bytes = 0;
  int64_t live_bound = mem.live_bound_bytes, live_params = mem.parameter_bytes;
  double flops_per_s = 0, bytes_per_s = 0;
  hl_profile_measure_machine(r->pool, &flops_per_s, &bytes_per_s);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  char who[96];
  hl_runner_name_rank(r, r->rank, who, sizeof(who));
  int threads = hl_thread_pool_size(r->pool);
  hl_strbuf_appendf(&sb, "%sprofile of %s (%d thread%s):\n", heading_prefix, who, threads,
                    threads == 1 ? "" : "s");
  if (r->profile_first && r->runs > 0) {
    hl_strbuf_append(&sb, "  first run (cold: plans, compiled loops, first touch of memory):\n");
    hl_profile_format(r->profile_first, top, r->profile_first_seconds, 1, flops_per_s,
                      bytes_per_s, &sb);
    hl_strbuf_appendf(&sb, "  runs 2-%lld (steady state):\n", (long long)r->profile_runs + 1);
  }
  hl_profile_format(r->profile, top, r->profile_seconds, r->profile_runs, flops_per_s,
                    bytes_per_s, &sb);
  if (live_bound > 0) {
    hl_profile_format_memory(peak_arrays, peak_resident, live_bound, live_params, &sb);
    hl_profile_format_scratch(mem.scratch_peak_bytes, mem.with_scratch_peak_bytes, &sb);
    hl_profile_format_workspaces(mem.fusion_workspace_bytes, &sb);
  }
  int len = sb.failed ? 0 : (int)sb.length;
  int *lens = r->rank == 0 ? hl_calloc((size_t)r->size, sizeof(int)) : NULL;
  hl_polite_gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, r->comm);
  int *offs = r->rank == 0 ? hl_calloc((size_t)r->size, sizeof(int)) : NULL;
  char *all = NULL;
  if (r->rank == 0 && lens && offs) {
    int total = 0;
    for (int k = 0; k < r->size; k++) {
      offs[k] = total;
      total += lens[k];
    }
    all = hl_malloc((size_t)total + 1);
  }
  hl_polite_gatherv(hl_strbuf_cstr(&sb), len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, r->comm);
  if (all) all[offs[r->size - 1] + lens[r->size - 1]] = 0;
  hl_free(lens);
  hl_free(offs);
  hl_strbuf_deinit(&sb);
  return all;
}

void hl_runner_print_profile(hl_runner_t *r, const char *heading_prefix, int top, FILE *out) {
  char *all = hl_runner_profile_text(r, heading_prefix, top);
  if (all) {
    fputs(all, out);
    fflush(out);
  }
  hl_free(all);
}

void hl_runner_free(hl_runner_t *r, bool failed) {
  if (!r) return;
  bool clean = !failed && !r->failed;
  // Every process gets here together unless the job is being aborted.
  if (r->debug_begun) hl_debug_session_end(&r->debug, clean);
  if (!clean && r->channels.route_count) hl_mpi_channels_retire(r->hl_comm);
  hl_mpi_channels_release_routes(&r->channels);
  hl_host_feeds_close(&r->channels);
  hl_comm_destroy(r->hl_comm);
  hl_executable_destroy(r->exe);
  hl_profile_destroy(r->profile);
  hl_profile_destroy(r->profile_first);
  hl_thread_pool_destroy(r->own_pool);
  if (r->owns_module) hl_module_destroy(r->module);
  if (r->comm != MPI_COMM_NULL) MPI_Comm_free(&r->comm);
  hl_free(r);
}

const hl_module_t *hl_runner_module(const hl_runner_t *r) { return r->module; }
const hl_grid_t *hl_runner_grid(const hl_runner_t *r) { return &r->grid; }
int64_t hl_runner_replica(const hl_runner_t *r) { return r->replica; }
int64_t hl_runner_partition(const hl_runner_t *r) { return r->partition; }
MPI_Comm hl_runner_comm(const hl_runner_t *r) { return r->comm; }
hl_thread_pool_t *hl_runner_pool(const hl_runner_t *r) { return r->pool; }
