// All-reduce across nodes (shm_hier.c).
#ifndef HL_COLLECTIVES_SHM_SHM_HIER_H_
#define HL_COLLECTIVES_SHM_SHM_HIER_H_

#include "collectives/mpi_internal.h"
#include "collectives/shm/shm_internal.h"

// `node_part`: this node's members of the group; `cross`: the members at
// this one's position on every node. Native reductions only (red->native).
hl_status_t hl_shm_hier_all_reduce(hl_shm_group_t *node_part, MPI_Comm cross,
                                   hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                   const hl_comm_reducer_t *reducer, hl_shm_reduction_t *red,
                                   const void *send, void *recv, int64_t count);

#endif  // HL_COLLECTIVES_SHM_SHM_HIER_H_
