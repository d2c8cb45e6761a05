// The shared-memory layer: interposes on the MPI backend's vtable (as the
// channel layer does, channels/mpi_channels.c) and runs a collective through
// the node's shared window (shm_ops.c) when
//   - its group lies on this node (every member; permute: every pair of the
//     instruction's set on one node), has at least 2 members, and
//   - the programs are the same on every rank (the backend's per-call
//     agreement for differing programs stays on MPI), and
//   - the mode says so: shm always; auto from the size (kAutoMinBytes,
//     measured with bench/run_collectives.sh, collectives/shm/README.md).
// Everything else goes to the backend unchanged. The decision depends only
// on what every member of the group knows alike, so members never split
// between the two paths.
//
// The -start forms complete inside the start when they take this path: the
// transfer is a few memory copies by the group's own ranks, and a rank's
// peers could not proceed without it anyway. The request handed back is
// already complete (the backend's wait frees it).
#include "collectives/shm/shm_layer.h"

#include <string.h>

#include "collectives/mpi_internal.h"
#include "collectives/shm/shm_internal.h"
#include "collectives/shm/shm_node.h"
#include "runtime/base/alloc.h"

typedef enum { OP_REDUCE, OP_GATHER, OP_TO_ALL, OP_PERMUTE, OP_BROADCAST, OP_KINDS } op_kind_t;

// Below these sizes (bytes per member: the larger of operand and result)
// MPI's own small-message paths are as fast or faster.
static const size_t kAutoMinBytes[OP_KINDS] = {
    [OP_REDUCE] = 64 << 10, [OP_GATHER] = 64 << 10, [OP_TO_ALL] = 64 << 10,
    [OP_PERMUTE] = 64 << 10, [OP_BROADCAST] = 64 << 10};

typedef struct shm_set {
  bool local;        // the group (or every permute pair) lies on this node
  int *members;      // node ranks in group order (owned); identity for permute
  hl_shm_group_t group;
} shm_set_t;

typedef struct hl_shm_layer {
  hl_comm_vtable_t vtable;
  const hl_comm_vtable_t *base;
  hl_collectives_mode_t mode;
  hl_shm_node_t *node;  // NULL until prepared, or when nothing can use it
  shm_set_t *sets;
  int set_count;
  int64_t calls;        // taken by shared memory (hl_shm_layer_call_count)
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

static void release_sets(shm_layer_t *l) {
  for (int i = 0; i < l->set_count; i++) hl_free(l->sets[i].members);
  hl_free(l->sets);
  l->sets = NULL;
  l->set_count = 0;
  hl_shm_node_destroy(l->node);  // collective over the node
  l->node = NULL;
}

// Which sets this rank can run on the node, and their members' node ranks.
static hl_status_t describe_sets(shm_layer_t *l, hl_mpi_coll_t *coll) {
  hl_shm_node_t *n = l->node;
  l->sets = hl_calloc((size_t)(coll->set_count ? coll->set_count : 1), sizeof(*l->sets));
  if (!l->sets) return HL_OOM();
  l->set_count = coll->set_count;
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
    if (s->my_group < 0 || s->my_size < 2) continue;
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

static hl_status_t layer_prepare(hl_comm_t *comm, const hl_module_t *module,
                                 int64_t num_replicas, int64_t num_partitions) {
  shm_layer_t *l = layer_of(comm);
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)comm;
  release_sets(l);
  HL_RETURN_IF_ERROR(l->base->prepare(comm, module, num_replicas, num_partitions));
  // Differing programs keep the backend's per-call agreement: every rank
  // knows this alike (prepare agreed on it), so all skip the node setup.
  if (m->coll.check_calls) return NULL;
  HL_RETURN_IF_ERROR(hl_shm_node_create(m->comm, m->coll.set_count, &l->node));
  return describe_sets(l, &m->coll);
}

static void layer_destroy(hl_comm_t *comm) {
  shm_layer_t *l = layer_of(comm);
  release_sets(l);
  comm->vtable = l->base;
  ((hl_mpi_comm_t *)comm)->shm = NULL;
  hl_free(l);
  comm->vtable->destroy(comm);
}

// The set to run `inst` on through shared memory, or NULL for the backend.
static shm_set_t *choose(hl_comm_t *comm, const hl_instruction_t *inst, op_kind_t kind,
                         size_t bytes) {
  shm_layer_t *l = layer_of(comm);
  if (!l->node) return NULL;
  int i = hl_mpi_set_index_of(comm, inst);
  if (i < 0 || i >= l->set_count || !l->sets[i].local) return NULL;
  if (l->mode == HL_COLLECTIVES_AUTO && bytes < kAutoMinBytes[kind]) return NULL;
  l->calls++;
  return &l->sets[i];
}

// A blocking call that completed: the request, if one is wanted, is an
// already complete one of the backend.
static hl_status_t finish(hl_status_t st, const hl_instruction_t *inst,
                          hl_comm_request_t **out_request) {
  if (st) return hl_status_annotate(st, "%s", hl_instruction_location(inst));
  return out_request ? hl_mpi_request_new(out_request) : NULL;
}

static hl_status_t reduce_common(hl_comm_t *comm, const hl_instruction_t *inst,
                                 hl_dtype_t dtype, const void *send, void *recv, int64_t count,
                                 const hl_comm_reducer_t *reducer, bool scatter,
                                 hl_comm_request_t **out_request) {
  shm_layer_t *l = layer_of(comm);
  size_t es = hl_dtype_size(dtype);
  size_t bytes = (size_t)(count > 0 ? count : 0) * es;
  shm_set_t *t = choose(comm, inst, OP_REDUCE, bytes);
  if (!t || count < 0)
    return scatter ? l->base->reduce_scatter(comm, inst, dtype, send, recv, count, reducer,
                                             out_request)
                   : l->base->all_reduce(comm, inst, dtype, send, recv, count, reducer,
                                         out_request);
  if (out_request) *out_request = NULL;
  hl_shm_reduction_t red;
  hl_status_t st = hl_shm_reduction_init(dtype, reducer, &red);
  if (!st)
    st = scatter ? hl_shm_reduce_scatter(&t->group, &red, send, recv, count)
                 : hl_shm_all_reduce(&t->group, &red, send, recv, count);
  return finish(st, inst, out_request);
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
  shm_set_t *t = choose(comm, inst, OP_GATHER, bytes);
  if (!t) return layer_of(comm)->base->all_gather(comm, inst, send, recv, bytes, out_request);
  if (out_request) *out_request = NULL;
  hl_shm_all_gather(&t->group, send, recv, bytes);
  return finish(NULL, inst, out_request);
}

static hl_status_t layer_all_to_all(hl_comm_t *comm, const hl_instruction_t *inst,
                                    const void *send, void *recv, size_t bytes,
                                    hl_comm_request_t **out_request) {
  shm_set_t *t = choose(comm, inst, OP_TO_ALL, bytes);
  if (!t) return layer_of(comm)->base->all_to_all(comm, inst, send, recv, bytes, out_request);
  if (out_request) *out_request = NULL;
  hl_shm_all_to_all(&t->group, send, recv, bytes);
  return finish(NULL, inst, out_request);
}

static hl_status_t layer_broadcast(hl_comm_t *comm, const hl_instruction_t *inst,
                                   const void *send, void *recv, size_t bytes,
                                   hl_comm_request_t **out_request) {
  shm_set_t *t = choose(comm, inst, OP_BROADCAST, bytes);
  if (!t)
    return layer_of(comm)->base->collective_broadcast(comm, inst, send, recv, bytes,
                                                      out_request);
  if (out_request) *out_request = NULL;
  hl_shm_broadcast(&t->group, send, recv, bytes);
  return finish(NULL, inst, out_request);
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
  shm_set_t *t = choose(comm, inst, OP_PERMUTE, bytes);
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
  hl_shm_permute(&t->group, src >= 0 ? n->node_rank_of[src] : -1,
                 dst >= 0 ? n->node_rank_of[dst] : -1, send, recv, bytes);
  return finish(NULL, inst, out_request);
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

hl_status_t hl_shm_layer_install(hl_comm_t *comm, hl_collectives_mode_t mode) {
  if (mode == HL_COLLECTIVES_MPI) return NULL;
  hl_mpi_comm_t *m = (hl_mpi_comm_t *)comm;
  if (m->shm) return HL_INTERNAL_ERROR("the shared-memory layer is installed already");
  shm_layer_t *l = hl_calloc(1, sizeof(*l));
  if (!l) return HL_OOM();
  l->mode = mode;
  l->base = comm->vtable;
  l->vtable = *comm->vtable;
  l->vtable.destroy = layer_destroy;
  l->vtable.prepare = layer_prepare;
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
