// The MPI backend of the communicator interface (runtime/comm/comm.h).
//
// One hl_comm_t per job: it duplicates the given communicator, so the
// executor's traffic never matches messages the launcher exchanges on the
// original one, and sets MPI_ERRORS_RETURN on the duplicate, so an MPI
// failure comes back as an HL_COMM_ERROR status instead of killing the
// process inside MPI.
#ifndef HL_COLLECTIVES_MPI_COMM_H_
#define HL_COLLECTIVES_MPI_COMM_H_

#include <mpi.h>

#include "runtime/base/status.h"
#include "runtime/comm/comm.h"

// Creates the communicator for the processes of `world` (normally
// MPI_COMM_WORLD; MPI must be initialized). Collective over `world`: every
// process must call it. rank/size are the process's rank in and the size of
// `world`, i.e. the flattened process id and process count.
// Release with hl_comm_destroy (also collective: it frees MPI communicators).
hl_status_t hl_mpi_comm_create(MPI_Comm world, hl_comm_t **out_comm);

// A status for a failed MPI call: "<what>: <MPI error string>".
hl_status_t hl_mpi_status(int mpi_error, const char *what);

// The most bytes one MPI message carries (MPI counts are int): INT_MAX, or
// HL_MPI_MAX_MESSAGE_BYTES from the environment when smaller (at least 1;
// read once, at the first call). Collectives and channel messages larger
// than this are split into several MPI calls (element-aligned for
// reductions), so any size works; tests set it small to exercise that.
size_t hl_mpi_max_message_bytes(void);

#endif  // HL_COLLECTIVES_MPI_COMM_H_
