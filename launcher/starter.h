// The program that starts the ranks, matched to the MPI hlo-launch was
// built with: a rank started by another implementation's mpiexec finds no
// job of its own and runs alone (a job of N singletons). MPICH and its
// derivatives start with Hydra (mpiexec.hydra / mpiexec.mpich), Open MPI
// with its mpiexec / mpirun; srun needs the --mpi= plugin the library speaks.
#ifndef HL_LAUNCHER_STARTER_H_
#define HL_LAUNCHER_STARTER_H_

#include <stdbool.h>
#include <stddef.h>

#include "collectives/mpi_family.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"

typedef struct hl_starter {
  hl_mpi_family_t family;  // the flags to give it (the library's when it cannot tell)
  char command[4096];      // what to run (a name found on PATH stays a name)
  char resolved[4096];     // where it resolved to, for messages ("" when not found)
} hl_starter_t;

// The environment variable that names the starter when --mpiexec does not.
#define HL_STARTER_ENV "HLO_LAUNCH_MPIEXEC"

// The family of the starter at `path` (a name is looked up on PATH): by the
// name it resolves to (orterun, prterun -> Open MPI; mpiexec.hydra,
// *.mpich -> MPICH), else by what `path --version` prints within 3 s.
// UNKNOWN when it is missing or does not say.
hl_mpi_family_t hl_starter_family(const char *path);

// The starter for a library of family `library`: `requested` (--mpiexec, or
// HLO_LAUNCH_MPIEXEC when NULL) if given, else the first of the family's
// names found on PATH that belongs to the family (MPICH: mpiexec.hydra,
// mpiexec.mpich, mpiexec, mpirun; Open MPI: mpiexec, mpirun,
// mpiexec.openmpi, mpirun.openmpi). A starter of another family is an
// error naming both and the fix; one that cannot tell is taken as asked.
hl_status_t hl_starter_find(const char *requested, hl_mpi_family_t library, hl_starter_t *out);

// srun's --mpi= plugin for the library: pmix (Open MPI), pmi2 (MPICH: its
// PMI-1 client is served by Slurm's pmi2 plugin); NULL for Cray MPICH (the
// site's default plugin).
const char *hl_starter_srun_mpi_plugin(hl_mpi_family_t library);

// After MPI_Init saw a job of one process: when the environment shows that
// a starter launched more (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX /
// SLURM_STEP_NUM_TASKS), the starter and the library do not match; writes
// the message into `buf` and returns true.
bool hl_starter_explain_singleton(char *buf, size_t cap);

// --hostfile for a starter of `family`: Open MPI reads "host slots=N
// [max_slots=M]", Hydra "host:N" (both: a bare "host", '#' comments). When
// the file is in the other family's form, appends its hosts to `out_hosts`
// as one --host / -hosts list ("node1:4,node2:4", which both starters read)
// to give instead of the file; appends nothing when the file can be given
// as is. A line in neither form is an error naming the file and line.
hl_status_t hl_starter_hostfile_hosts(const char *path, hl_mpi_family_t family,
                                      hl_strbuf_t *out_hosts);

#endif  // HL_LAUNCHER_STARTER_H_
