// Polite waiting in MPI (mpi_polite.h).
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#include "collectives/mpi_polite.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectives/mpi_family.h"
#include "runtime/base/alloc.h"

// g_polite: every rank of the job uses the non-blocking forms (decided
// together: MPI does not match a blocking collective with a non-blocking
// one). g_yield: this rank waits in the test loop (its host oversubscribed).
static bool g_decided, g_polite, g_yield;

static int forced(void) {  // 1 / 0 from HL_MPI_POLITE, else -1
  const char *e = getenv("HL_MPI_POLITE");
  if (!e || !*e) return -1;
  return e[0] == '0' ? 0 : 1;
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

static int yield_until_done(MPI_Request *request) {
  POLITE_LOOP(MPI_Test(request, &done, MPI_STATUS_IGNORE));
}

// What each rank tells the others at start-up: its host and the CPUs it
// may run on (its affinity, as launched).
typedef struct {
  char host[72];
  unsigned char cpus[sizeof(cpu_set_t)];
} rank_place_t;

static int compare_places(const void *a, const void *b) {
  return strcmp(((const rank_place_t *)a)->host, ((const rank_place_t *)b)->host);
}

// Whether the ranks of some host outnumber the CPUs they may run on
// together (the union of their affinities, so ranks already bound to one
// core each still count the host's cores); *here: whether this rank's
// host is one. Every rank computes this from the same table, so all agree.
static bool any_host_oversubscribed(rank_place_t *all, int size, const char *mine, bool *here) {
  qsort(all, (size_t)size, sizeof(*all), compare_places);
  bool any = false;
  *here = false;
  for (int i = 0; i < size;) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    int j = i;
    for (; j < size && !strcmp(all[j].host, all[i].host); j++) {
      cpu_set_t one;
      memcpy(&one, all[j].cpus, sizeof(one));
      CPU_OR(&cpus, &cpus, &one);
    }
    bool over = j - i > CPU_COUNT(&cpus);
    any = any || over;
    if (over && !strcmp(all[i].host, mine)) *here = true;
    i = j;
  }
  return any;
}

void hl_mpi_polite_init(MPI_Comm comm) {
  if (g_decided) return;
  int f = forced();
  if (f >= 0) {  // the launcher gives every rank the same environment
    g_decided = true;
    g_polite = g_yield = f == 1;
    return;
  }
  if (hl_mpi_library_family() != HL_MPI_FAMILY_MPICH) {  // Open MPI yields itself
    g_decided = true;
    return;
  }
  // One all-gather of every rank's place, itself waited for politely: right
  // after MPI_Init the ranks arrive far apart, and blocking collectives here
  // (a node split, then reductions) cost 8 ranks on 2 cores about 0.5 s.
  int size = 1;
  MPI_Comm_size(comm, &size);
  rank_place_t mine;
  memset(&mine, 0, sizeof(mine));
  if (gethostname(mine.host, sizeof(mine.host) - 1) != 0) mine.host[0] = '?';
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE; c++) CPU_SET((int)c, &cpus);
  }
  memcpy(mine.cpus, &cpus, sizeof(mine.cpus));
  rank_place_t *all = hl_calloc((size_t)size, sizeof(*all));
  int ok = all != NULL, all_ok = 0;
  MPI_Request q = MPI_REQUEST_NULL;
  // Whether every rank has room for the table: agreed first, so all take
  // the same branch (and with none, the plain blocking calls everywhere).
  if (MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm, &q) != MPI_SUCCESS ||
      yield_until_done(&q) != MPI_SUCCESS || !all_ok ||
      MPI_Iallgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, comm,
                     &q) != MPI_SUCCESS ||
      yield_until_done(&q) != MPI_SUCCESS) {
    hl_free(all);
    g_decided = true;
    return;
  }
  bool here = false;
  g_polite = any_host_oversubscribed(all, size, mine.host, &here);
  g_yield = here;
  g_decided = true;
  hl_free(all);
}

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
