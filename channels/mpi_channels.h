// The MPI side of channels: the start-up rendezvous and the point-to-point
// transport behind the communicator's send / recv / channel_wait entries.
#ifndef HL_CHANNELS_MPI_CHANNELS_H_
#define HL_CHANNELS_MPI_CHANNELS_H_

#include <mpi.h>

#include "channels/channel_pairing.h"
#include "runtime/base/status.h"
#include "runtime/comm/channels.h"
#include "runtime/comm/comm.h"

// Collective over `world` (every process calls it, with its own endpoints
// from hl_channel_collect, possibly none): gathers every process's
// endpoints, resolves this process's routes into env->routes (owned: release
// with hl_mpi_channels_release_routes), and installs the MPI transport on
// `comm` (an MPI backend communicator over the same processes): its send,
// recv and channel_wait entries then use a duplicate of `world` of their own,
// with the channel id as tag. Every process gets the same verdict, so an
// error (naming the channel) is reported everywhere before execution starts.
hl_status_t hl_mpi_channels_setup(hl_comm_t *comm, MPI_Comm world,
                                  const hl_channel_endpoint_t *mine, int mine_count,
                                  hl_channel_env_t *env);

// Both steps for a program: this process's endpoints (hl_channel_collect on
// `module`, process `rank` of the replicas x partitions grid), then the
// rendezvous above. Collective over `world`: a process whose collection
// fails still takes part (with no endpoints), so the others do not hang, and
// returns its own error. What hlo-launch's worker and the embedding API do.
hl_status_t hl_mpi_channels_connect(hl_comm_t *comm, MPI_Comm world, const hl_module_t *module,
                                    int64_t replicas, int64_t partitions, int rank,
                                    hl_channel_env_t *env);

void hl_mpi_channels_release_routes(hl_channel_env_t *env);

// After a program that failed: its channel messages may still be in flight
// or unmatched, and freeing the channel communicator lets MPI give its
// context to the next one created (MPICH does), whose receives would then
// match them. Called before hl_comm_destroy on a `comm` with the transport
// installed, it keeps that communicator until MPI_Finalize instead (one per
// failed program with channels). No effect on a comm without it.
void hl_mpi_channels_retire(hl_comm_t *comm);

#endif  // HL_CHANNELS_MPI_CHANNELS_H_
