// The shared-memory layer: interposes on the MPI backend's vtable (as the
// channel layer does, channels/mpi_channels.c) and runs a collective through
// the node's shared window (shm_ops.c) when
//   - its group lies on this node (every member; permute: every pair of the
//     instruction's set on one node), has at least 2 members, and
//   - the programs are the same on every rank (the backend's per-call
//     agreement for differing programs stays on MPI), and
//   - the mode says so: shm always; auto from the size: the tuning table's
//     threshold for (collective, group size) when --collectives-tuning gave
//     one (shm_tuning.h) or --collectives-tune measured one (shm_autotune.h),
//     else the built-in thresholds of the MPI in use (kAutoMinBytesOpenMpi,
//     kAutoMinBytesMpich; measured with bench/run_collectives.sh,
//     collectives/shm/README.md).
// Everything else goes to the backend unchanged. The decision depends only
// on what every member of the group knows alike, so members never split
// between the two paths.
//
// The -start forms are queued to the layer's progress thread, which runs
// them in order while the executor computes; -done (wait) waits for the
// job. A blocking call first waits until the queue is empty, so every rank
// runs its shared-memory collectives in program order (the slots and call
// counters rely on that). A reduction that runs the executor's reducer
// (custom computations, s4 / f8 ...) completes inside the start, as on the
// MPI path: the executor is not re-entrant across threads.
#include "collectives/shm/shm_layer.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "collectives/mpi_family.h"
#include "collectives/mpi_internal.h"
#include "collectives/progress_hook.h"
#include "collectives/shm/shm_autotune.h"
#include "collectives/shm/shm_internal.h"
#include "collectives/shm/shm_hier.h"
#include "collectives/shm/shm_node.h"
#include "collectives/shm/shm_tuning.h"
#include "runtime/base/alloc.h"

typedef enum { OP_REDUCE, OP_GATHER, OP_TO_ALL, OP_PERMUTE, OP_BROADCAST, OP_KINDS } op_kind_t;

// Below these sizes (bytes per member: the larger of its operand and
// result) MPI's own small-message paths are as fast or faster; they depend
// on the MPI. Measured with bench/run_collectives.sh --shm-mode shm
// (collectives/shm/README.md). Open MPI 4.1: on 2 ranks the layer matches
// MPI from 4 B up; on 8 ranks sharing 2 cores its flag waits cost more than
// MPI below about 16 KiB (all-reduce, reduce-scatter), 64 KiB (all-gather,
// permute) and 256 KiB (all-to-all).
static const size_t kAutoMinBytesOpenMpi[OP_KINDS] = {
    [OP_REDUCE] = 16 << 10, [OP_GATHER] = 64 << 10, [OP_TO_ALL] = 256 << 10,
    [OP_PERMUTE] = 64 << 10, [OP_BROADCAST] = 64 << 10};
// MPICH 4.0.2 (ch4:ucx) polls without ever yielding, so on 8 ranks sharing
// 2 cores its collectives wait whole time slices: the layer took 0.12-0.91
// of raw MPICH's time at every size from 4 B to 1 MiB for all-reduce,
// all-gather, reduce-scatter and all-to-all (two runs, the ratio of a size
// moving by up to 0.17 between them); permute lost below 1 KiB (1.43 at
// 4 B, 1.10 at 64 B). Broadcast is not measured by the bench: Open MPI's.
static const size_t kAutoMinBytesMpich[OP_KINDS] = {
    [OP_REDUCE] = 0, [OP_GATHER] = 0, [OP_TO_ALL] = 0, [OP_PERMUTE] = 1 << 10,
    [OP_BROADCAST] = 64 << 10};

typedef struct shm_set {
  bool local;        // the group (or every permute pair) lies on this node
  // The group spans nodes, each holding the same number (>= 2) of its
  // members: all-reduce (and, on the direct path, reduce-scatter and
  // all-gather) go hierarchically (shm_hier.c); `group` is then this node's
  // part of it and `h.cross` joins the members at the same position on
  // every node.
  bool hier;
  hl_shm_hier_t h;
  int *members;      // node ranks in group order (owned); identity for permute
  hl_shm_group_t group;
} shm_set_t;

// A queued -start: what to run, and its outcome.
typedef struct shm_job {
  op_kind_t kind;
  bool scatter;                 // OP_REDUCE: reduce-scatter
  hl_shm_group_t *group;
  const void *send;
  void *recv;
  int64_t count;                // elements (reductions) or bytes
  int src, dst;                 // OP_PERMUTE, node ranks
  hl_comm_reducer_t reducer;    // a copy: the caller's may not outlive the start
  hl_shm_reduction_t red;
  hl_status_t status;
  bool done;                    // under the layer's mutex
  struct shm_job *next;         // the queue
  struct shm_job *next_pending; // every job handed out and not yet waited for
  const hl_instruction_t *inst; // queued jobs: the -start (for the progress hook)
} shm_job_t;

typedef struct hl_shm_layer {
  hl_comm_vtable_t vtable;
  const hl_comm_vtable_t *base;
  hl_collectives_mode_t mode;
  const size_t *auto_min_bytes;  // the built-in thresholds of the MPI in use
  hl_shm_node_t *node;  // NULL until prepared, or when nothing can use it
  shm_set_t *sets;
  int set_count;
  int64_t calls;        // taken by shared memory (hl_shm_layer_call_count)
  // --collectives-tuning: the file, and its table once prepared (every rank
  // has rank 0's).
  char *tuning_path;
  hl_shm_tuning_t *tuning;
  // --collectives-tune: measure the table in the first prepare instead
  // (shm_autotune.h); rank 0 writes it to tune_out (when given), every
  // rank prints it with tune_report (--report-bindings).
  bool tune, tune_report;
  char *tune_out;
  // The progress thread and its queue (jobs run in order; `running` counts
  // queued + running jobs). `pending` lists the jobs handed out as requests
  // until their wait.
  pthread_t thread;
  bool thread_started, stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  shm_job_t *queue_head, *queue_tail, *pending;
  int running;
} shm_layer_t;

hl_status_t hl_collectives_mode_parse(const char *text, hl_collectives_mode_t *out) {
  if (!strcmp(text, "auto")) *out = HL_COLLECTIVES_AUTO;
  else if (!strcmp(text, "mpi")) *out = HL_COLLECTIVES_MPI;
  else if (!strcmp(text, "shm")) *out = HL_COLLECTIVES_SHM;
  else return HL_INVALID("--collectives needs mpi, shm or auto, got '%s'", text);
  return NULL;
}

const char *hl_collectives_mode_name(hl_collectives_mode_t mode) {
  return mode == HL_COLLECTIVES_MPI ? "mpi" : mode == HL_COLLECTIVES_SHM ? "shm" : "auto";
}

static shm_layer_t *layer_of(hl_comm_t *comm) { return ((hl_mpi_comm_t *)comm)->shm; }

static void run_job(shm_job_t *j) {
  hl_shm_group_t *g = j->group;
  // Single copy between the processes' buffers (shm_direct.c) from the
  // node's size on; the size is alike on every member, so all take one path.
  size_t bytes = j->kind == OP_REDUCE ? (size_t)j->count * hl_dtype_size(j->red.dtype)
                                      : (size_t)j->count;
  if (g->node->direct && bytes >= g->node->direct_min_bytes) {
    switch (j->kind) {
      case OP_REDUCE:
        j->status = j->scatter
                        ? hl_shm_direct_reduce_scatter(g, &j->red, j->send, j->recv, j->count)
                        : hl_shm_direct_all_reduce(g, &j->red, j->send, j->recv, j->count);
        break;
      case OP_GATHER:
        j->status = hl_shm_direct_all_gather(g, j->send, j->recv, (size_t)j->count);
        break;
      case OP_TO_ALL:
        j->status = hl_shm_direct_all_to_all(g, j->send, j->recv, (size_t)j->count);
        break;
      case OP_BROADCAST:
        j->status = hl_shm_direct_broadcast(g, j->send, j->recv, (size_t)j->count);
        break;
      default:
        j->status = hl_shm_direct_permute(g, j->src, j->dst, j->send, j->recv,
                                          (size_t)j->count);
        break;
    }
    return;
  }
  switch (j->kind) {
    case OP_REDUCE:
      j->status = j->scatter ? hl_shm_reduce_scatter(g, &j->red, j->send, j->recv, j->count)
                             : hl_shm_all_reduce(g, &j->red, j->send, j->recv, j->count);
      break;
    case OP_GATHER: hl_shm_all_gather(g, j->send, j->recv, (size_t)j->count); break;
    case OP_TO_ALL: hl_shm_all_to_all(g, j->send, j->recv, (size_t)j->count); break;
    case OP_BROADCAST: hl_shm_broadcast(g, j->send, j->recv, (size_t)j->count); break;
    default: hl_shm_permute(g, j->src, j->dst, j->send, j->recv, (size_t)j->count); break;
  }
}

static void *progress_main(void *arg) {
  shm_layer_t *l = arg;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (!l->queue_head && !l->stopping) pthread_cond_wait(&l->cv, &l->mu);
    if (!l->queue_head) break;
    shm_job_t *j = l->queue_head;
    l->queue_head = j->next;
    if (!l->queue_head) l->queue_tail = NULL;
    pthread_mutex_unlock(&l->mu);
    int64_t hook_ns = hl_progress_hook_now_ns();  // 0: no --trace
    run_job(j);
    if (hook_ns)
      hl_progress_hook_report(j->inst, j->kind == OP_REDUCE ? j->count * (int64_t)hl_dtype_size(
                                  j->red.dtype) : j->count, hook_ns, hl_progress_hook_now_ns(),
                              0, true);
    pthread_mutex_lock(&l->mu);
    j->done = true;
    l->running--;
    pthread_cond_broadcast(&l->cv);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

// Blocks until the progress thread has run everything queued.
static void drain(shm_layer_t *l) {
  if (!l->thread_started) return;
  pthread_mutex_lock(&l->mu);
  while (l->running > 0) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
}

static void stop_thread(shm_layer_t *l) {
  if (!l->thread_started) return;
  pthread_mutex_lock(&l->mu);
  l->stopping = true;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  pthread_join(l->thread, NULL);
  l->thread_started = l->stopping = false;
  // Jobs never waited for (an abandoned execution): their status only.
  while (l->pending) {
    shm_job_t *j = l->pending;
    l->pending = j->next_pending;
    hl_status_free(j->status);
    hl_free(j);
  }
}

static void release_sets(shm_layer_t *l) {
  stop_thread(l);
  for (int i = 0; i < l->set_count; i++) {
    hl_free(l->sets[i].members);
    hl_free(l->sets[i].h.cross_members);
    hl_free(l->sets[i].h.node_pos);
    if (l->sets[i].h.cross != MPI_COMM_NULL) MPI_Comm_free(&l->sets[i].h.cross);
  }
  hl_free(l->sets);
  l->sets = NULL;
  l->set_count = 0;
  hl_shm_node_destroy(l->node);  // collective over the node
  l->node = NULL;
}

// Whether group `g` of a set spans at least 2 nodes with the same number
// (>= 2) of its members on each; *out_per_node is that number.
static bool spans_nodes_evenly(const hl_shm_node_t *n, const hl_process_groups_t *gs, int g,
                               int *out_per_node) {
  const int *ranks = gs->ranks + gs->offsets[g];
  int size = hl_process_groups_size(gs, g), nodes = 0, per = -1;
  for (int k = 0; k < size; k++) {
    int node = n->node_of[ranks[k]], here = 0;
    bool first = true;
    for (int j = 0; j < size; j++) {
      if (n->node_of[ranks[j]] != node) continue;
      if (j < k) first = false;
      here++;
    }
    if (!first) continue;
    nodes++;
    if (per >= 0 && here != per) return false;
    per = here;
  }
  *out_per_node = per;
  return nodes >= 2 && per >= 2;
}

// Sets whose groups span nodes evenly: this node's part of the group as the
// shared-memory group, and a communicator across the nodes per position.
// Collective over the job (every rank splits for every such set, in order).
static hl_status_t describe_hier(shm_layer_t *l, hl_mpi_comm_t *m, int i) {
  hl_shm_node_t *n = l->node;
  const hl_mpi_group_set_t *s = &m->coll.sets[i];
  const hl_process_groups_t *g = &s->groups;
  bool any = false;
  int per = 0;
  for (int k = 0; k < g->group_count && !any; k++) any = spans_nodes_evenly(n, g, k, &per);
  if (!any) return NULL;
  shm_set_t *t = &l->sets[i];
  int color = MPI_UNDEFINED, key = 0;
  if (s->my_group >= 0 && spans_nodes_evenly(n, g, s->my_group, &per)) {
    const int *ranks = g->ranks + g->offsets[s->my_group];
    t->members = hl_malloc((size_t)per * sizeof(int));
    if (!t->members) return HL_OOM();
    int mine = n->node_of[m->base.rank], li = 0;
    for (int k = 0; k < s->my_size; k++) {
      if (n->node_of[ranks[k]] != mine) continue;
      if (k == s->my_index) t->group.me = li;
      t->members[li++] = n->node_rank_of[ranks[k]];
    }
    t->group.size = per;
    t->group.members = t->members;
    color = s->my_group * m->base.size + t->group.me;
    key = s->my_index;
  }
  int err = MPI_Comm_split(m->comm, color, key, &t->h.cross);
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "creating a cross-node communicator");
  t->hier = t->h.cross != MPI_COMM_NULL;
  if (!t->hier) return NULL;
  MPI_Comm_set_errhandler(t->h.cross, MPI_ERRORS_RETURN);
  // Every member's position in its node, and the group indices of the
  // cross communicator's ranks (the members at this one's position, in
  // group order: the split's key).
  const int *ranks = g->ranks + g->offsets[s->my_group];
  t->h.size = s->my_size;
  t->h.index = s->my_index;
  t->h.node_pos = hl_malloc((size_t)s->my_size * sizeof(int));
  t->h.cross_members = hl_malloc((size_t)s->my_size * sizeof(int));
  if (!t->h.node_pos || !t->h.cross_members) return HL_OOM();
  for (int i = 0; i < s->my_size; i++) {
    int pos = 0;
    for (int j = 0; j < i; j++) pos += n->node_of[ranks[j]] == n->node_of[ranks[i]];
    t->h.node_pos[i] = pos;
    if (pos == t->group.me) t->h.cross_members[t->h.cross_size++] = i;
  }
  return NULL;
}

// Which sets this rank can run on the node, and their members' node ranks.
static hl_status_t describe_sets(shm_layer_t *l, hl_mpi_comm_t *m) {
  hl_mpi_coll_t *coll = &m->coll;
  hl_shm_node_t *n = l->node;
  l->sets = hl_calloc((size_t)(coll->set_count ? coll->set_count : 1), sizeof(*l->sets));
  if (!l->sets) return HL_OOM();
  l->set_count = coll->set_count;
  for (int i = 0; i < coll->set_count; i++) l->sets[i].h.cross = MPI_COMM_NULL;
  for (int i = 0; i < coll->set_count; i++) {
    const hl_mpi_group_set_t *s = &coll->sets[i];
    const hl_process_groups_t *g = &s->groups;
    shm_set_t *t = &l->sets[i];
    t->group.node = n;
    t->group.set = i;
    if (g->is_permute) {
      bool local = n->size >= 2;
      for (int k = 0; k < g->group_count && local; k++)
        local = n->node_of[g->ranks[g->offsets[k]]] == n->node_of[g->ranks[g->offsets[k] + 1]];
      t->local = local;
      t->group.members = n->identity;
      t->group.size = n->size;
      t->group.me = n->rank;
      continue;
    }
    HL_RETURN_IF_ERROR(describe_hier(l, m, i));
    if (t->hier || s->my_group < 0 || s->my_size < 2) continue;
    t->members = hl_malloc((size_t)s->my_size * sizeof(int));
    if (!t->members) return HL_OOM();
    bool local = true;
    const int *ranks = g->ranks + g->offsets[s->my_group];
    for (int k = 0; k < s->my_size; k++) {
      t->members[k] = n->node_rank_of[ranks[k]];
      local = local && t->members[k] >= 0;
    }
    t->local = local;
    t->group.members = t->members;
    t->group.size = s->my_size;
    t->group.me = s->my_index;
  }
  return NULL;
}

// --collectives-tune: the table from a measurement on this job's nodes;
// every rank gets the same one (shm_autotune.c agrees on the times).
static hl_status_t measure_tuning(shm_layer_t *l, hl_mpi_comm_t *m) {
  hl_shm_tuning_t *t = hl_malloc(sizeof(*t));
  if (!t) return HL_OOM();
  hl_shm_autotune_t a;
  hl_status_t st = hl_shm_autotune_run(m->comm, l->node, m->coll.set_count, &a, t);
  if (st) {
    hl_free(t);
    return st;
  }
  l->tuning = t;
  if (!l->tune_report && !(l->tune_out && m->base.rank == 0)) return NULL;
  hl_strbuf_t text;
  hl_strbuf_init(&text);
  if (l->tune_report) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "collectives-tune rank %d: ", m->base.rank);
    hl_shm_autotune_format(&a, t, prefix, &text);
    if (!text.failed) fputs(hl_strbuf_cstr(&text), stderr);  // one write: unbuffered
    fflush(stderr);
    hl_strbuf_deinit(&text);
    hl_strbuf_init(&text);
  }
  if (l->tune_out && m->base.rank == 0) {
    hl_strbuf_appendf(&text, "# hlo-launch --collectives-tuning file, measured by "
                             "--collectives-tune on %d ranks\n", m->base.size);
    hl_shm_autotune_format(&a, t, "", &text);
    st = text.failed ? HL_OOM() : hl_shm_tuning_write_new(l->tune_out, hl_strbuf_cstr(&text));
  }
  hl_strbuf_deinit(&text);
  return st;
}

static hl_status_t layer_prepare(hl_comm_t *comm, const hl_module_t *module,
                                 int64_t num_replicas, int64_t num_partitions) {
  shm_layer_t *l = layer_of(comm);
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)comm;
  release_sets(l);
  HL_RETURN_IF_ERROR(l->base->prepare(comm, module, num_replicas, num_partitions));
  // Differing programs keep the backend's per-call agreement: every rank
  // knows this alike (prepare agreed on it), so all skip the node setup.
  if (m->coll.check_calls) {
    if (l->tune && l->tune_out)
      return HL_INVALID("--collectives-tuning-out %s: the ranks run different programs, so the "
                        "shared-memory layer is off and --collectives-tune measured nothing",
                        l->tune_out);
    return NULL;
  }
  if (l->tuning_path && !l->tuning) {
    l->tuning = hl_malloc(sizeof(*l->tuning));
    if (!l->tuning) return HL_OOM();
    hl_status_t st = hl_shm_tuning_share(m->comm, l->tuning_path, l->tuning);
    if (st) {
      hl_free(l->tuning);
      l->tuning = NULL;
      return st;
    }
  }
  if (l->tune && !l->tuning) {
    // Measured once, on a counter row of its own after the sets' rows.
    HL_RETURN_IF_ERROR(hl_shm_node_create(m->comm, m->coll.set_count + 1, &l->node));
    HL_RETURN_IF_ERROR(measure_tuning(l, m));
  } else {
    HL_RETURN_IF_ERROR(hl_shm_node_create(m->comm, m->coll.set_count, &l->node));
  }
  HL_RETURN_IF_ERROR(describe_sets(l, m));
  if (pthread_create(&l->thread, NULL, progress_main, l) != 0)
    return HL_INTERNAL_ERROR("cannot start the shared-memory progress thread");
  l->thread_started = true;
  return NULL;
}

static void layer_destroy(hl_comm_t *comm) {
  shm_layer_t *l = layer_of(comm);
  release_sets(l);
  comm->vtable = l->base;
  ((hl_mpi_comm_t *)comm)->shm = NULL;
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  hl_free(l->tuning_path);
  hl_free(l->tuning);
  hl_free(l->tune_out);
  hl_free(l);
  comm->vtable->destroy(comm);
}

// The set to run `inst` on through shared memory, or NULL for the backend.
// `bytes` is per member, times the group size when `whole` (the larger
// buffer holds a block per member).
static shm_set_t *choose(hl_comm_t *comm, const hl_instruction_t *inst, op_kind_t kind,
                         hl_shm_tune_op_t tune, size_t bytes, bool whole) {
  shm_layer_t *l = layer_of(comm);
  if (!l->node) return NULL;
  int i = hl_mpi_set_index_of(comm, inst);
  if (i < 0 || i >= l->set_count) return NULL;
  // Only reductions (reduce_common) and, on the direct path, all-gather
  // take the hierarchical path.
  bool hier_kind = kind == OP_REDUCE || (kind == OP_GATHER && l->node->direct);
  if (!l->sets[i].local && !(hier_kind && l->sets[i].hier)) return NULL;
  int size = ((hl_mpi_comm_t *)comm)->coll.sets[i].my_size;
  if (whole) bytes *= (size_t)size;
  if (l->mode == HL_COLLECTIVES_AUTO) {
    // The tuning table's entry for the group's size (permute: the node's
    // ranks), else the built-in threshold; alike on every member.
    int64_t min = (int64_t)l->auto_min_bytes[kind];
    int tuned_size = kind == OP_PERMUTE ? l->node->size : size;
    hl_shm_tuning_lookup(l->tuning, tune, tuned_size, &min);
    if (min < 0 || bytes < (uint64_t)min) return NULL;
  }
  l->calls++;
  return &l->sets[i];
}

// Runs job `j` (on the caller's stack): queued to the progress thread when a
// request is wanted (*out_request is then the job, completed by layer_wait),
// otherwise here, after everything queued before it. A reduction through
// the executor's reducer always runs here.
static hl_status_t submit(shm_layer_t *l, shm_job_t *j, const hl_instruction_t *inst,
                          hl_comm_request_t **out_request) {
  bool here = !out_request || !l->thread_started ||
              (j->kind == OP_REDUCE && !j->red.native);
  if (here) {
    drain(l);
    run_job(j);
    if (j->status) return hl_status_annotate(j->status, "%s", hl_instruction_location(inst));
    return out_request ? hl_mpi_request_new(out_request) : NULL;
  }
  shm_job_t *q = hl_malloc(sizeof(*q));
  if (!q) return HL_OOM();
  *q = *j;
  q->inst = inst;
  q->red.reducer = &q->reducer;
  q->next = NULL;
  pthread_mutex_lock(&l->mu);
  if (l->queue_tail) l->queue_tail->next = q;
  else l->queue_head = q;
  l->queue_tail = q;
  q->next_pending = l->pending;
  l->pending = q;
  l->running++;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  *out_request = (hl_comm_request_t *)q;
  return NULL;
}

// The layer's requests are its jobs (found on its lists); anything else is
// the backend's.
static hl_status_t layer_wait(hl_comm_t *comm, hl_comm_request_t *request) {
  shm_layer_t *l = layer_of(comm);
  shm_job_t *j = (shm_job_t *)request;
  bool mine = false;
  if (l->thread_started && request) {
    pthread_mutex_lock(&l->mu);
    for (shm_job_t **p = &l->pending; *p; p = &(*p)->next_pending)
      if (*p == j) {
        *p = j->next_pending;
        mine = true;
        break;
      }
    while (mine && !j->done) pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
  }
  if (!mine) return l->base->wait(comm, request);
  hl_status_t st = j->status;
  if (st) st = hl_status_annotate(st, "a shared-memory collective");
  hl_free(j);
  return st;
}

static hl_status_t reduce_common(hl_comm_t *comm, const hl_instruction_t *inst,
                                 hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                 const hl_comm_reducer_t *reducer, bool scatter,
                                 hl_comm_request_t **out_request) {
  shm_layer_t *l = layer_of(comm);
  size_t es = hl_dtype_size(dtype);
  size_t bytes = (size_t)(count > 0 ? count : 0) * es;
  shm_set_t *t = choose(comm, inst, OP_REDUCE,
                        scatter ? HL_SHM_TUNE_REDUCE_SCATTER : HL_SHM_TUNE_ALL_REDUCE, bytes,
                        scatter);
  // Reduce-scatter across nodes: the direct path's, blocks an int counts.
  bool hier_ok = !scatter || (l->node->direct && count <= INT_MAX);
  if (t && t->hier && hier_ok && count >= 0) {
    hl_shm_reduction_t red;
    hl_status_t st = hl_shm_reduction_init(dtype, reducer, &red);
    // The executor's reducers keep the MPI path: across nodes the order
    // would not be the group's.
    if (!st && red.native) {
      if (out_request) *out_request = NULL;
      drain(l);
      hl_mpi_coll_t *coll = &((hl_mpi_comm_t *)comm)->coll;
      st = scatter ? hl_shm_hier_reduce_scatter(&t->group, &t->h, coll, dtype, reducer, &red,
                                                send, recv, count)
                   : hl_shm_hier_all_reduce(&t->group, t->h.cross, coll, dtype, reducer, &red,
                                            send, recv, count);
      if (st) return hl_status_annotate(st, "%s", hl_instruction_location(inst));
      return out_request ? hl_mpi_request_new(out_request) : NULL;
    }
    hl_status_free(st);
    t = NULL;
    l->calls--;
  }
  if (t && t->hier) {  // other collectives across nodes: the backend
    t = NULL;
    l->calls--;
  }
  if (!t || count < 0)
    return scatter ? l->base->reduce_scatter(comm, inst, dtype, send, recv, count, reducer,
                                             out_request)
                   : l->base->all_reduce(comm, inst, dtype, send, recv, count, reducer,
                                         out_request);
  if (out_request) *out_request = NULL;
  shm_job_t j = {.kind = OP_REDUCE, .scatter = scatter, .group = &t->group, .send = send,
                 .recv = recv, .count = count, .reducer = *reducer};
  hl_status_t st = hl_shm_reduction_init(dtype, &j.reducer, &j.red);
  if (st) return hl_status_annotate(st, "%s", hl_instruction_location(inst));
  return submit(l, &j, inst, out_request);
}

static hl_status_t layer_all_reduce(hl_comm_t *comm, const hl_instruction_t *inst,
                                    hl_dtype_t dtype, const void *send, void *recv,
                                    int64_t count, const hl_comm_reducer_t *reducer,
                                    hl_comm_request_t **out_request) {
  return reduce_common(comm, inst, dtype, send, recv, count, reducer, false, out_request);
}

static hl_status_t layer_reduce_scatter(hl_comm_t *comm, const hl_instruction_t *inst,
                                        hl_dtype_t dtype, const void *send, void *recv,
                                        int64_t count, const hl_comm_reducer_t *reducer,
                                        hl_comm_request_t **out_request) {
  return reduce_common(comm, inst, dtype, send, recv, count, reducer, true, out_request);
}

static hl_status_t layer_all_gather(hl_comm_t *comm, const hl_instruction_t *inst,
                                    const void *send, void *recv, size_t bytes,
                                    hl_comm_request_t **out_request) {
  shm_layer_t *l = layer_of(comm);
  shm_set_t *t = choose(comm, inst, OP_GATHER, HL_SHM_TUNE_ALL_GATHER, bytes, true);
  if (t && t->hier && bytes > INT_MAX) {  // one MPI block per member
    t = NULL;
    l->calls--;
  }
  if (!t) return l->base->all_gather(comm, inst, send, recv, bytes, out_request);
  if (out_request) *out_request = NULL;
  if (t->hier) {  // across nodes (the direct path: choose)
    drain(l);
    hl_status_t st = hl_shm_hier_all_gather(&t->group, &t->h, send, recv, bytes);
    if (st) return hl_status_annotate(st, "%s", hl_instruction_location(inst));
    return out_request ? hl_mpi_request_new(out_request) : NULL;
  }
  shm_job_t j = {.kind = OP_GATHER, .group = &t->group, .send = send, .recv = recv,
                 .count = (int64_t)bytes};
  return submit(layer_of(comm), &j, inst, out_request);
}

static hl_status_t layer_all_to_all(hl_comm_t *comm, const hl_instruction_t *inst,
                                    const void *send, void *recv, size_t bytes,
                                    hl_comm_request_t **out_request) {
  shm_set_t *t = choose(comm, inst, OP_TO_ALL, HL_SHM_TUNE_ALL_TO_ALL, bytes, true);
  if (!t) return layer_of(comm)->base->all_to_all(comm, inst, send, recv, bytes, out_request);
  if (out_request) *out_request = NULL;
  shm_job_t j = {.kind = OP_TO_ALL, .group = &t->group, .send = send, .recv = recv,
                 .count = (int64_t)bytes};
  return submit(layer_of(comm), &j, inst, out_request);
}

static hl_status_t layer_broadcast(hl_comm_t *comm, const hl_instruction_t *inst,
                                   const void *send, void *recv, size_t bytes,
                                   hl_comm_request_t **out_request) {
  shm_set_t *t = choose(comm, inst, OP_BROADCAST, HL_SHM_TUNE_BROADCAST, bytes, false);
  if (!t)
    return layer_of(comm)->base->collective_broadcast(comm, inst, send, recv, bytes,
                                                      out_request);
  if (out_request) *out_request = NULL;
  shm_job_t j = {.kind = OP_BROADCAST, .group = &t->group, .send = send, .recv = recv,
                 .count = (int64_t)bytes};
  return submit(layer_of(comm), &j, inst, out_request);
}

// Pairs [slot * gc / slots, (slot + 1) * gc / slots) of the set: this
// rank's source and target (job ranks, -1: none).
static void permute_peers(const hl_process_groups_t *g, int slot, int slots, int me,
                          int *out_src, int *out_dst) {
  int per = g->group_count / slots;
  *out_src = *out_dst = -1;
  for (int k = slot * per; k < (slot + 1) * per; k++) {
    const int *p = g->ranks + g->offsets[k];
    if (p[1] == me) *out_src = p[0];
    if (p[0] == me) *out_dst = p[1];
  }
}

static hl_status_t permute_common(hl_comm_t *comm, const hl_instruction_t *inst, int slot,
                                  int slots, const void *send, void *recv, size_t bytes,
                                  bool zero_fill, int *out_source,
                                  hl_comm_request_t **out_request) {
  shm_layer_t *l = layer_of(comm);
  shm_set_t *t = choose(comm, inst, OP_PERMUTE, HL_SHM_TUNE_PERMUTE, bytes, false);
  const hl_mpi_group_set_t *s =
      t ? &((hl_mpi_comm_t *)comm)->coll.sets[t->group.set] : NULL;
  if (!t || slots < 1 || slot < 0 || slot >= slots || s->groups.group_count % slots != 0)
    return zero_fill ? l->base->collective_permute(comm, inst, send, recv, bytes, out_request)
                     : l->base->collective_permute_slot(comm, inst, slot, slots, send, recv,
                                                        bytes, out_source, out_request);
  if (out_request) *out_request = NULL;
  int src, dst;
  permute_peers(&s->groups, slot, slots, comm->rank, &src, &dst);
  if (out_source) *out_source = src;
  if (src < 0 && zero_fill) memset(recv, 0, bytes);
  if (src == comm->rank && dst == comm->rank) {
    if (recv != send) memmove(recv, send, bytes);
    src = dst = -1;  // nothing to exchange, but the call still counts
  }
  hl_shm_node_t *n = l->node;
  shm_job_t j = {.kind = OP_PERMUTE, .group = &t->group, .send = send, .recv = recv,
                 .count = (int64_t)bytes, .src = src >= 0 ? n->node_rank_of[src] : -1,
                 .dst = dst >= 0 ? n->node_rank_of[dst] : -1};
  return submit(l, &j, inst, out_request);
}

static hl_status_t layer_permute(hl_comm_t *comm, const hl_instruction_t *inst,
                                 const void *send, void *recv, size_t bytes,
                                 hl_comm_request_t **out_request) {
  return permute_common(comm, inst, 0, 1, send, recv, bytes, true, NULL, out_request);
}

static hl_status_t layer_permute_slot(hl_comm_t *comm, const hl_instruction_t *inst, int slot,
                                      int slots, const void *send, void *recv, size_t bytes,
                                      int *out_source, hl_comm_request_t **out_request) {
  return permute_common(comm, inst, slot, slots, send, recv, bytes, false, out_source,
                        out_request);
}

int64_t hl_shm_layer_call_count(hl_comm_t *comm) {
  shm_layer_t *l = comm ? layer_of(comm) : NULL;
  return l ? l->calls : 0;
}

hl_status_t hl_shm_layer_set_tuning_file(hl_comm_t *comm, const char *path) {
  shm_layer_t *l = comm ? layer_of(comm) : NULL;
  if (!l) return NULL;  // --collectives=mpi: no layer, nothing to tune
  hl_free(l->tuning_path);
  l->tuning_path = hl_strdup(path);
  return l->tuning_path ? NULL : HL_OOM();
}

hl_status_t hl_shm_layer_set_autotune(hl_comm_t *comm, const char *out_path, bool report) {
  shm_layer_t *l = comm ? layer_of(comm) : NULL;
  if (!l) return NULL;  // --collectives=mpi: no layer (options refuse the pair)
  l->tune = true;
  l->tune_report = report;
  hl_free(l->tune_out);
  l->tune_out = out_path ? hl_strdup(out_path) : NULL;
  return !out_path || l->tune_out ? NULL : HL_OOM();
}

bool hl_shm_layer_direct(hl_comm_t *comm) {
  shm_layer_t *l = comm ? layer_of(comm) : NULL;
  return l && l->node && l->node->direct;
}

hl_status_t hl_shm_layer_install(hl_comm_t *comm, hl_collectives_mode_t mode) {
  if (mode == HL_COLLECTIVES_MPI) return NULL;
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)comm;
  if (m->shm) return HL_INTERNAL_ERROR("the shared-memory layer is installed already");
  shm_layer_t *l = hl_calloc(1, sizeof(*l));
  if (!l) return HL_OOM();
  l->mode = mode;
  l->auto_min_bytes = hl_mpi_library_family() == HL_MPI_FAMILY_MPICH ? kAutoMinBytesMpich
                                                                      : kAutoMinBytesOpenMpi;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  l->base = comm->vtable;
  l->vtable = *comm->vtable;
  l->vtable.destroy = layer_destroy;
  l->vtable.prepare = layer_prepare;
  l->vtable.wait = layer_wait;
  l->vtable.all_reduce = layer_all_reduce;
  l->vtable.reduce_scatter = layer_reduce_scatter;
  l->vtable.all_gather = layer_all_gather;
  l->vtable.all_to_all = layer_all_to_all;
  l->vtable.collective_permute = layer_permute;
  l->vtable.collective_permute_slot = layer_permute_slot;
  l->vtable.collective_broadcast = layer_broadcast;
  m->shm = l;
  comm->vtable = &l->vtable;
  return NULL;
}
