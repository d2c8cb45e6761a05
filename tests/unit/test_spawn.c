// Spawner vs worker: which environments count as "started by an MPI
// launcher". (Running mpiexec itself is covered by
// tests/integration/test_launcher.py.)
#include "launcher/spawn.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_util.h"

static const char *const kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                    "PMI_FD", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_RANK",
                                    "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_ID",
                                    "SLURM_JOB_ID"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof(kVars) / sizeof(kVars[0]); i++) unsetenv(kVars[i]);
}

static void test_detection(void) {
  clear_env();
  CU_ASSERT_FALSE(hl_spawn_inside_mpi_job());
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
  setenv("PMIX_RANK", "0", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
  setenv("PMI_RANK", "2", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
  // Hydra (MPICH, Intel MPI) sets these for its ranks.
  setenv("MPI_LOCALNRANKS", "4", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
  setenv("PMI_FD", "5", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
  // A batch script has SLURM_PROCID (and SLURM_JOB_ID) but no step of its
  // own; a srun task has SLURM_STEP_ID and SLURM_STEP_NUM_TASKS too (seen
  // with Slurm 22.05 on localhost, tests/integration/test_cluster_slurm.py).
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_JOB_ID", "7", 1);
  CU_ASSERT_FALSE(hl_spawn_inside_mpi_job());
  setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  CU_ASSERT_FALSE(hl_spawn_inside_mpi_job());
  setenv("SLURM_STEP_ID", "0", 1);
  CU_ASSERT(hl_spawn_inside_mpi_job());
  clear_env();
}

static void test_launcher_choice(void) {
  clear_env();
  hl_launch_options_t o;
  memset(&o, 0, sizeof(o));
  CU_ASSERT_EQUAL(hl_spawn_choose_launcher(&o), HL_LAUNCHER_MPIRUN);
  setenv("SLURM_JOB_ID", "7", 1);  // inside salloc / sbatch
  CU_ASSERT_EQUAL(hl_spawn_choose_launcher(&o), HL_LAUNCHER_SRUN);
  o.hosts = "a:2,b:2";  // named hosts: mpiexec
  CU_ASSERT_EQUAL(hl_spawn_choose_launcher(&o), HL_LAUNCHER_MPIRUN);
  o.hosts = NULL;
  o.launcher = HL_LAUNCHER_MPIRUN;
  CU_ASSERT_EQUAL(hl_spawn_choose_launcher(&o), HL_LAUNCHER_MPIRUN);
  clear_env();
  o.launcher = HL_LAUNCHER_SRUN;
  CU_ASSERT_EQUAL(hl_spawn_choose_launcher(&o), HL_LAUNCHER_SRUN);
}

static CU_TestInfo tests[] = {{"detection", test_detection},
                               {"launcher_choice", test_launcher_choice},
                               CU_TEST_INFO_NULL};
HL_TEST_MAIN("spawn", tests)
