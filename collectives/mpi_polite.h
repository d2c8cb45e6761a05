// Polite waiting in MPI for oversubscribed nodes.
//
// MPICH 4.x (ch4) busy-polls inside every blocking call and has no setting
// to yield (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's). With more ranks on a
// node than cores, a rank waiting in MPI_Allreduce then burns the core that
// the rank it waits for needs. Open MPI yields by itself when it knows it
// oversubscribes (mpi_yield_when_idle). So when a node of the job is
// oversubscribed and the MPI is of MPICH's family, the calls below start the
// non-blocking form and wait: on the oversubscribed nodes with MPI_Test
// between sched_yield()s, then short naps; elsewhere with MPI_Wait. Else each
// is exactly the blocking MPI call. Same arguments, same return codes.
//
// The form is the job's, never one node's: MPI does not match a blocking
// collective with a non-blocking one (MPI-3.1 5.12), and under MPICH a
// rank's Ibcast beside another's Bcast waits forever. A hostfile with 3, 3
// and 2 slots on 2-core hosts oversubscribes two nodes of three; deciding per
// node hung such jobs at start-up (integration.cluster_netns under MPICH).
#ifndef HL_COLLECTIVES_MPI_POLITE_H_
#define HL_COLLECTIVES_MPI_POLITE_H_

#include <mpi.h>
#include <stdbool.h>

// Collective over `comm` (the whole job); call right after MPI_Init, on
// every rank. Decides once (later calls do nothing): the ranks all-gather
// their host names and affinities (non-blocking, waited for politely: the
// ranks reach it far apart); each host's ranks are counted against the CPUs
// they may use together (the union of their affinities); when any host has
// more ranks than CPUs and the library is MPICH-family, every rank uses the
// non-blocking forms, and those on oversubscribed hosts yield while they
// wait. HL_MPI_POLITE=1 / 0 forces both on or off (any MPI; it must be the
// same on every rank, as the launcher's environment is). Never called: not
// polite unless HL_MPI_POLITE=1.
void hl_mpi_polite_init(MPI_Comm comm);
// Whether the job uses the non-blocking forms (the same on every rank).
bool hl_mpi_polite(void);

// The waits every polite call ends in: MPI_Wait / MPI_Waitall (statuses
// ignored), or, on an oversubscribed node, a test loop that yields the core.
int hl_mpi_polite_wait(MPI_Request *request, MPI_Status *status);
int hl_mpi_polite_waitall(int count, MPI_Request *requests);

int hl_polite_barrier(MPI_Comm comm);
int hl_polite_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int hl_polite_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm);
int hl_polite_reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                     int root, MPI_Comm comm);
int hl_polite_reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type,
                                   MPI_Op op, MPI_Comm comm);
int hl_polite_gather(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                     int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm);
int hl_polite_gatherv(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                      const int *recv_counts, const int *displs, MPI_Datatype recv_type, int root,
                      MPI_Comm comm);
int hl_polite_allgather(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                        int recv_count, MPI_Datatype recv_type, MPI_Comm comm);
int hl_polite_allgatherv(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                         const int *recv_counts, const int *displs, MPI_Datatype recv_type,
                         MPI_Comm comm);
int hl_polite_alltoall(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                       int recv_count, MPI_Datatype recv_type, MPI_Comm comm);
int hl_polite_alltoallv(const void *send, const int *send_counts, const int *send_displs,
                        MPI_Datatype send_type, void *recv, const int *recv_counts,
                        const int *recv_displs, MPI_Datatype recv_type, MPI_Comm comm);
int hl_polite_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm);
int hl_polite_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Status *status);

#endif  // HL_COLLECTIVES_MPI_POLITE_H_
