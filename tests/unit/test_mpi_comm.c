// The MPI communicator backend. Run by ctest as a single process (MPI
// singleton) and, by tests/integration/test_mpi_comm_ranks.py, under
// mpiexec with several ranks; expectations follow MPI_COMM_WORLD's.
#include "collectives/mpi_comm.h"

#include <mpi.h>

#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

static void test_rank_size_barrier(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  hl_comm_t *comm = NULL;
  HL_ASSERT_OK(hl_mpi_comm_create(MPI_COMM_WORLD, &comm));
  CU_ASSERT_EQUAL(comm->rank, rank);
  CU_ASSERT_EQUAL(comm->size, size);
  for (int i = 0; i < 3; i++) HL_ASSERT_OK(comm->vtable->barrier(comm));
  hl_comm_destroy(comm);
}

static void test_sub_communicator(void) {
  // A communicator of this rank alone: rank 0 of size 1 whatever the world.
  hl_comm_t *comm = NULL;
  HL_ASSERT_OK(hl_mpi_comm_create(MPI_COMM_SELF, &comm));
  CU_ASSERT_EQUAL(comm->rank, 0);
  CU_ASSERT_EQUAL(comm->size, 1);
  HL_ASSERT_OK(comm->vtable->barrier(comm));
  hl_comm_destroy(comm);
}

static void test_error_status(void) {
  HL_ASSERT_ERROR_CONTAINS(hl_mpi_status(MPI_ERR_COMM, "MPI_Barrier"), "MPI_Barrier: ");
  hl_status_t st = hl_mpi_status(MPI_ERR_COMM, "x");
  CU_ASSERT_EQUAL(hl_status_code(st), HL_COMM_ERROR);
  hl_status_free(st);
}

static CU_TestInfo tests[] = {
    {"rank_size_barrier", test_rank_size_barrier},
    {"sub_communicator", test_sub_communicator},
    {"error_status", test_error_status},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  return hl_mpi_test_run("mpi_comm", tests);
}
