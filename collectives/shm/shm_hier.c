// Collectives for a group that spans nodes with the same number L >= 2 of
// its members on each (N nodes). All-reduce:
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
//
// Reduce-scatter (direct path): the member at node position k reduces,
// within its node, the blocks of the group members at position k on every
// node (N blocks, read straight from its node peers' operands), then
// MPI_Reduce_scatter_block among the members at position k leaves each its
// own block: the node's partial sums cross the links once, no step after.
//
// All-gather (direct path): MPI_Allgatherv among the members at position k
// puts the blocks of every node's position-k member at their group places
// in recv; then each member copies from each node peer the blocks that
// peer gathered, straight from its recv.
#include "collectives/shm/shm_hier.h"

#include <limits.h>
#include <string.h>

#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"

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
    err = hl_polite_allreduce(MPI_IN_PLACE, (char *)recv + (size_t)a * es, n, mr.type, mr.op,
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

hl_status_t hl_shm_hier_reduce_scatter(hl_shm_group_t *g, const hl_shm_hier_t *h,
                                       hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                       const hl_comm_reducer_t *reducer,
                                       hl_shm_reduction_t *red, const void *send, void *recv,
                                       int64_t count) {
  size_t es = hl_dtype_size(dtype), block_bytes = (size_t)count * es;
  size_t total = block_bytes * (size_t)h->size;
  void *owned = NULL;
  // recv inside send: peers still read this member's operand while the
  // MPI step writes recv.
  if ((const char *)recv < (const char *)send + total &&
      (const char *)send < (const char *)recv + block_bytes && count > 0)
    HL_RETURN_IF_ERROR(hl_shm_direct_snapshot(&send, total, &owned));
  char *partial = hl_malloc(block_bytes * (size_t)h->cross_size + 1);
  if (!partial) {
    hl_free(owned);
    return HL_OOM();
  }
  g->call++;
  hl_status_t st = NULL;
  int p = g->size;
  uint64_t bases[p];
  hl_shm_direct_expose(g, send, total, recv, 0);
  for (int k = 0; k < p; k++)
    bases[k] = k == g->me ? 0 : hl_shm_direct_address(g, k, HL_SHM_SEND);
  int64_t step = (int64_t)(g->node->block_bytes / es);
  for (int c = 0; c < h->cross_size; c++)
    for (int64_t b = 0; b < count; b += step) {
      int64_t n = count - b < step ? count - b : step;
      hl_shm_direct_fold(g, red, bases, send,
                         ((size_t)h->cross_members[c] * (size_t)count + (size_t)b) * es, n, es,
                         partial + (size_t)c * block_bytes + (size_t)b * es, &st);
    }
  // The node peers are done with this member's operand only at finish; the
  // MPI step reads `partial`, writes recv (not the exposed operand).
  if (!st) {
    hl_mpi_reduction_t mr;
    st = hl_mpi_reduction_begin(coll, dtype, reducer, &mr);
    if (!st) {
      int err = hl_polite_reduce_scatter_block(partial, recv, (int)count, mr.type, mr.op, h->cross);
      hl_status_t end = hl_mpi_reduction_end(&mr);
      if (err != MPI_SUCCESS) {
        hl_status_free(end);
        st = hl_mpi_status(err, "MPI reduce-scatter across nodes");
      } else {
        st = end;
      }
    }
  }
  hl_shm_direct_finish(g);
  hl_free(partial);
  hl_free(owned);
  return hl_shm_direct_result(st, red);
}

hl_status_t hl_shm_hier_all_gather(hl_shm_group_t *g, const hl_shm_hier_t *h,
                                   const void *send, void *recv, size_t bytes) {
  int *counts = hl_malloc((size_t)h->cross_size * 2 * sizeof(int));
  if (!counts) return HL_OOM();
  int *displs = counts + h->cross_size;
  for (int c = 0; c < h->cross_size; c++) {
    counts[c] = 1;
    displs[c] = h->cross_members[c];
  }
  char *out = recv;
  bool in_place = send == out + (size_t)h->index * bytes;
  g->call++;
  hl_status_t st = NULL;
  hl_shm_direct_expose(g, send, 0, recv, bytes * (size_t)h->size);
  // One block of `bytes` per member, placed by group index.
  MPI_Datatype block;
  int err = MPI_Type_contiguous((int)bytes, MPI_BYTE, &block);
  if (err == MPI_SUCCESS) err = MPI_Type_commit(&block);
  if (err == MPI_SUCCESS) {
    err = hl_polite_allgatherv(in_place ? MPI_IN_PLACE : send, in_place ? 0 : 1,
                         in_place ? MPI_DATATYPE_NULL : block, recv, counts, displs, block,
                         h->cross);
    MPI_Type_free(&block);
  }
  if (err != MPI_SUCCESS) st = hl_mpi_status(err, "MPI all-gather across nodes");
  hl_shm_publish(g, HL_SHM_REDUCED, 1);
  for (int step = 1; step < g->size; step++) {
    int j = (g->me + step) % g->size;
    uint64_t theirs = hl_shm_direct_address(g, j, HL_SHM_RECV);
    hl_shm_wait(g, j, HL_SHM_REDUCED, 1);
    for (int i = 0; i < h->size; i++)
      if (h->node_pos[i] == j)
        hl_shm_direct_read(g, j, out + (size_t)i * bytes, theirs + (uint64_t)i * bytes, bytes,
                           &st);
  }
  hl_shm_direct_finish(g);
  hl_free(counts);
  return st;
}
