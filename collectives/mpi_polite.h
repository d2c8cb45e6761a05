// Polite waiting in MPI for oversubscribed nodes.
//
// MPICH 4.x (ch4) busy-polls inside every blocking call and has no setting
// to yield (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's). With more ranks on a
// node than cores, a rank waiting in MPI_Allreduce then burns the core that
// the rank it waits for needs. Open MPI yields by itself when it knows it
// oversubscribes (mpi_yield_when_idle). So when the job is oversubscribed
// and the MPI is of MPICH's family, the calls below start the non-blocking
// form and wait with MPI_Test between sched_yield()s, then short naps; else
// each is exactly the blocking MPI call. Same arguments, same return codes.
#ifndef HL_COLLECTIVES_MPI_POLITE_H_
#define HL_COLLECTIVES_MPI_POLITE_H_

#include <mpi.h>
#include <stdbool.h>

// Collective over `comm` (the whole job); call right after MPI_Init. Decides
// once (later calls do nothing): polite when the ranks sharing this node
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) outnumber the CPUs this process
// may use and the library is MPICH-family. HL_MPI_POLITE=1 / 0 forces it on
// or off (any MPI). Never called: not polite unless HL_MPI_POLITE=1.
void hl_mpi_polite_init(MPI_Comm comm);
bool hl_mpi_polite(void);

// The waits every polite call ends in: MPI_Wait / MPI_Waitall (statuses
// ignored), or a test loop that yields the core.
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
