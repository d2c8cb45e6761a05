// `hlo-launch --explain-groups PROGRAM`: prints every collective's process
// groups on the grid, without starting MPI or running anything.
#ifndef HL_LAUNCHER_EXPLAIN_GROUPS_H_
#define HL_LAUNCHER_EXPLAIN_GROUPS_H_

#include <stdbool.h>
#include <stdio.h>

#include "runtime/spmd/grid.h"
#include "launcher/options.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"
#include "runtime/loader/program_loader.h"

// Appends the explanation of every collective of `module` (computations in
// module order) on a num_replicas x num_partitions grid. A collective whose
// groups are invalid gets its error message instead; returns the number of
// such collectives.
int hl_explain_groups(const hl_module_t *module, int64_t num_replicas, int64_t num_partitions,
                      hl_strbuf_t *out);

// Loads options->program, resolves the grid as a run would, prints to `out`.
// Returns the process exit code (0 ok, 1 a load error or invalid groups).
int hl_explain_groups_main(const hl_launch_options_t *options, FILE *out);

// For the --explain-* modes: loads PROGRAM (honouring --max-inflated-size),
// verifies it and resolves the grid. On failure prints the error and
// returns false with nothing to release; on success the caller deinits
// *program.
bool hl_explain_load(const hl_launch_options_t *options, hl_program_t *program, hl_grid_t *grid);

#endif  // HL_LAUNCHER_EXPLAIN_GROUPS_H_
