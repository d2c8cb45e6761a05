// Scaffolding for the CUnit suites that run on several MPI ranks (ctest
// starts them under mpiexec): the suite's verdict across ranks, and a
// communicator prepared for a module.
#ifndef HL_TESTS_UNIT_MPI_TEST_UTIL_H_
#define HL_TESTS_UNIT_MPI_TEST_UTIL_H_

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>

#include "collectives/mpi_comm.h"
#include "runtime/ir/module.h"
#include "tests/unit/test_util.h"

// Runs `tests` as suite `name` on this rank, then MPI_Finalize; returns the
// exit code, non-zero when the suite failed (or ran nothing) on any rank.
static inline int hl_mpi_test_run(const char *name, CU_TestInfo *tests) {
  int failed = 1;
  if (CU_initialize_registry() == CUE_SUCCESS) {
    CU_SuiteInfo suites[] = {{name, NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    if (CU_register_suites(suites) == CUE_SUCCESS) {
      CU_basic_set_mode(CU_BRM_NORMAL);
      CU_basic_run_tests();
      failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() != 0 ||
               CU_get_number_of_tests_run() == 0;
    }
    CU_cleanup_registry();
  }
  // Every rank's verdict counts.
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}

// *out: a communicator on MPI_COMM_WORLD prepared for `m` on a replicas x 1
// grid. False (after printing why) when creating or preparing it failed;
// *out is then whatever was created, for the caller's tear-down.
static inline bool hl_mpi_test_comm(const hl_module_t *m, int replicas, hl_comm_t **out) {
  *out = NULL;
  hl_status_t st = hl_mpi_comm_create(MPI_COMM_WORLD, out);
  if (!st) st = (*out)->vtable->prepare(*out, m, replicas, 1);
  if (st) {
    fprintf(stderr, "setup: %s\n", hl_status_message(st));
    hl_status_free(st);
    return false;
  }
  return true;
}

#endif  // HL_TESTS_UNIT_MPI_TEST_UTIL_H_
