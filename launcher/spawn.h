// Outside an MPI job: check the options and the program once, then start
// the job with mpiexec, re-running this executable as every rank.
#ifndef HL_LAUNCHER_SPAWN_H_
#define HL_LAUNCHER_SPAWN_H_

#include <stdbool.h>

#include "runtime/spmd/grid.h"
#include "launcher/options.h"
#include "runtime/ir/module.h"

// True when this process was started as a rank of an MPI job (by mpirun /
// mpiexec, or by srun with a PMI plugin), judged from the environment.
bool hl_spawn_inside_mpi_job(void);

// Who starts the ranks: --launcher, else srun inside a Slurm allocation
// (SLURM_JOB_ID set) unless -H / --hostfile name hosts, else mpiexec.
hl_launcher_kind_t hl_spawn_choose_launcher(const hl_launch_options_t *options);

// The checks made before any rank starts that need the grid: custom-call
// targets known, collective groups that fit, collectives that pair up
// (unless --no-collective-check). Batch mode's ranks make them per program.
hl_status_t hl_spawn_check_program(const hl_launch_options_t *options, const hl_module_t *module,
                                   const hl_grid_t *grid);

// Batch mode (launcher/batch_list.h) runs all the programs in one job.
// Loads and verifies the program, resolves the grid, then runs mpiexec (or
// prints its command line for --dry-run). `argc`/`argv` are the original
// command line, passed on to the ranks. Returns the process exit status.
int hl_spawn_main(const hl_launch_options_t *options, int argc, char **argv);

#endif  // HL_LAUNCHER_SPAWN_H_
