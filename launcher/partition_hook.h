// hlo-launch's use of the SPMD partitioner (runtime/spmd): a global program
// (shardings on entry parameters / root, Sharding custom-calls) is
// partitioned for the grid's partitions before it runs, and
// --explain-partitioning prints what the partitioner decided.
#ifndef HL_LAUNCHER_PARTITION_HOOK_H_
#define HL_LAUNCHER_PARTITION_HOOK_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "launcher/options.h"
#include "runtime/base/status.h"
#include "runtime/proto/program_loader.h"

// Replaces program->module by its per-partition module when it is a global
// program and partitions > 1; *out_partitioned says whether it did. A grid
// with several replicas is refused (the inserted collectives name partitions
// of one replica).
hl_status_t hl_partition_if_global(hl_program_t *program, int64_t replicas, int64_t partitions,
                                   bool *out_partitioned);

// --explain-partitioning: prints each entry instruction's sharding, the rule
// that lowered it and the collectives inserted with their bytes per
// partition; runs nothing. Returns the exit code.
int hl_explain_partitioning_main(const hl_launch_options_t *o, FILE *out);

#endif  // HL_LAUNCHER_PARTITION_HOOK_H_
