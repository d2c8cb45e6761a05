// --global-args and --global-output: global arrays cut into every
// partition's shard by the entry parameters' shardings, and the result's
// shards assembled by the root's sharding (index math in sharding.h).
#ifndef HL_LAUNCHER_GLOBAL_IO_H_
#define HL_LAUNCHER_GLOBAL_IO_H_

#include <mpi.h>
#include <stdint.h>

#include "runtime/spmd/grid.h"
#include "launcher/inputs.h"
#include "launcher/options.h"
#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/loader/program_loader.h"

// The arguments of partition `partition` (of grid->partitions): entry
// parameter i is this partition's shard of options->global_arg_files[i].
// The file's element type must be the parameter's, and its dimensions must
// give the parameter's dimensions when split by the sharding. Errors name
// the file, the parameter and the sharding.
hl_status_t hl_global_args_build(const hl_launch_options_t *options, const hl_program_t *program,
                                 const hl_grid_t *grid, int64_t partition,
                                 hl_inputs_t *out_inputs);

// --seed on a global program the launcher partitions: every entry parameter
// is drawn whole, at the global program's shape, from its --seed stream
// (options.c's help) and cut into partition `partition`'s shard by its
// sharding, so each partition gets its part of the same global arrays (as a
// program in Shardy form, whose parameters are global, does) whatever the
// grid. `global_program` is the program before partitioning.
hl_status_t hl_global_random_args(const hl_launch_options_t *options,
                                  const hl_program_t *global_program, const hl_grid_t *grid,
                                  int64_t partition, hl_inputs_t *out_inputs);

// Entry parameter `index`'s sharding: --arg-shardings, else the parameter's
// sharding attribute, else the module's spmd_parameters_shardings; NULL
// (replicated) when none says. `storage` holds a parsed option; release it
// with hl_sharding_deinit.
hl_status_t hl_global_param_sharding(const hl_launch_options_t *options,
                                     const hl_program_t *program, int index,
                                     hl_sharding_t *storage, const hl_sharding_t **out);

// The result's sharding: --output-sharding, else the ROOT's sharding
// attribute, else the module's spmd_output_sharding. Unknown is an error
// naming --output-sharding when the grid has more than one partition (and
// NULL, the whole array, with one). `storage` as above.
hl_status_t hl_global_output_sharding(const hl_launch_options_t *options,
                                      const hl_program_t *program, const hl_grid_t *grid,
                                      hl_sharding_t *storage, const hl_sharding_t **out);

// Before the job starts: the shardings --global-args and --global-output
// need are known and fit the grid (the files are read by the ranks).
hl_status_t hl_global_io_precheck(const hl_launch_options_t *options, const hl_program_t *program,
                                  const hl_grid_t *grid);

// Whether the result can be assembled (an array with a known, supported
// sharding). Every rank reaches the same verdict.
hl_status_t hl_global_output_check(const hl_launch_options_t *options,
                                   const hl_program_t *program, const hl_literal_t *result,
                                   const hl_grid_t *grid);
// The same for the option `flag` (--expect-global), named in the errors.
hl_status_t hl_global_result_check(const hl_launch_options_t *options,
                                   const hl_program_t *program, const hl_literal_t *result,
                                   const hl_grid_t *grid, const char *flag);

// Collective over `comm` (MPI_COMM_WORLD of the grid): the ranks of replica
// 0 send their shards to rank 0, which assembles the global array into
// *out_global (NULL on the other ranks). `flag` names the option in errors.
// Returns rank 0's status; NULL on the other ranks. Call only after
// hl_global_output_check succeeded everywhere.
hl_status_t hl_global_output_assemble(MPI_Comm comm, const hl_launch_options_t *options,
                                      const hl_program_t *program, const hl_literal_t *result,
                                      const hl_grid_t *grid, int rank, const char *flag,
                                      hl_literal_t **out_global);

// hl_global_output_assemble, then rank 0 writes it to options->global_output
// (refusing to replace one of inputs->files). Returns rank 0's status; NULL on
// the other ranks. Call only after hl_global_output_check succeeded everywhere.
hl_status_t hl_global_output_write(MPI_Comm comm, const hl_launch_options_t *options,
                                   const hl_program_t *program, const hl_literal_t *result,
                                   const hl_grid_t *grid, int rank, const hl_inputs_t *inputs);

#endif  // HL_LAUNCHER_GLOBAL_IO_H_
