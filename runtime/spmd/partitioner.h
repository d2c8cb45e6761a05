// The SPMD partitioner: a global program (entry parameters, Sharding
// custom-calls or the root annotated with shardings) -> the per-partition
// program every rank runs, with the collectives that keep it equal to the
// global program. See docs/PARTITIONER.md.
//
// Pipeline: sharding propagation (propagate.c) decides a sharding for every
// entry instruction; lowering (lower.c, dot_plan.c, reshard.c) emits each
// instruction on local shards with the collectives its rule needs, as HLO
// text that the HLO parser reads back (so the result is an ordinary module
// that the verifier checks and hlo-convert can write).
#ifndef HL_RUNTIME_SPMD_PARTITIONER_H_
#define HL_RUNTIME_SPMD_PARTITIONER_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// Frontend attribute on the per-partition module's array root: the global
// program's result shape (HLO text, "s32[7,5]"), for assembling shards of an
// uneven split.
#define HL_SPMD_GLOBAL_SHAPE_ATTR "hl_global_shape"

typedef struct hl_spmd_result {
  hl_module_t *module;    // the per-partition module (owned)
  char *text;             // its HLO text (owned)
  char *explanation;      // per instruction: sharding, rule, collectives with bytes (owned)
  int64_t bytes_per_partition;  // sum over the inserted collectives' results on one partition
  int64_t collectives;          // the inserted collectives
} hl_spmd_result_t;

// Whether `m` can be an un-partitioned global program with sharding
// annotations: an entry parameter or the root carries a sharding, or the
// entry has a Sharding custom-call; and the program has no collective or
// partition-id of its own. A program XLA (or a person) already partitioned
// keeps its parameter shardings too, so without a Sharding custom-call this
// alone does not decide (see launcher/partition_hook.h).
bool hl_spmd_module_may_be_global(const hl_module_t *m);
// Whether the entry has a Sharding custom-call (only global programs do:
// XLA's partitioner removes them).
bool hl_spmd_module_has_sharding_constraint(const hl_module_t *m);
// Whether the entry has an SPMDFullToShardShape custom-call (a manual region).
bool hl_spmd_module_has_manual_region(const hl_module_t *m);

// Partitions `global` over `num_partitions` partitions of one replica (the
// inserted collectives name global device ids, equal to partition ids then).
hl_status_t hl_spmd_partition(const hl_module_t *global, int num_partitions,
                              hl_spmd_result_t *out);
// Same on a grid of `num_replicas` x `num_partitions`: every replica runs
// the partitioned program on its own copy of the arrays; the inserted
// collectives (global device ids replica * P + partition) stay within a
// replica.
hl_status_t hl_spmd_partition_grid(const hl_module_t *global, int num_replicas, int num_partitions,
                                   hl_spmd_result_t *out);
void hl_spmd_result_deinit(hl_spmd_result_t *r);

#endif  // HL_RUNTIME_SPMD_PARTITIONER_H_
