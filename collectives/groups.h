// Process groups of collective instructions: which processes of the
// num_replicas x num_partitions grid take part together, following the
// StableHLO spec's "Parallel execution" strategies and each op's rule for
// choosing one. Pure C (no MPI), so the MPI backend, `hlo-launch
// --explain-groups` and the unit tests share one implementation.
//
// Processes are named by flattened id (= MPI rank):
//   rank = replica * num_partitions + partition.
//
// Mode per op (spec, each op's "Semantics"; XLA's GetCollectiveOpGroupMode):
//   all-reduce, all-gather, reduce-scatter (and their -start forms),
//   collective-reduce (newest XLA; its GPU thunk takes all-reduce's config):
//     channel_id <= 0                         -> cross_replica
//     channel_id > 0, !use_global_device_ids  -> cross_replica_and_partition
//     channel_id > 0,  use_global_device_ids  -> flattened_ids
//     (use_global_device_ids without a channel_id is invalid)
//   all-to-all, ragged-all-to-all, collective-permute(-start),
//   collective-broadcast:
//     channel_id <= 0 -> cross_replica, channel_id > 0 -> cross_partition
//
// Validation (each error names the instruction): ids in range of the mode,
// unique, non-empty groups, all ids covered (except collective-broadcast,
// whose uncovered processes get zeros, and collective-permute), equal group
// sizes for all-gather / reduce-scatter / all-to-all / ragged-all-to-all,
// non-empty groups for flattened_ids. Empty replica_groups = one group of
// every replica (cross_replica, cross_replica_and_partition) or partition
// (cross_partition).
#ifndef HL_COLLECTIVES_GROUPS_H_
#define HL_COLLECTIVES_GROUPS_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

typedef enum hl_group_mode {
  HL_GROUP_CROSS_REPLICA = 0,
  HL_GROUP_CROSS_PARTITION,
  HL_GROUP_CROSS_REPLICA_AND_PARTITION,
  HL_GROUP_FLATTENED_IDS,
} hl_group_mode_t;

// The spec's name: "cross_replica", "cross_partition", ...
const char *hl_group_mode_name(hl_group_mode_t mode);

// True for the opcodes that communicate through process groups (the
// synchronous collectives, their -start forms and ragged-all-to-all).
bool hl_opcode_is_collective(hl_opcode_t opcode);

// The group mode of a collective instruction.
hl_status_t hl_group_mode_of(const hl_instruction_t *inst, hl_group_mode_t *out_mode);

// The resolved groups of one instruction. For collective-permute every
// "group" is one source -> target pair: ranks[offsets[g]] is the source,
// ranks[offsets[g] + 1] the target.
typedef struct hl_process_groups {
  hl_group_mode_t mode;
  bool is_permute;
  int group_count;
  int *offsets;  // [group_count + 1] (owned)
  int *ranks;    // [offsets[group_count]] flattened ids, in group order (owned)
} hl_process_groups_t;

// Resolves inst's groups on a num_replicas x num_partitions grid.
hl_status_t hl_process_groups_resolve(const hl_instruction_t *inst, int64_t num_replicas,
                                      int64_t num_partitions, hl_process_groups_t *out_groups);
void hl_process_groups_deinit(hl_process_groups_t *groups);  // NULL-safe

static inline int hl_process_groups_size(const hl_process_groups_t *g, int group) {
  return g->offsets[group + 1] - g->offsets[group];
}
// The group holding `rank` (-1 when none) and rank's position in it. For
// permute pairs, use the source/target lookups instead.
int hl_process_groups_find(const hl_process_groups_t *g, int rank, int *out_index);
// Permute: the source sending to `rank` / the target `rank` sends to (-1: none).
int hl_process_groups_permute_source(const hl_process_groups_t *g, int rank);
int hl_process_groups_permute_target(const hl_process_groups_t *g, int rank);
// Same groups in the same order (mode and kind ignored).
bool hl_process_groups_equal(const hl_process_groups_t *a, const hl_process_groups_t *b);

#endif  // HL_COLLECTIVES_GROUPS_H_
