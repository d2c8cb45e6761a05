// Polite waiting in MPI (mpi_polite.h).
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#include "collectives/mpi_polite.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collectives/mpi_family.h"

// g_polite: every rank of the job uses the non-blocking forms (decided
// together: MPI does not match a blocking collective with a non-blocking
// one). g_yield: this rank waits in the test loop (its node oversubscribed).
static bool g_decided, g_polite, g_yield;

static int forced(void) {  // 1 / 0 from HL_MPI_POLITE, else -1
  const char *e = getenv("HL_MPI_POLITE");
  if (!e || !*e) return -1;
  return e[0] == '0' ? 0 : 1;
}

// Whether the ranks on this node outnumber the CPUs they may run on: the
// union of their affinities (bitwise OR over the node's ranks), so ranks
// already bound to one core each still count the node's cores, not one.
static bool node_oversubscribed(MPI_Comm comm) {
  int rank, local = 1, cpus = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node = MPI_COMM_NULL;
  cpu_set_t mine, all;
  CPU_ZERO(&mine);
  CPU_ZERO(&all);
  bool have_mask = sched_getaffinity(0, sizeof(mine), &mine) == 0;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, &local);
    int ok = have_mask, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node);
    if (all_ok &&
        MPI_Allreduce(&mine, &all, (int)sizeof(all), MPI_BYTE, MPI_BOR, node) == MPI_SUCCESS)
      cpus = CPU_COUNT(&all);
    MPI_Comm_free(&node);
  }
  if (cpus <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = n > 0 ? (int)n : 1;
  }
  return local > cpus;
}

void hl_mpi_polite_init(MPI_Comm comm) {
  if (g_decided) return;
  g_decided = true;
  int f = forced();
  if (f >= 0) {  // the launcher gives every rank the same environment
    g_polite = g_yield = f == 1;
    return;
  }
  if (hl_mpi_library_family() != HL_MPI_FAMILY_MPICH) return;  // Open MPI yields itself
  // Every rank takes both steps (both are collective), then all agree: one
  // oversubscribed node (a hostfile's 3, 3, 2 slots on 2-core hosts) makes
  // the whole job use the non-blocking forms, and only its ranks yield.
  g_yield = node_oversubscribed(comm);
  int here = g_yield, anywhere = 0;
  if (MPI_Allreduce(&here, &anywhere, 1, MPI_INT, MPI_MAX, comm) == MPI_SUCCESS)
    g_polite = anywhere != 0;
  else
    g_yield = false;  // cannot agree: the plain blocking calls everywhere
}

bool hl_mpi_polite(void) {
  if (!g_decided) return forced() == 1;
  return g_polite;
}

static bool yields(void) {
  if (!g_decided) return forced() == 1;
  return g_yield;
}

// Test, yield, test...: a peer that needs this core gets it at once; one
// far behind (computing, loading) gets naps from 20 us doubling to 500 us,
// so waiting ranks cost next to nothing. `test` is MPI_Test or MPI_Testall.
#define POLITE_LOOP(test_call)                                   \
  do {                                                           \
    long nap_ns = 20000;                                         \
    for (int tries = 0;; tries++) {                              \
      int done = 0;                                              \
      int err = (test_call);                                     \
      if (err != MPI_SUCCESS || done) return err;                \
      if (tries < 64) {                                          \
        sched_yield();                                           \
      } else {                                                   \
        struct timespec nap = {0, nap_ns};                       \
        nanosleep(&nap, NULL);                                   \
        if (nap_ns < 500000) nap_ns *= 2;                        \
      }                                                          \
    }                                                            \
  } while (0)

int hl_mpi_polite_wait(MPI_Request *request, MPI_Status *status) {
  if (!yields()) return MPI_Wait(request, status);
  POLITE_LOOP(MPI_Test(request, &done, status));
}

// MPICH defines MPI_STATUSES_IGNORE as the address 1, and gcc 11+ warns
// that the status array "accesses 20 bytes in a region of size 0"
// (-Wstringop-overflow): a false positive on a sentinel MPI never writes
// (pmodels/mpich#5687). Silenced here, once.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
int hl_mpi_polite_waitall(int count, MPI_Request *requests) {
  if (!yields()) return MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
  POLITE_LOOP(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Each: the blocking call, or its non-blocking form and the polite wait.
#define POLITE(blocking_call, nonblocking_call)         \
  do {                                                  \
    if (!hl_mpi_polite()) return (blocking_call);       \
    MPI_Request q = MPI_REQUEST_NULL;                   \
    int err = (nonblocking_call);                       \
    return err != MPI_SUCCESS ? err : hl_mpi_polite_wait(&q, MPI_STATUS_IGNORE); \
  } while (0)

int hl_polite_barrier(MPI_Comm comm) { POLITE(MPI_Barrier(comm), MPI_Ibarrier(comm, &q)); }

int hl_polite_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  POLITE(MPI_Bcast(buf, count, type, root, comm),
         MPI_Ibcast(buf, count, type, root, comm, &q));
}

int hl_polite_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm) {
  POLITE(MPI_Allreduce(send, recv, count, type, op, comm),
         MPI_Iallreduce(send, recv, count, type, op, comm, &q));
}

int hl_polite_reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                     int root, MPI_Comm comm) {
  POLITE(MPI_Reduce(send, recv, count, type, op, root, comm),
         MPI_Ireduce(send, recv, count, type, op, root, comm, &q));
}

int hl_polite_reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type,
                                   MPI_Op op, MPI_Comm comm) {
  POLITE(MPI_Reduce_scatter_block(send, recv, count, type, op, comm),
         MPI_Ireduce_scatter_block(send, recv, count, type, op, comm, &q));
}

int hl_polite_gather(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                     int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm) {
  POLITE(MPI_Gather(send, send_count, send_type, recv, recv_count, recv_type, root, comm),
         MPI_Igather(send, send_count, send_type, recv, recv_count, recv_type, root, comm, &q));
}

int hl_polite_gatherv(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                      const int *recv_counts, const int *displs, MPI_Datatype recv_type, int root,
                      MPI_Comm comm) {
  POLITE(MPI_Gatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, root,
                     comm),
         MPI_Igatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, root,
                      comm, &q));
}

int hl_polite_allgather(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                        int recv_count, MPI_Datatype recv_type, MPI_Comm comm) {
  POLITE(MPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm),
         MPI_Iallgather(send, send_count, send_type, recv, recv_count, recv_type, comm, &q));
}

int hl_polite_allgatherv(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                         const int *recv_counts, const int *displs, MPI_Datatype recv_type,
                         MPI_Comm comm) {
  POLITE(MPI_Allgatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, comm),
         MPI_Iallgatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, comm,
                         &q));
}

int hl_polite_alltoall(const void *send, int send_count, MPI_Datatype send_type, void *recv,
                       int recv_count, MPI_Datatype recv_type, MPI_Comm comm) {
  POLITE(MPI_Alltoall(send, send_count, send_type, recv, recv_count, recv_type, comm),
         MPI_Ialltoall(send, send_count, send_type, recv, recv_count, recv_type, comm, &q));
}

int hl_polite_alltoallv(const void *send, const int *send_counts, const int *send_displs,
                        MPI_Datatype send_type, void *recv, const int *recv_counts,
                        const int *recv_displs, MPI_Datatype recv_type, MPI_Comm comm) {
  POLITE(MPI_Alltoallv(send, send_counts, send_displs, send_type, recv, recv_counts, recv_displs,
                       recv_type, comm),
         MPI_Ialltoallv(send, send_counts, send_displs, send_type, recv, recv_counts,
                        recv_displs, recv_type, comm, &q));
}

int hl_polite_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm) {
  POLITE(MPI_Send(buf, count, type, dest, tag, comm),
         MPI_Isend(buf, count, type, dest, tag, comm, &q));
}

int hl_polite_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Status *status) {
  if (!hl_mpi_polite()) return MPI_Recv(buf, count, type, source, tag, comm, status);
  MPI_Request q = MPI_REQUEST_NULL;
  int err = MPI_Irecv(buf, count, type, source, tag, comm, &q);
  return err != MPI_SUCCESS ? err : hl_mpi_polite_wait(&q, status);
}
