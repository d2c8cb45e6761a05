// Hierarchical all-reduce for a group that spans nodes with the same number
// L >= 2 of its members on each:
//   1. within each node, through shared memory: every member gets the
//      node's reduction (hl_shm_all_reduce);
//   2. across nodes, through MPI: the member at position k of its node
//      reduces slice k (of L) with the members at position k of the other
//      nodes (MPI_Allreduce in place on its own communicator), so L pairs of
//      links carry 1/L of the data each instead of one leader carrying all;
//   3. within each node: every member copies the others' slices
//      (hl_shm_gather_slices).
// On nodes with the direct path (shm_direct.c) step 1 is only the
// reduction of this member's slice and step 3 the direct all-reduce's
// copy-out, with step 2 between them (hl_shm_direct_all_reduce_with).
// Step 2 uses the MPI path's reduction (mpi_reduce_ops.c), so integer and
// min / max results equal the flat MPI path's; float sums differ by
// association order (node sums first).
#include "collectives/shm/shm_hier.h"

#include <limits.h>

// Step 2 on this member's slice [lo, hi) of recv.
typedef struct {
  MPI_Comm cross;
  hl_mpi_coll_t *coll;
  hl_dtype_t dtype;
  const hl_comm_reducer_t *reducer;
} cross_step_t;

static hl_status_t cross_step(void *ctx, void *recv, int64_t lo, int64_t hi) {
  cross_step_t *c = ctx;
  size_t es = hl_dtype_size(c->dtype);
  hl_mpi_reduction_t mr;
  HL_RETURN_IF_ERROR(hl_mpi_reduction_begin(c->coll, c->dtype, c->reducer, &mr));
  size_t limit = hl_mpi_max_message_bytes() / es;
  int64_t ce = limit < 1 ? 1 : limit > INT_MAX ? INT_MAX : (int64_t)limit;
  int err = MPI_SUCCESS;
  // At least one call, so members with empty slices still match.
  int64_t a = lo;
  do {
    int n = (int)(hi - a < ce ? hi - a : ce);
    err = MPI_Allreduce(MPI_IN_PLACE, (char *)recv + (size_t)a * es, n, mr.type, mr.op,
                        c->cross);
    a += n;
  } while (a < hi && err == MPI_SUCCESS);
  hl_status_t st = hl_mpi_reduction_end(&mr);
  if (err != MPI_SUCCESS) {
    hl_status_free(st);
    return hl_mpi_status(err, "MPI all-reduce across nodes");
  }
  return st;
}

hl_status_t hl_shm_hier_all_reduce(hl_shm_group_t *g, MPI_Comm cross, hl_mpi_coll_t *coll,
                                   hl_dtype_t dtype, const hl_comm_reducer_t *reducer,
                                   hl_shm_reduction_t *red, const void *send, void *recv,
                                   int64_t count) {
  cross_step_t c = {cross, coll, dtype, reducer};
  // Direct path: step 1 reduces only this member's slice (a reduce-scatter
  // within the node), step 2 runs on it before any peer copies it, step 3
  // is the all-reduce's copy-out: no full node all-reduce, no extra gather.
  if (g->node->direct)
    return hl_shm_direct_all_reduce_with(g, red, send, recv, count, cross_step, &c);
  size_t es = hl_dtype_size(dtype);
  HL_RETURN_IF_ERROR(hl_shm_all_reduce(g, red, send, recv, count));
  int64_t unit = es >= HL_SHM_LINE ? 1 : HL_SHM_LINE / (int64_t)es, lo, hi;
  hl_shm_slice_of(count, unit, g->size, g->me, &lo, &hi);
  HL_RETURN_IF_ERROR(cross_step(&c, recv, lo, hi));
  hl_shm_gather_slices(g, recv, count, es);
  return NULL;
}
