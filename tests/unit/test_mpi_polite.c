// The polite MPI wrappers (collectives/mpi_polite.h), forced on
// (HL_MPI_POLITE=1) so their non-blocking forms and test loops run under any
// MPI: each must give what the blocking call gives. Expected values are
// arithmetic on the ranks, not another MPI call. Run by ctest as a single
// process (unit.mpi_polite) and, by tests/integration/test_mpi_comm_ranks.py,
// as a 3-rank job.
#include "collectives/mpi_polite.h"

#include <mpi.h>
#include <stdlib.h>

#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

static int g_rank, g_size;

static void test_forced_on(void) { CU_ASSERT_TRUE(hl_mpi_polite()); }

static void test_barrier_bcast(void) {
  CU_ASSERT_EQUAL(hl_polite_barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  int root = g_size - 1, v[3] = {g_rank, g_rank, g_rank};
  if (g_rank == root) v[0] = 11, v[1] = 22, v[2] = 33;
  CU_ASSERT_EQUAL(hl_polite_bcast(v, 3, MPI_INT, root, MPI_COMM_WORLD), MPI_SUCCESS);
  CU_ASSERT(v[0] == 11 && v[1] == 22 && v[2] == 33);
}

static void test_reductions(void) {
  long long mine[2] = {g_rank + 1, 10 * (g_rank + 1)}, sum[2] = {0, 0};
  long long n = g_size, want = n * (n + 1) / 2;
  CU_ASSERT_EQUAL(hl_polite_allreduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  CU_ASSERT(sum[0] == want && sum[1] == 10 * want);
  long long max = -1;
  CU_ASSERT_EQUAL(hl_polite_reduce(mine, &max, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  if (g_rank == 0) CU_ASSERT_EQUAL(max, n);
  // Block r of every rank's row holds r + rank; rank r gets sum over ranks.
  int *row = calloc((size_t)g_size, sizeof(int)), got = -1;
  for (int r = 0; r < g_size; r++) row[r] = r + g_rank;
  CU_ASSERT_EQUAL(
      hl_polite_reduce_scatter_block(row, &got, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
      MPI_SUCCESS);
  CU_ASSERT_EQUAL(got, g_rank * g_size + g_size * (g_size - 1) / 2);
  free(row);
}

static void test_gathers(void) {
  int n = g_size;
  int *all = calloc((size_t)n, sizeof(int)), *counts = calloc((size_t)n, sizeof(int)),
      *displs = calloc((size_t)n, sizeof(int)), *ragged = calloc((size_t)(n * (n + 1) / 2), 4);
  int mine = 100 + g_rank;
  CU_ASSERT_EQUAL(hl_polite_gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  if (g_rank == 0)
    for (int r = 0; r < n; r++) CU_ASSERT_EQUAL(all[r], 100 + r);
  CU_ASSERT_EQUAL(hl_polite_allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  for (int r = 0; r < n; r++) CU_ASSERT_EQUAL(all[r], 100 + r);
  // Rank r sends r + 1 copies of r.
  int total = 0;
  for (int r = 0; r < n; r++) {
    counts[r] = r + 1;
    displs[r] = total;
    total += r + 1;
  }
  int *send = calloc((size_t)g_rank + 1, sizeof(int));
  for (int k = 0; k <= g_rank; k++) send[k] = g_rank;
  CU_ASSERT_EQUAL(hl_polite_allgatherv(send, g_rank + 1, MPI_INT, ragged, counts, displs, MPI_INT,
                                       MPI_COMM_WORLD),
                  MPI_SUCCESS);
  for (int r = 0; r < n; r++)
    for (int k = 0; k <= r; k++) CU_ASSERT_EQUAL(ragged[displs[r] + k], r);
  for (int k = 0; k < total; k++) ragged[k] = -1;
  CU_ASSERT_EQUAL(hl_polite_gatherv(send, g_rank + 1, MPI_INT, ragged, counts, displs, MPI_INT,
                                    n - 1, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  if (g_rank == n - 1)
    for (int r = 0; r < n; r++)
      for (int k = 0; k <= r; k++) CU_ASSERT_EQUAL(ragged[displs[r] + k], r);
  free(send);
  free(all);
  free(counts);
  free(displs);
  free(ragged);
}

static void test_alltoall(void) {
  int n = g_size;
  int *send = calloc((size_t)n, sizeof(int)), *recv = calloc((size_t)n, sizeof(int));
  int *ones = calloc((size_t)n, sizeof(int)), *at = calloc((size_t)n, sizeof(int));
  for (int r = 0; r < n; r++) {
    send[r] = 1000 * g_rank + r;  // to rank r
    ones[r] = 1;
    at[r] = r;
  }
  CU_ASSERT_EQUAL(hl_polite_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD),
                  MPI_SUCCESS);
  for (int r = 0; r < n; r++) CU_ASSERT_EQUAL(recv[r], 1000 * r + g_rank);
  for (int r = 0; r < n; r++) recv[r] = -1;
  CU_ASSERT_EQUAL(hl_polite_alltoallv(send, ones, at, MPI_INT, recv, ones, at, MPI_INT,
                                      MPI_COMM_WORLD),
                  MPI_SUCCESS);
  for (int r = 0; r < n; r++) CU_ASSERT_EQUAL(recv[r], 1000 * r + g_rank);
  free(send);
  free(recv);
  free(ones);
  free(at);
}

static void test_send_recv_ring(void) {
  if (g_size < 2) return;  // a blocking send to oneself may never return
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  int mine = 7 * g_rank + 1, got = -1;
  MPI_Status status;
  if (g_rank % 2 == 0) {  // even ranks send first: no cycle of blocking sends
    CU_ASSERT_EQUAL(hl_polite_send(&mine, 1, MPI_INT, next, 5, MPI_COMM_WORLD), MPI_SUCCESS);
    CU_ASSERT_EQUAL(hl_polite_recv(&got, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &status),
                    MPI_SUCCESS);
  } else {
    CU_ASSERT_EQUAL(hl_polite_recv(&got, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &status),
                    MPI_SUCCESS);
    CU_ASSERT_EQUAL(hl_polite_send(&mine, 1, MPI_INT, next, 5, MPI_COMM_WORLD), MPI_SUCCESS);
  }
  CU_ASSERT_EQUAL(got, 7 * prev + 1);
  CU_ASSERT_EQUAL(status.MPI_SOURCE, prev);  // the status reaches the caller
  CU_ASSERT_EQUAL(status.MPI_TAG, 5);
}

static void test_waitall(void) {
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  int out[2] = {g_rank, -g_rank}, in[2] = {0, 0};
  MPI_Request q[2];
  MPI_Irecv(in, 2, MPI_INT, prev, 6, MPI_COMM_WORLD, &q[0]);
  MPI_Isend(out, 2, MPI_INT, next, 6, MPI_COMM_WORLD, &q[1]);
  CU_ASSERT_EQUAL(hl_mpi_polite_waitall(2, q), MPI_SUCCESS);
  CU_ASSERT(in[0] == prev && in[1] == -prev);
  CU_ASSERT(q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL);
}

static CU_TestInfo tests[] = {
    {"forced_on", test_forced_on},
    {"barrier_bcast", test_barrier_bcast},
    {"reductions", test_reductions},
    {"gathers", test_gathers},
    {"alltoall", test_alltoall},
    {"send_recv_ring", test_send_recv_ring},
    {"waitall", test_waitall},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  setenv("HL_MPI_POLITE", "1", 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  hl_mpi_polite_init(MPI_COMM_WORLD);
  return hl_mpi_test_run("mpi_polite", tests);
}
