// The start-up measurement behind --collectives-tune (shm_autotune.h).
//
// Small and bounded on purpose: four sizes, a warm-up call and three timed
// calls per (collective, size, path), sizes stop early once the job has
// spent kBudgetSeconds. Each timed call starts right after a barrier of the
// node, so a rank's time is the call's cost, not its wait for late peers.
// The times are reduced with MPI_MAX over the whole job before anything is
// decided, so every rank (on every node) builds the same table and a group
// never splits between the two paths.
#include "collectives/shm/shm_autotune.h"

#include <string.h>
#include <time.h>

#include "collectives/mpi_comm.h"
#include "collectives/mpi_family.h"
#include "runtime/base/alloc.h"

static const int64_t kSizes[HL_SHM_AUTOTUNE_SIZES] = {4 << 10, 64 << 10, 1 << 20, 4 << 20};
enum { kRepeats = 3 };
// A larger size is measured only while the job's estimate of the total
// (the last size's time scaled by the size ratio) stays within this; sizes
// not measured are decided like the largest measured one.
static const double kBudgetSeconds = 1.0;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hl_status_t add_f32(void *state, hl_dtype_t dtype, const void *in, void *inout,
                           int64_t count) {
  (void)state;
  (void)dtype;
  const float *a = in;
  float *b = inout;
  for (int64_t i = 0; i < count; i++) b[i] += a[i];
  return NULL;
}
static const hl_comm_reducer_t kAddF32 = {HL_COMM_REDUCE_ADD, add_f32, NULL};

typedef struct bench {
  hl_shm_group_t group;  // all of the node's ranks
  MPI_Comm comm;         // the node's communicator, for the MPI path
  char *send, *recv;     // kSizes' largest, each
  hl_status_t st;        // the first error (calls go on: peers wait for them)
} bench_t;

// One call of `op` with `bytes` per member through shared memory, on the
// path the layer takes for it (shm_layer.c's run_job: direct from the
// node's direct_min_bytes on, else the window).
static void run_shm(bench_t *b, hl_shm_tune_op_t op, int64_t bytes) {
  hl_shm_group_t *g = &b->group;
  int p = g->size;
  size_t block = (size_t)bytes / (size_t)p;  // all-gather / all-to-all blocks
  int64_t count = bytes / 4, rs_count = count / p;
  size_t path_bytes = op == HL_SHM_TUNE_ALL_REDUCE        ? (size_t)count * 4
                      : op == HL_SHM_TUNE_REDUCE_SCATTER ? (size_t)rs_count * 4
                      : op == HL_SHM_TUNE_ALL_GATHER || op == HL_SHM_TUNE_ALL_TO_ALL
                          ? block
                          : (size_t)bytes;
  bool direct = g->node->direct && path_bytes >= g->node->direct_min_bytes;
  hl_shm_reduction_t red;
  hl_status_t st = NULL;
  int src = (g->me + p - 1) % p, dst = (g->me + 1) % p;
  switch (op) {
    case HL_SHM_TUNE_ALL_REDUCE:
    case HL_SHM_TUNE_REDUCE_SCATTER:
      st = hl_shm_reduction_init(HL_F32, &kAddF32, &red);
      if (st) break;
      if (op == HL_SHM_TUNE_ALL_REDUCE)
        st = direct ? hl_shm_direct_all_reduce(g, &red, b->send, b->recv, count)
                    : hl_shm_all_reduce(g, &red, b->send, b->recv, count);
      else
        st = direct ? hl_shm_direct_reduce_scatter(g, &red, b->send, b->recv, rs_count)
                    : hl_shm_reduce_scatter(g, &red, b->send, b->recv, rs_count);
      break;
    case HL_SHM_TUNE_ALL_GATHER:
      if (direct) st = hl_shm_direct_all_gather(g, b->send, b->recv, block);
      else hl_shm_all_gather(g, b->send, b->recv, block);
      break;
    case HL_SHM_TUNE_ALL_TO_ALL:
      if (direct) st = hl_shm_direct_all_to_all(g, b->send, b->recv, block);
      else hl_shm_all_to_all(g, b->send, b->recv, block);
      break;
    case HL_SHM_TUNE_PERMUTE:  // a ring: each rank sends to the next
      if (direct) st = hl_shm_direct_permute(g, src, dst, b->send, b->recv, (size_t)bytes);
      else hl_shm_permute(g, src, dst, b->send, b->recv, (size_t)bytes);
      break;
    default:
      if (direct) st = hl_shm_direct_broadcast(g, b->send, b->recv, (size_t)bytes);
      else hl_shm_broadcast(g, b->send, b->recv, (size_t)bytes);
      break;
  }
  if (st && !b->st) b->st = st;
  else hl_status_free(st);
}

// The same call through raw MPI on the node's communicator.
static void run_mpi(bench_t *b, hl_shm_tune_op_t op, int64_t bytes) {
  int p = b->group.size, me = b->group.me;
  int block = (int)(bytes / p), count = (int)(bytes / 4);
  int err;
  switch (op) {
    case HL_SHM_TUNE_ALL_REDUCE:
      err = MPI_Allreduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM, b->comm);
      break;
    case HL_SHM_TUNE_REDUCE_SCATTER:
      err = MPI_Reduce_scatter_block(b->send, b->recv, count / p, MPI_FLOAT, MPI_SUM, b->comm);
      break;
    case HL_SHM_TUNE_ALL_GATHER:
      err = MPI_Allgather(b->send, block, MPI_BYTE, b->recv, block, MPI_BYTE, b->comm);
      break;
    case HL_SHM_TUNE_ALL_TO_ALL:
      err = MPI_Alltoall(b->send, block, MPI_BYTE, b->recv, block, MPI_BYTE, b->comm);
      break;
    case HL_SHM_TUNE_PERMUTE:
      err = MPI_Sendrecv(b->send, (int)bytes, MPI_BYTE, (me + 1) % p, 0, b->recv, (int)bytes,
                         MPI_BYTE, (me + p - 1) % p, 0, b->comm, MPI_STATUS_IGNORE);
      break;
    default:
      err = MPI_Bcast(b->recv, (int)bytes, MPI_BYTE, 0, b->comm);
      break;
  }
  if (err != MPI_SUCCESS && !b->st) b->st = hl_mpi_status(err, "timing MPI collectives");
}

// This rank's best of kRepeats (after a warm-up call), seconds.
static double time_best(bench_t *b, bool shm, hl_shm_tune_op_t op, int64_t bytes) {
  double best = 1e30;
  for (int r = 0; r <= kRepeats; r++) {
    MPI_Barrier(b->comm);
    double t0 = now_s();
    if (shm) run_shm(b, op, bytes);
    else run_mpi(b, op, bytes);
    double t = now_s() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

// The table from the (agreed) times; see shm_autotune.h.
static void decide(const hl_shm_autotune_t *a, hl_shm_tuning_t *t) {
  memset(t, 0, sizeof(*t));
  if (a->sizes == 0) return;
  for (int op = 0; op < HL_SHM_TUNE_OPS; op++) {
    int from = a->sizes;
    while (from > 0 && a->shm_s[op][from - 1] < a->mpi_s[op][from - 1]) from--;
    t->entries[t->count++] = (hl_shm_tuning_entry_t){
        op, a->uneven ? 0 : a->node_size, from == a->sizes ? -1 : a->size_of[from]};
  }
}

hl_status_t hl_shm_autotune_run(MPI_Comm job, hl_shm_node_t *node, int row,
                                hl_shm_autotune_t *out, hl_shm_tuning_t *out_table) {
  memset(out, 0, sizeof(*out));
  double t0 = now_s();
  int sizes[2] = {node->size, -node->size}, ext[2];  // min, -max over the job
  int err = MPI_Allreduce(sizes, ext, 2, MPI_INT, MPI_MIN, job);
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "--collectives-tune");
  out->node_size = node->size;
  out->uneven = ext[0] != -ext[1];
  // A node of one rank has no shared-memory collectives to measure, and
  // the job must measure alike everywhere: nothing is measured.
  if (ext[0] < 2) {
    decide(out, out_table);
    return NULL;
  }
  bench_t b = {.group = {.node = node, .set = row, .size = node->size, .me = node->rank,
                         .members = node->identity},
               .comm = node->comm};
  size_t max = (size_t)kSizes[HL_SHM_AUTOTUNE_SIZES - 1];
  b.send = hl_malloc(max);
  b.recv = hl_malloc(max);
  int ok = b.send && b.recv, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, job);
  if (!all_ok) {
    hl_free(b.send);
    hl_free(b.recv);
    return ok ? HL_INVALID("--collectives-tune: another rank ran out of memory") : HL_OOM();
  }
  // Small values: the sums stay finite (and the pages are touched).
  for (size_t i = 0; i < max / 4; i++) ((float *)(void *)b.send)[i] = (float)(i % 7);
  memset(b.recv, 0, max);
  double before = 0;  // agreed seconds spent before this size
  for (int s = 0; s < HL_SHM_AUTOTUNE_SIZES; s++) {
    double mine[2 * HL_SHM_TUNE_OPS + 1], all[2 * HL_SHM_TUNE_OPS + 1];
    for (int op = 0; op < HL_SHM_TUNE_OPS; op++) {
      // Alternate which path goes first, so neither always runs on a cold cache.
      bool shm_first = (op + s) % 2 == 0;
      double first = time_best(&b, shm_first, (hl_shm_tune_op_t)op, kSizes[s]);
      double second = time_best(&b, !shm_first, (hl_shm_tune_op_t)op, kSizes[s]);
      mine[2 * op] = shm_first ? first : second;
      mine[2 * op + 1] = shm_first ? second : first;
    }
    mine[2 * HL_SHM_TUNE_OPS] = now_s() - t0;
    err = MPI_Allreduce(mine, all, 2 * HL_SHM_TUNE_OPS + 1, MPI_DOUBLE, MPI_MAX, job);
    if (err != MPI_SUCCESS && !b.st) b.st = hl_mpi_status(err, "--collectives-tune");
    if (err != MPI_SUCCESS) break;
    for (int op = 0; op < HL_SHM_TUNE_OPS; op++) {
      out->shm_s[op][s] = all[2 * op];
      out->mpi_s[op][s] = all[2 * op + 1];
    }
    out->size_of[s] = kSizes[s];
    out->sizes = s + 1;
    out->seconds = all[2 * HL_SHM_TUNE_OPS];
    // The next size would cost about this one's time scaled by the sizes'
    // ratio (all ranks hold the same numbers, so all stop alike).
    double this_size = out->seconds - before;
    before = out->seconds;
    if (s + 1 < HL_SHM_AUTOTUNE_SIZES &&
        out->seconds + this_size * (double)(kSizes[s + 1] / kSizes[s]) > kBudgetSeconds)
      break;
  }
  hl_free(b.send);
  hl_free(b.recv);
  // An error on one rank is every rank's: the table would differ otherwise.
  int bad = b.st != NULL, any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, job);
  if (b.st) return hl_status_annotate(b.st, "--collectives-tune");
  if (any_bad) return HL_INVALID("--collectives-tune: the measurement failed on another rank");
  decide(out, out_table);
  return NULL;
}

void hl_shm_autotune_format(const hl_shm_autotune_t *a, const hl_shm_tuning_t *t,
                            const char *prefix, hl_strbuf_t *out) {
  if (a->sizes == 0) {
    hl_strbuf_appendf(out, "%s# nothing measured: a node has a single rank\n", prefix);
    return;
  }
  // The MPI side is one implementation's: a table measured under Open MPI
  // does not carry over to MPICH, so the file says which.
  hl_strbuf_appendf(out,
                    "%s# measured on %s%d ranks per node in %.3f s against %s (max over ranks of "
                    "best of %d, us: shm / mpi per bytes per member)\n",
                    prefix, a->uneven ? "up to " : "", a->node_size, a->seconds,
                    hl_mpi_library_version_line(), kRepeats);
  for (int op = 0; op < HL_SHM_TUNE_OPS; op++) {
    hl_strbuf_appendf(out, "%s# %-20s", prefix, hl_shm_tune_op_name((hl_shm_tune_op_t)op));
    for (int s = 0; s < a->sizes; s++)
      hl_strbuf_appendf(out, " %lld: %.1f / %.1f", (long long)a->size_of[s],
                        a->shm_s[op][s] * 1e6, a->mpi_s[op][s] * 1e6);
    hl_strbuf_append(out, "\n");
  }
  for (int64_t i = 0; i < t->count; i++) {
    const hl_shm_tuning_entry_t *e = &t->entries[i];
    char size[24], min[24];
    if (e->group_size) snprintf(size, sizeof size, "%lld", (long long)e->group_size);
    else snprintf(size, sizeof size, "*");
    if (e->min_bytes >= 0) snprintf(min, sizeof min, "%lld", (long long)e->min_bytes);
    else snprintf(min, sizeof min, "never");
    hl_strbuf_appendf(out, "%s%-20s %-6s %s\n", prefix,
                      hl_shm_tune_op_name((hl_shm_tune_op_t)e->op), size, min);
  }
}
