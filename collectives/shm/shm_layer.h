// Node-local collectives through MPI-3 shared memory, as a layer on the MPI
// backend's communicator (collectives/mpi_comm.h): it takes over the
// collectives whose group lies on one node and that it is chosen for, and
// passes everything else to the backend. collectives/shm/README.md.
#ifndef HL_COLLECTIVES_SHM_SHM_LAYER_H_
#define HL_COLLECTIVES_SHM_SHM_LAYER_H_

#include <stdbool.h>

#include "runtime/base/status.h"
#include "runtime/comm/comm.h"

// hlo-launch --collectives=mpi|shm|auto.
typedef enum hl_collectives_mode {
  HL_COLLECTIVES_AUTO = 0,  // shared memory where measured faster (size, group shape)
  HL_COLLECTIVES_MPI,       // always the MPI backend (no layer)
  HL_COLLECTIVES_SHM,       // shared memory for every node-local group, any size
} hl_collectives_mode_t;

hl_status_t hl_collectives_mode_parse(const char *text, hl_collectives_mode_t *out_mode);
const char *hl_collectives_mode_name(hl_collectives_mode_t mode);

// Installs the layer on `comm`, made by hl_mpi_comm_create, before its
// prepare (the layer's prepare sets up the node's shared memory, collectively
// over every rank). HL_COLLECTIVES_MPI installs nothing. Released with the
// communicator (hl_comm_destroy).
hl_status_t hl_shm_layer_install(hl_comm_t *comm, hl_collectives_mode_t mode);

// How many collective calls of `comm` ran through shared memory so far (0
// without the layer): lets tests and benchmarks confirm the path they time.
int64_t hl_shm_layer_call_count(hl_comm_t *comm);

// --collectives-tuning FILE (collectives/shm/shm_tuning.h): in auto mode
// the thresholds per (collective, group size) come from FILE, read by rank
// 0 in the layer's prepare and shared with every rank. Call after install;
// nothing without a layer (--collectives=mpi).
hl_status_t hl_shm_layer_set_tuning_file(hl_comm_t *comm, const char *path);

// --collectives-tune (collectives/shm/shm_autotune.h): in auto mode the
// thresholds come from a measurement made once, in the layer's first
// prepare, on this job's nodes (every rank gets the same table). Rank 0
// writes the table to `out_path` (when not NULL; an existing file is an
// error, never overwritten); with `report` every rank prints it to stderr.
// Call after install; nothing without a layer.
hl_status_t hl_shm_layer_set_autotune(hl_comm_t *comm, const char *out_path, bool report);

// Whether the layer of `comm` (prepared) copies directly between the
// processes' buffers (shm_direct.c) rather than through the window.
bool hl_shm_layer_direct(hl_comm_t *comm);

#endif  // HL_COLLECTIVES_SHM_SHM_LAYER_H_
