// Collectives across nodes (shm_hier.c).
#ifndef HL_COLLECTIVES_SHM_SHM_HIER_H_
#define HL_COLLECTIVES_SHM_SHM_HIER_H_

#include "collectives/mpi_internal.h"
#include "collectives/shm/shm_internal.h"

// A group that spans nodes with the same number L >= 2 of its members on
// each, as this member sees it: `cross` joins the members at this one's
// position (in its node, group order) on every node, ordered by group index.
typedef struct hl_shm_hier {
  MPI_Comm cross;
  int cross_size;
  int *cross_members;  // cross rank -> group index (owned)
  int *node_pos;       // group index -> its position in its node (owned)
  int size, index;     // the whole group's size, this member's group index
} hl_shm_hier_t;

// `node_part`: this node's members of the group. Native reductions only
// (red->native).
hl_status_t hl_shm_hier_all_reduce(hl_shm_group_t *node_part, MPI_Comm cross,
                                   hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                   const hl_comm_reducer_t *reducer, hl_shm_reduction_t *red,
                                   const void *send, void *recv, int64_t count);
// Direct path only (node->direct): blocks of `count` elements per group
// member, count <= INT_MAX.
hl_status_t hl_shm_hier_reduce_scatter(hl_shm_group_t *node_part, const hl_shm_hier_t *h,
                                       hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                       const hl_comm_reducer_t *reducer,
                                       hl_shm_reduction_t *red, const void *send, void *recv,
                                       int64_t count);
// Direct path only: `bytes` per member, at most INT_MAX.
hl_status_t hl_shm_hier_all_gather(hl_shm_group_t *node_part, const hl_shm_hier_t *h,
                                   const void *send, void *recv, size_t bytes);

#endif  // HL_COLLECTIVES_SHM_SHM_HIER_H_
