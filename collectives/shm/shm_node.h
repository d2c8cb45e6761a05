// The node's shared segment (shm_internal.h describes its layout).
#ifndef HL_COLLECTIVES_SHM_SHM_NODE_H_
#define HL_COLLECTIVES_SHM_SHM_NODE_H_

#include "collectives/shm/shm_internal.h"

// Collective over every rank of `job`: finds this rank's node and allocates
// the node's window with counter rows for `set_count` group sets.
hl_status_t hl_shm_node_create(MPI_Comm job, int set_count, hl_shm_node_t **out_node);
// Collective over the node (frees the window); NULL-safe.
void hl_shm_node_destroy(hl_shm_node_t *node);

#endif  // HL_COLLECTIVES_SHM_SHM_NODE_H_
