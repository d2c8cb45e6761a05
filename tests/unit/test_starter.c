// The MPI family of a version text, of a starter (by its name, by what its
// --version prints) and the starter chosen for a library's family, on a
// PATH of scripts made here (launcher/starter.c, collectives/mpi_family.c).
// The real starters of both families: tests/integration/test_mpi_families.py.
// hl-test-libs: hl_launcher
#include "launcher/starter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/test_util.h"

// Texts as the implementations print them.
static void test_classify(void) {
  CU_ASSERT_EQUAL(hl_mpi_family_classify("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"),
                  HL_MPI_FAMILY_OPENMPI);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("mpiexec (OpenRTE) 4.1.4\n"), HL_MPI_FAMILY_OPENMPI);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("mpirun (Open MPI) 5.0.3\n"), HL_MPI_FAMILY_OPENMPI);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("MPICH Version:\t4.0.2\nMPICH Release date: ..."),
                  HL_MPI_FAMILY_MPICH);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("HYDRA build details:\n    Version: 4.0.2"),
                  HL_MPI_FAMILY_MPICH);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("Intel(R) MPI Library 2021.10 for Linux* OS"),
                  HL_MPI_FAMILY_MPICH);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("MVAPICH2 Version      :\t2.3.7"), HL_MPI_FAMILY_MPICH);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("CRAY MPICH version 8.1.25"), HL_MPI_FAMILY_MPICH);
  CU_ASSERT_EQUAL(hl_mpi_family_classify("usage: sleep NUMBER"), HL_MPI_FAMILY_UNKNOWN);
  CU_ASSERT_EQUAL(hl_mpi_family_classify(""), HL_MPI_FAMILY_UNKNOWN);
  CU_ASSERT_EQUAL(hl_mpi_family_classify(NULL), HL_MPI_FAMILY_UNKNOWN);
  // This binary's own library is one of the two.
  CU_ASSERT_NOT_EQUAL(hl_mpi_library_family(), HL_MPI_FAMILY_UNKNOWN);
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_mpi_library_version_line(),
                                hl_mpi_library_family() == HL_MPI_FAMILY_MPICH ? "MPICH"
                                                                               : "Open MPI"));
}

static char g_dir[] = "/tmp/hl-starter-XXXXXX";

// An executable script `name` in g_dir printing `text` for --version.
static void script(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "#!/bin/sh\necho '%s'\n", text);
  fclose(f);
  chmod(path, 0755);
}

static void test_starter_family(void) {
  script("orterun", "");  // known by name: nothing is run
  script("mpiexec.hydra", "");
  script("site-mpirun", "mpiexec (OpenRTE) 4.1.4");  // known by what it prints
  script("site-hydra-wrapper", "HYDRA build details:");
  script("quiet", "nothing to say");
  char path[256];
  snprintf(path, sizeof(path), "%s/orterun", g_dir);
  CU_ASSERT_EQUAL(hl_starter_family(path), HL_MPI_FAMILY_OPENMPI);
  snprintf(path, sizeof(path), "%s/mpiexec.hydra", g_dir);
  CU_ASSERT_EQUAL(hl_starter_family(path), HL_MPI_FAMILY_MPICH);
  snprintf(path, sizeof(path), "%s/site-mpirun", g_dir);
  CU_ASSERT_EQUAL(hl_starter_family(path), HL_MPI_FAMILY_OPENMPI);
  snprintf(path, sizeof(path), "%s/quiet", g_dir);
  CU_ASSERT_EQUAL(hl_starter_family(path), HL_MPI_FAMILY_UNKNOWN);
  snprintf(path, sizeof(path), "%s/missing", g_dir);
  CU_ASSERT_EQUAL(hl_starter_family(path), HL_MPI_FAMILY_UNKNOWN);
  // A symbolic link counts by what it resolves to (Debian's alternatives).
  char link[256];
  snprintf(link, sizeof(link), "%s/mpiexec", g_dir);
  snprintf(path, sizeof(path), "%s/orterun", g_dir);
  CU_ASSERT_EQUAL(symlink(path, link), 0);
  CU_ASSERT_EQUAL(hl_starter_family(link), HL_MPI_FAMILY_OPENMPI);
}

static void test_find(void) {
  char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
  unsetenv(HL_STARTER_ENV);
  setenv("PATH", g_dir, 1);  // mpiexec -> orterun, mpiexec.hydra, ...
  hl_starter_t s;
  HL_ASSERT_OK(hl_starter_find(NULL, HL_MPI_FAMILY_MPICH, &s));
  CU_ASSERT_STRING_EQUAL(s.command, "mpiexec.hydra");
  CU_ASSERT_EQUAL(s.family, HL_MPI_FAMILY_MPICH);
  HL_ASSERT_OK(hl_starter_find(NULL, HL_MPI_FAMILY_OPENMPI, &s));
  CU_ASSERT_STRING_EQUAL(s.command, "mpiexec");
  CU_ASSERT_EQUAL(s.family, HL_MPI_FAMILY_OPENMPI);
  // Asked for by name or by the environment: checked the same way.
  char path[256];
  snprintf(path, sizeof(path), "%s/site-hydra-wrapper", g_dir);
  HL_ASSERT_ERROR_CONTAINS(hl_starter_find(path, HL_MPI_FAMILY_OPENMPI, &s),
                           "starts MPICH jobs, but hlo-launch was built with Open MPI");
  setenv(HL_STARTER_ENV, path, 1);
  HL_ASSERT_ERROR_CONTAINS(hl_starter_find(NULL, HL_MPI_FAMILY_OPENMPI, &s), HL_STARTER_ENV);
  HL_ASSERT_OK(hl_starter_find(NULL, HL_MPI_FAMILY_MPICH, &s));
  CU_ASSERT_STRING_EQUAL(s.command, path);
  unsetenv(HL_STARTER_ENV);
  // One that cannot tell is taken as asked, with the library's flags.
  snprintf(path, sizeof(path), "%s/quiet", g_dir);
  HL_ASSERT_OK(hl_starter_find(path, HL_MPI_FAMILY_MPICH, &s));
  CU_ASSERT_EQUAL(s.family, HL_MPI_FAMILY_MPICH);
  // Only the other family's starters on PATH: an error naming the one found.
  char hydra[256];
  snprintf(hydra, sizeof(hydra), "%s/mpiexec.hydra", g_dir);
  CU_ASSERT_EQUAL(unlink(hydra), 0);
  HL_ASSERT_ERROR_CONTAINS(hl_starter_find(NULL, HL_MPI_FAMILY_MPICH, &s), "starts Open MPI jobs");
  if (saved) {
    setenv("PATH", saved, 1);
    free(saved);
  }
}

static void test_srun_plugin(void) {
  CU_ASSERT_STRING_EQUAL(hl_starter_srun_mpi_plugin(HL_MPI_FAMILY_MPICH), "pmi2");
  CU_ASSERT_STRING_EQUAL(hl_starter_srun_mpi_plugin(HL_MPI_FAMILY_OPENMPI), "pmix");
}

// A 1-process MPI job where a starter launched more: the other family's
// starter (or srun's plugin) did not reach this library.
static void test_explain_singleton(void) {
  static const char *const kVars[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE",
                                      "PMI_RANK", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID",
                                      "SLURM_STEP_ID"};
  for (size_t i = 0; i < sizeof(kVars) / sizeof(kVars[0]); i++) unsetenv(kVars[i]);
  char buf[1024];
  CU_ASSERT_FALSE(hl_starter_explain_singleton(buf, sizeof(buf)));
  setenv("PMI_SIZE", "1", 1);  // a real 1-process job
  CU_ASSERT_FALSE(hl_starter_explain_singleton(buf, sizeof(buf)));
  setenv("PMI_SIZE", "4", 1);
  setenv("PMI_RANK", "0", 1);
  CU_ASSERT_TRUE(hl_starter_explain_singleton(buf, sizeof(buf)));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "started 4 processes (PMI_SIZE=4), but MPI sees a job of 1"));
  setenv("PMI_RANK", "3", 1);  // rank 0 speaks for all
  CU_ASSERT_TRUE(hl_starter_explain_singleton(buf, sizeof(buf)));
  CU_ASSERT_STRING_EQUAL(buf, "");
  unsetenv("PMI_SIZE");
  unsetenv("PMI_RANK");
  setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  setenv("SLURM_PROCID", "0", 1);
  CU_ASSERT_FALSE(hl_starter_explain_singleton(buf, sizeof(buf)));  // no step: a batch script
  setenv("SLURM_STEP_ID", "0", 1);
  CU_ASSERT_TRUE(hl_starter_explain_singleton(buf, sizeof(buf)));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "srun --mpi="));
  for (size_t i = 0; i < sizeof(kVars) / sizeof(kVars[0]); i++) unsetenv(kVars[i]);
}

static int setup(void) { return mkdtemp(g_dir) ? 0 : 1; }

static int teardown(void) {
  static const char *const kFiles[] = {"orterun", "mpiexec.hydra", "site-mpirun",
                                       "site-hydra-wrapper", "quiet", "mpiexec"};
  char path[256];
  for (size_t i = 0; i < sizeof(kFiles) / sizeof(kFiles[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", g_dir, kFiles[i]);
    unlink(path);
  }
  rmdir(g_dir);
  return 0;
}

static CU_TestInfo tests[] = {{"classify", test_classify},
                              {"starter_family", test_starter_family},
                              {"find", test_find},
                              {"srun_plugin", test_srun_plugin},
                              {"explain_singleton", test_explain_singleton},
                              CU_TEST_INFO_NULL};
HL_TEST_MAIN_WITH_FIXTURES("starter", setup, teardown, tests)
