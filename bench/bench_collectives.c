// Collectives benchmark: our path vs the raw MPI call on the same buffers, in
// the same run. Run under MPI (bench/run_collectives.sh):
//
//   mpiexec -n 8 bench_collectives [--max-bytes N] [--min-bytes N] [--ops a,b]
//                                  [--budget SECONDS] [--max-iters N] [--quick]
//                                  [--rounds N] [--fresh-results]
//                                  [--shm-mode auto|shm] [--write-tuning FILE]
//
// For each collective and message size it times
//   raw   the MPI call the backend should boil down to (MPI_Allreduce,
//         MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Sendrecv
//         around a ring) between the argument's buffer and a preallocated
//         result buffer;
//   comm  the communicator interface (runtime/comm/comm.h) on the same buffers;
//   exec  a one-instruction module (parameter -> collective) run through
//         hl_executable_run, i.e. what a program run repeatedly pays per
//         call: executor, kernel, result allocation (the check before timing
//         runs plain hl_execute, which also plans the module).
//   shm   the communicator interface with the node shared-memory layer
//         (collectives/shm/) in --shm-mode auto (default: the layer's own
//         choice per size) or shm (forced), on the same buffers;
//   win   with --compare-window: the same layer forced onto its window path
//         (HL_SHM_DIRECT=0), a line of its own under each row;
//   copy  every rank memcpy()s a message-sized buffer (on huge pages, as the
//         layer's exposed buffers are) at the same time: the
//         node's memory bandwidth under the same load, from which the
//         "bound" column is the fraction of the bandwidth bound the shm path
//         reaches (minimal bytes each rank must read + write for the op,
//         e.g. all-reduce on p ranks N (1 + 1/p) + 2 N (p-1)/p, at the copy
//         loop's read + write rate).
// Message size = the larger per-process buffer (all-gather: its result,
// reduce-scatter: its operand; the others: both), f32 elements, one group of
// all processes (cross_replica, R = N, P = 1). Sizes that do not split evenly
// over the group round up to one element per process.
// Each of --rounds rounds runs one block of iterations per path (after one
// untimed call), in an order that cycles through all six from round to round;
// a block's time is the slowest rank's mean.
// The ratio (and delta) columns are the median over rounds of a path's block
// against the raw block of the same round: paired, so drift on shared cores
// cancels, and a median, so a round hit by another process's burst does not
// decide. The time columns are each path's best block. --write-tuning FILE (with
// --shm-mode shm) writes hlo-launch --collectives-tuning thresholds from the
// shm ratios. Targets (issue 4):
// >= 1 MiB at most 1.05x raw, 4 B at most raw + 2 us; shm (issue 16):
// >= 4 MiB all-reduce / reduce-scatter <= 0.5x raw, the others <= 0.6x,
// <= 4 KiB at most raw + 2 us.
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collectives/mpi_comm.h"
#include "collectives/shm/shm_layer.h"
#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/comm/comm.h"
#include "runtime/exec/executor.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"

typedef enum { OP_AR, OP_AG, OP_RS, OP_A2A, OP_CP, OP_COUNT } op_t;
static const char *const kOpNames[OP_COUNT] = {"all-reduce", "all-gather", "reduce-scatter",
                                               "all-to-all", "collective-permute"};

enum { kMaxRounds = 99 };

static const char *op_name(op_t op) { return op < OP_COUNT ? kOpNames[op] : "?"; }

typedef struct {
  int rank, size;
  MPI_Comm world;  // a duplicate: the raw calls never match the backend's traffic
  hl_comm_t *comm;
  hl_comm_t *shm;  // with the shared-memory layer
  hl_comm_t *win;  // --compare-window: the layer forced onto its window path
  double budget;   // seconds per (op, size), all paths and rounds together
  int max_iters;   // per block
  int rounds;      // blocks per path; ratios are medians over rounds
  bool fresh;      // raw and comm write a result buffer malloc'd per call, as exec does
} bench_t;

typedef struct {
  op_t op;
  int64_t in_count, out_count;  // f32 elements per process
  hl_module_t *module;
  hl_executable_t *exe;         // the module's plans, kept across calls
  const hl_instruction_t *inst;
  hl_literal_t *arg;
  float *out;                   // raw and comm results
  char *copy_src, *copy_dst;    // the copy loop's message-sized buffers
} config_t;

static void die(hl_status_t st, const char *what) {
  if (!st) return;
  fprintf(stderr, "bench_collectives: %s: %s\n", what, hl_status_message(st));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static hl_status_t add_combine(void *state, hl_dtype_t dtype, const void *in, void *inout,
                               int64_t count) {
  (void)state;
  (void)dtype;
  const float *a = in;
  float *b = inout;
  for (int64_t i = 0; i < count; ++i) b[i] += a[i];
  return NULL;
}

static const hl_comm_reducer_t kAdd = {HL_COMM_REDUCE_ADD, add_combine, NULL};

// The one-instruction module for `c` (in/out counts already set).
static void build_module(const bench_t *b, config_t *c) {
  hl_strbuf_t text;
  hl_strbuf_init(&text);
  hl_strbuf_appendf(&text,
                    "HloModule bench, replica_count=%d\n\nadd {\n  a = f32[] parameter(0)\n"
                    "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n"
                    "  x = f32[%lld]{0} parameter(0)\n  ROOT r = f32[%lld]{0} ",
                    b->size, (long long)c->in_count, (long long)c->out_count);
  switch (c->op) {
    case OP_AR: hl_strbuf_appendf(&text, "all-reduce(x), replica_groups={}, to_apply=add"); break;
    case OP_AG: hl_strbuf_appendf(&text, "all-gather(x), replica_groups={}, dimensions={0}"); break;
    case OP_RS:
      hl_strbuf_appendf(&text, "reduce-scatter(x), replica_groups={}, dimensions={0}, "
                               "to_apply=add");
      break;
    case OP_A2A: hl_strbuf_appendf(&text, "all-to-all(x), replica_groups={}, dimensions={0}"); break;
    case OP_CP:
      hl_strbuf_appendf(&text, "collective-permute(x), source_target_pairs={");
      for (int i = 0; i < b->size; ++i)
        hl_strbuf_appendf(&text, "%s{%d,%d}", i ? "," : "", i, (i + 1) % b->size);
      hl_strbuf_appendf(&text, "}");
      break;
    default: break;
  }
  hl_strbuf_appendf(&text, "\n}\n");
  die(hl_parse_hlo_module(text.data, text.length, "bench.hlo", &c->module), "parse");
  die(hl_verify_module(c->module), "verify");
  c->inst = c->module->entry->root;
  hl_strbuf_deinit(&text);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 uapi
#endif

// Best effort: the whole 2 MiB pages inside [p, p + bytes) on huge pages.
static void huge_pages(void *p, size_t bytes) {
  uintptr_t h = (uintptr_t)2 << 20, a = (uintptr_t)p;
  uintptr_t lo = (a + h - 1) & ~(h - 1), hi = (a + bytes) & ~(h - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_COLLAPSE);
}

static void setup(const bench_t *b, config_t *c, op_t op, int64_t bytes) {
  memset(c, 0, sizeof *c);
  c->op = op;
  int64_t n = bytes / 4 > 0 ? bytes / 4 : 1;
  int64_t per = (n + b->size - 1) / b->size;  // elements per group member
  switch (op) {
    case OP_AR: case OP_CP: c->in_count = c->out_count = n; break;
    case OP_AG: c->in_count = per; c->out_count = per * b->size; break;
    case OP_RS: c->in_count = per * b->size; c->out_count = per; break;
    case OP_A2A: c->in_count = c->out_count = per * b->size; break;
    default: break;
  }
  build_module(b, c);
  die(hl_executable_create(c->module, &c->exe), "executable");
  die(b->comm->vtable->prepare(b->comm, c->module, b->size, 1), "prepare");
  die(b->shm->vtable->prepare(b->shm, c->module, b->size, 1), "prepare (shm)");
  if (b->win) {
    // HL_SHM_DIRECT=0 while this layer's node is made: the window path.
    const char *was = getenv("HL_SHM_DIRECT");
    char *saved = was ? hl_strdup(was) : NULL;
    setenv("HL_SHM_DIRECT", "0", 1);
    die(b->win->vtable->prepare(b->win, c->module, b->size, 1), "prepare (window)");
    if (saved) setenv("HL_SHM_DIRECT", saved, 1);
    else unsetenv("HL_SHM_DIRECT");
    hl_free(saved);
  }
  hl_shape_t shape = hl_shape_array(HL_F32, 1, &c->in_count);
  die(hl_literal_create(&shape, &c->arg), "argument");
  float *in = c->arg->data;
  for (int64_t i = 0; i < c->in_count; ++i) in[i] = (float)((i + b->rank) % 7);
  c->out = hl_malloc((size_t)c->out_count * 4);
  if (!c->out) die(HL_OOM(), "result buffer");
  memset(c->out, 0, (size_t)c->out_count * 4);
  size_t big = (size_t)(c->in_count > c->out_count ? c->in_count : c->out_count) * 4;
  c->copy_src = hl_malloc(big);
  c->copy_dst = hl_malloc(big);
  if (!c->copy_src || !c->copy_dst) die(HL_OOM(), "copy buffers");
  memset(c->copy_src, 1, big);
  memset(c->copy_dst, 2, big);
  // The layer moves the buffers it exposes onto huge pages when they are
  // exposed again (collectives/shm/shm_pages.c), and raw MPI then runs on
  // the same pages; the copy loop gets them too, so the bound it sets is
  // the memory's best rate, not a 4 KiB-page rate.
  huge_pages(c->copy_src, big);
  huge_pages(c->copy_dst, big);
}

static void teardown(config_t *c) {
  hl_literal_release(c->arg);
  hl_free(c->out);
  hl_free(c->copy_src);
  hl_free(c->copy_dst);
  hl_executable_destroy(c->exe);
  hl_module_destroy(c->module);
}

static void run_raw(const bench_t *b, const config_t *c) {
  const float *in = c->arg->data;
  int per = (int)(c->op == OP_AG ? c->in_count : c->op == OP_RS ? c->out_count
                                                                : c->in_count / b->size);
  int rc = MPI_SUCCESS;
  switch (c->op) {
    case OP_AR:
      rc = MPI_Allreduce(in, c->out, (int)c->in_count, MPI_FLOAT, MPI_SUM, b->world);
      break;
    case OP_AG: rc = MPI_Allgather(in, per, MPI_FLOAT, c->out, per, MPI_FLOAT, b->world); break;
    case OP_RS: rc = MPI_Reduce_scatter_block(in, c->out, per, MPI_FLOAT, MPI_SUM, b->world); break;
    case OP_A2A: rc = MPI_Alltoall(in, per, MPI_FLOAT, c->out, per, MPI_FLOAT, b->world); break;
    case OP_CP:
      rc = MPI_Sendrecv(in, (int)c->in_count, MPI_FLOAT, (b->rank + 1) % b->size, 7, c->out,
                        (int)c->out_count, MPI_FLOAT, (b->rank + b->size - 1) % b->size, 7,
                        b->world, MPI_STATUS_IGNORE);
      break;
    default: break;
  }
  if (rc != MPI_SUCCESS) die(hl_mpi_status(rc, "raw MPI call"), op_name(c->op));
}

static void run_comm_on(hl_comm_t *comm, const bench_t *b, const config_t *c) {
  const hl_comm_vtable_t *v = comm->vtable;
  const void *in = c->arg->data;
  hl_status_t st = NULL;
  switch (c->op) {
    case OP_AR: st = v->all_reduce(comm, c->inst, HL_F32, in, c->out, c->in_count, &kAdd, NULL); break;
    case OP_AG: st = v->all_gather(comm, c->inst, in, c->out, (size_t)c->in_count * 4, NULL); break;
    case OP_RS:
      st = v->reduce_scatter(comm, c->inst, HL_F32, in, c->out, c->out_count, &kAdd, NULL);
      break;
    case OP_A2A:
      st = v->all_to_all(comm, c->inst, in, c->out, (size_t)(c->in_count / b->size) * 4, NULL);
      break;
    case OP_CP:
      st = v->collective_permute(comm, c->inst, in, c->out, (size_t)c->in_count * 4, NULL);
      break;
    default: break;
  }
  die(st, op_name(c->op));
}

static void run_comm(const bench_t *b, const config_t *c) { run_comm_on(b->comm, b, c); }

static void run_shm(const bench_t *b, const config_t *c) { run_comm_on(b->shm, b, c); }

static void run_win(const bench_t *b, const config_t *c) { run_comm_on(b->win, b, c); }

static void run_copy(const bench_t *b, const config_t *c) {
  (void)b;
  size_t big = (size_t)(c->in_count > c->out_count ? c->in_count : c->out_count) * 4;
  memcpy(c->copy_dst, c->copy_src, big);
}

// Bytes one rank must at least read + write for the op on p ranks, message
// size n (the larger per-rank buffer).
static double min_traffic(op_t op, double n, int p) {
  switch (op) {
    case OP_AR: return n + n / p + 2 * n * (p - 1) / p;  // reduce a slice, copy out the rest
    case OP_RS: return n + n / p;                         // read every block's slice, write one
    default: return 2 * n;                                // read n, write n
  }
}

static void run_exec(const bench_t *b, const config_t *c) {
  hl_exec_options_t opts = {.replica_id = b->rank, .partition_id = 0,
                            .num_replicas = b->size, .num_partitions = 1, .comm = b->comm};
  hl_literal_t *result = NULL;
  die(hl_executable_run(c->exe, &opts, &c->arg, 1, &result), op_name(c->op));
  hl_literal_release(result);
}

typedef void (*path_fn)(const bench_t *, const config_t *);

// With --fresh-results, raw and comm get a new result buffer each call, as
// hl_execute allocates its result: that separates the executor's own cost
// from where the allocator happens to place the result buffer, which alone
// moved the raw/exec ratio by up to 10% at 16 MiB on this machine.
static void with_fresh_result(const bench_t *b, const config_t *c, path_fn fn) {
  if (!b->fresh) {
    fn(b, c);
    return;
  }
  config_t fresh = *c;
  fresh.out = hl_malloc((size_t)c->out_count * 4);
  if (!fresh.out) die(HL_OOM(), "result buffer");
  fn(b, &fresh);
  hl_free(fresh.out);
}

static void timed_raw(const bench_t *b, const config_t *c) { with_fresh_result(b, c, run_raw); }

static void timed_comm(const bench_t *b, const config_t *c) { with_fresh_result(b, c, run_comm); }

static void timed_shm(const bench_t *b, const config_t *c) { with_fresh_result(b, c, run_shm); }

static void timed_win(const bench_t *b, const config_t *c) { with_fresh_result(b, c, run_win); }

// Mean seconds per call of `iters` calls, the slowest rank's.
static double block(const bench_t *b, const config_t *c, path_fn fn, int iters) {
  fn(b, c);  // untimed: each path starts with its own buffers warm, as the others left them cold
  MPI_Barrier(b->world);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) fn(b, c);
  double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, b->world);
  return slowest;
}

// Checks that every path produced the raw MPI result (first and last element).
static void check(const bench_t *b, const config_t *c) {
  run_raw(b, c);
  float want0 = c->out[0], want1 = c->out[c->out_count - 1];
  c->out[0] = c->out[c->out_count - 1] = -1;
  run_comm(b, c);
  if (c->out[0] != want0 || c->out[c->out_count - 1] != want1) {
    fprintf(stderr, "bench_collectives: rank %d: %s via comm gave %g..%g, raw MPI %g..%g\n",
            b->rank, op_name(c->op), c->out[0], c->out[c->out_count - 1], want0, want1);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  c->out[0] = c->out[c->out_count - 1] = -1;
  run_shm(b, c);
  if (c->out[0] != want0 || c->out[c->out_count - 1] != want1) {
    fprintf(stderr, "bench_collectives: rank %d: %s via shm gave %g..%g, raw MPI %g..%g\n",
            b->rank, op_name(c->op), c->out[0], c->out[c->out_count - 1], want0, want1);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  hl_exec_options_t opts = {.replica_id = b->rank, .num_replicas = b->size,
                            .num_partitions = 1, .comm = b->comm};
  hl_literal_t *result = NULL;
  die(hl_execute(c->module, &opts, &c->arg, 1, &result), op_name(c->op));
  const float *got = result->data;
  if (got[0] != want0 || got[c->out_count - 1] != want1) {
    fprintf(stderr, "bench_collectives: rank %d: %s via hl_execute gave %g..%g, raw %g..%g\n",
            b->rank, op_name(c->op), got[0], got[c->out_count - 1], want0, want1);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  hl_literal_release(result);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --write-tuning: the median shm / raw ratio of every (op, size) measured
// (rank 0), from which the tuning file's thresholds come.
enum { kMaxSizes = 16 };
static double g_ratio[OP_COUNT][kMaxSizes];
static int64_t g_size_of[OP_COUNT][kMaxSizes];
static int g_sizes[OP_COUNT];

static void bench_one(const bench_t *b, op_t op, int64_t bytes) {
  config_t c;
  setup(b, &c, op, bytes);
  check(b, &c);
  // Calibrate on the slowest path so all rounds together last about budget.
  double t = block(b, &c, timed_raw, 3);
  double te = block(b, &c, run_exec, 3);
  if (te > t) t = te;
  int iters = (int)(b->budget / 3 / b->rounds / (t > 1e-7 ? t : 1e-7));
  if (iters < 2) iters = 2;
  if (iters > b->max_iters) iters = b->max_iters;
  enum { kPaths = 6 };
  path_fn paths[kPaths] = {timed_raw, timed_comm, run_exec, timed_shm, run_copy,
                           b->win ? timed_win : NULL};
  double best[kPaths] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
  double win_ratio[kMaxRounds];
  double comm_ratio[kMaxRounds], exec_ratio[kMaxRounds], exec_delta[kMaxRounds];
  double shm_ratio[kMaxRounds], shm_delta[kMaxRounds], shm_bound[kMaxRounds];
  int64_t shm_calls = hl_shm_layer_call_count(b->shm);
  for (int round = 0; round < b->rounds; ++round) {
    // Rotate the order from round to round, and reverse it every other
    // cycle, so each path runs about as often before as after each other.
    double m[kPaths];
    for (int k = 0; k < kPaths; ++k) {
      int pos = (k + round) % kPaths;
      int p = (round / kPaths) % 2 ? kPaths - 1 - pos : pos;
      if (!paths[p]) {
        m[p] = 0;
        continue;
      }
      m[p] = block(b, &c, paths[p], iters);
      if (m[p] < best[p]) best[p] = m[p];
    }
    comm_ratio[round] = m[1] / m[0];
    exec_ratio[round] = m[2] / m[0];
    exec_delta[round] = (m[2] - m[0]) * 1e6;
    shm_ratio[round] = m[3] / m[0];
    shm_delta[round] = (m[3] - m[0]) * 1e6;
    win_ratio[round] = m[5] / m[0];
    double n = (double)(c.in_count > c.out_count ? c.in_count : c.out_count) * 4;
    // The copy loop moves n bytes read + n written in m[4].
    shm_bound[round] = min_traffic(op, n, b->size) * m[4] / (2 * n) / m[3];
  }
  bool took_shm = hl_shm_layer_call_count(b->shm) > shm_calls;
  if (b->rank == 0) {
    int64_t size = (c.in_count > c.out_count ? c.in_count : c.out_count) * 4;
    double raw = best[0] * 1e6, comm = best[1] * 1e6, exec = best[2] * 1e6;
    double cr = median(comm_ratio, b->rounds), er = median(exec_ratio, b->rounds);
    double ed = median(exec_delta, b->rounds);
    const char *verdict = "";
    if (size >= (1 << 20))
      verdict = er <= 1.05 ? "ok" : "MISS (>1.05x)";
    else if (bytes <= 4)
      verdict = ed <= 2.0 ? "ok" : "MISS (>+2us)";
    double sr = median(shm_ratio, b->rounds), sd = median(shm_delta, b->rounds);
    double sb = median(shm_bound, b->rounds);
    if (g_sizes[op] < kMaxSizes) {
      g_size_of[op][g_sizes[op]] = size;
      g_ratio[op][g_sizes[op]++] = sr;
    }
    const char *shm_verdict = "";
    double limit = op == OP_AR || op == OP_RS ? 0.5 : 0.6;
    if (size >= (4 << 20))
      shm_verdict = sr <= limit ? "ok" : (op == OP_AR || op == OP_RS) ? "MISS (>0.5x)"
                                                                       : "MISS (>0.6x)";
    else if (size <= 4096)
      shm_verdict = sd <= 2.0 ? "ok" : "MISS (>+2us)";
    printf("%-19s %10lld %6d %12.2f %12.2f %6.3f %12.2f %6.3f %+9.2f  %-13s %12.2f %6.3f "
           "%+9.2f %5.2f %4s %12.2f  %s\n", op_name(op), (long long)size, iters, raw, comm, cr,
           exec, er, ed, verdict, best[3] * 1e6, sr, sd, sb,
           !took_shm ? "mpi" : hl_shm_layer_direct(b->shm) ? "shmd" : "shmw",
           best[4] * 1e6, shm_verdict);
    if (b->win)
      printf("%-19s %10lld window path: best %12.2f us, ratio %6.3f\n", op_name(op),
             (long long)size, best[5] * 1e6, median(win_ratio, b->rounds));
    fflush(stdout);
  }
  teardown(&c);
}

// The tuning file (collectives/shm/shm_tuning.h): per op, shared memory
// from the smallest measured size from which on every measured size ran
// faster through it than raw MPI; never when the largest did not.
static void write_tuning(const bench_t *b, const char *path) {
  static const char *const kTuneNames[OP_COUNT] = {
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"};
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "bench_collectives: cannot write %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fprintf(f, "# hlo-launch --collectives-tuning file, written by bench_collectives on %d "
             "processes (--shm-mode shm; median shm / raw MPI ratio per size)\n", b->size);
  for (int op = 0; op < OP_COUNT; ++op) {
    if (!g_sizes[op]) continue;
    int from = g_sizes[op];
    while (from > 0 && g_ratio[op][from - 1] <= 1.0) from--;
    fprintf(f, "# %s:", kTuneNames[op]);
    for (int k = 0; k < g_sizes[op]; ++k)
      fprintf(f, " %lld B %.2f", (long long)g_size_of[op][k], g_ratio[op][k]);
    fprintf(f, "\n");
    if (from == g_sizes[op])
      fprintf(f, "%s %d never\n", kTuneNames[op], b->size);
    else
      fprintf(f, "%s %d %lld\n", kTuneNames[op], b->size,
              from == 0 ? 0LL : (long long)g_size_of[op][from]);
  }
  fclose(f);
}

static op_t op_from_name(const char *s) {
  for (int i = 0; i < OP_COUNT; ++i)
    if (!strcmp(s, kOpNames[i])) return (op_t)i;
  return OP_COUNT;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // The malloc settings hlo-launch's worker applies at start-up
  // (launcher/worker.c), so the executor path reuses freed result buffers
  // instead of page-faulting fresh mmap()ed memory on every call.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  bench_t b = {.budget = 0.9, .max_iters = 5000, .rounds = 12};
  int64_t min_bytes = 4, max_bytes = 64 << 20;
  bool ops[OP_COUNT] = {true, true, true, true, true};
  hl_collectives_mode_t shm_mode = HL_COLLECTIVES_AUTO;
  const char *tuning_path = NULL;
  bool compare_window = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) {  // smoke test (ctest): tiny sizes, short blocks
      max_bytes = 1024;
      b.budget = 0.01;
      b.rounds = 6;
    } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--min-bytes") && i + 1 < argc) min_bytes = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc) b.budget = atof(argv[++i]);
    else if (!strcmp(argv[i], "--max-iters") && i + 1 < argc) b.max_iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fresh-results")) b.fresh = true;
    else if (!strcmp(argv[i], "--compare-window")) compare_window = true;
    else if (!strcmp(argv[i], "--write-tuning") && i + 1 < argc) tuning_path = argv[++i];
    else if (!strcmp(argv[i], "--shm-mode") && i + 1 < argc) {
      hl_status_t st = hl_collectives_mode_parse(argv[++i], &shm_mode);
      if (st || shm_mode == HL_COLLECTIVES_MPI) {
        fprintf(stderr, "bench_collectives: --shm-mode needs auto or shm\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      b.rounds = atoi(argv[++i]);
      if (b.rounds < 1 || b.rounds > kMaxRounds) b.rounds = 12;
    }
    else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
      char *list = argv[++i];
      memset(ops, 0, sizeof ops);
      for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        op_t op = op_from_name(tok);
        if (op == OP_COUNT) {
          fprintf(stderr, "bench_collectives: unknown op '%s'\n", tok);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        ops[op] = true;
      }
    } else {
      fprintf(stderr, "usage: bench_collectives [--quick] [--min-bytes N] [--max-bytes N] "
                      "[--budget SECONDS] [--max-iters N] [--rounds N] [--fresh-results] "
                      "[--ops all-reduce,...] [--shm-mode auto|shm] [--write-tuning FILE] [--compare-window]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (tuning_path && shm_mode != HL_COLLECTIVES_SHM) {
    fprintf(stderr, "bench_collectives: --write-tuning needs --shm-mode shm (the layer timed at "
                    "every size)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  MPI_Comm_dup(MPI_COMM_WORLD, &b.world);
  die(hl_mpi_comm_create(MPI_COMM_WORLD, &b.comm), "communicator");
  die(hl_mpi_comm_create(MPI_COMM_WORLD, &b.shm), "communicator (shm)");
  die(hl_shm_layer_install(b.shm, shm_mode), "shared-memory layer");
  if (compare_window) {
    die(hl_mpi_comm_create(MPI_COMM_WORLD, &b.win), "communicator (window)");
    die(hl_shm_layer_install(b.win, shm_mode), "shared-memory layer (window)");
  }
  if (b.rank == 0) {
    printf("# bench_collectives: %d processes, f32, one group of all; times: best block mean "
           "in us per call (slowest rank); ratio / delta: median over %d rounds of the same "
           "round's path vs raw MPI%s; shm: the shared-memory layer in --shm-mode %s (path: "
           "the one it took: shmd direct single copy, shmw through the window, mpi); bound: fraction of the memory-bandwidth bound (copy loop, same "
           "run)\n", b.size, b.rounds,
           b.fresh ? "; raw and comm results in a buffer malloc'd per call" : "",
           hl_collectives_mode_name(shm_mode));
    printf("%-19s %10s %6s %12s %12s %6s %12s %6s %9s  %-13s %12s %6s %9s %5s %4s %12s  %s\n",
           "op", "bytes", "iters", "raw_mpi", "comm", "ratio", "exec", "ratio", "delta",
           "target", "shm", "ratio", "delta", "bound", "path", "copy", "shm_target");
  }
  // 4 B, then every 16x up to 64 MiB, plus 1 MiB.
  static const int64_t kSizes[] = {4, 64, 1024, 16 << 10, 256 << 10, 1 << 20, 4 << 20,
                                   16 << 20, 64 << 20};
  for (int op = 0; op < OP_COUNT; ++op) {
    if (!ops[op]) continue;
    for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s)
      if (kSizes[s] >= min_bytes && kSizes[s] <= max_bytes) bench_one(&b, (op_t)op, kSizes[s]);
  }
  if (tuning_path && b.rank == 0) write_tuning(&b, tuning_path);
  hl_comm_destroy(b.win);
  hl_comm_destroy(b.shm);
  hl_comm_destroy(b.comm);
  MPI_Comm_free(&b.world);
  MPI_Finalize();
  return 0;
}
