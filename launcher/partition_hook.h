// hlo-launch's use of the SPMD partitioner (runtime/spmd): a global program
// is partitioned for the grid's partitions before it runs, and
// --explain-partitioning prints what the partitioner decided.
//
// Shardings on parameters alone do not tell a global program from one that
// is already partitioned (XLA keeps them on its per-partition programs), so
// a program is taken as global when it can be (annotated, no collectives of
// its own) and one of these holds: --global-program; it is a jax.export
// (always lowered before partitioning); it has a Sharding
// custom-call (XLA's partitioner removes them); or --global-args gives, for
// a parameter whose sharding splits it, an array of exactly the parameter's
// shape (for a per-partition program it would be larger).
#ifndef HL_LAUNCHER_PARTITION_HOOK_H_
#define HL_LAUNCHER_PARTITION_HOOK_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "launcher/options.h"
#include "runtime/base/status.h"
#include "runtime/loader/program_loader.h"

// Whether `program` is to be partitioned (rule above). *out_ambiguous is set
// when it carries shardings but is run as a per-partition program.
hl_status_t hl_program_is_global(const hl_launch_options_t *o, const hl_program_t *program,
                                 bool *out_global, bool *out_ambiguous);

// Replaces program->module by its per-partition module when it is global
// and partitions > 1; *out_partitioned says whether it did. A grid with
// several replicas is refused (the inserted collectives name partitions of
// one replica).
hl_status_t hl_partition_if_global(const hl_launch_options_t *o, hl_program_t *program, int64_t replicas,
                                   int64_t partitions, bool *out_partitioned);

// --explain-partitioning: prints each entry instruction's sharding, the rule
// that lowered it and the collectives inserted with their bytes per
// partition; runs nothing. Returns the exit code.
int hl_explain_partitioning_main(const hl_launch_options_t *o, FILE *out);

#endif  // HL_LAUNCHER_PARTITION_HOOK_H_
