// The process grid: num_replicas x num_partitions processes, one MPI rank
// each, rank = replica * num_partitions + partition (the spec's flattened id).
#ifndef HL_RUNTIME_SPMD_GRID_H_
#define HL_RUNTIME_SPMD_GRID_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/status.h"

typedef struct hl_grid {
  int64_t replicas, partitions, processes;
} hl_grid_t;

// Resolves the grid from -np / --replicas / --partitions (0 = not given) and
// the program's replica_count / num_partitions (0 = the program does not
// say). The rule (also in --help):
//  - an option wins over the program;
//  - a program that states either count has 1 for the one it leaves out;
//  - when nothing gives R or P: P = 1, R = N;
//  - when only one is known, the other is N divided by it;
//  - R x P must equal N; without -np, N = R x P.
hl_status_t hl_grid_resolve(int64_t np, int64_t replicas, int64_t partitions,
                            int64_t program_replicas, int64_t program_partitions,
                            hl_grid_t *out_grid);

// The same rule in another caller's words: `np` names the process count
// ("-np", "the communicator size"), `overrides` what overrides the
// program's counts ("--replicas and --partitions").
typedef struct hl_grid_words {
  const char *np, *overrides;
} hl_grid_words_t;
hl_status_t hl_grid_resolve_worded(const hl_grid_words_t *words, int64_t np, int64_t replicas,
                                   int64_t partitions, int64_t program_replicas,
                                   int64_t program_partitions, hl_grid_t *out_grid);

static inline int64_t hl_grid_rank(const hl_grid_t *g, int64_t replica, int64_t partition) {
  return replica * g->partitions + partition;
}
static inline int64_t hl_grid_replica(const hl_grid_t *g, int64_t rank) {
  return rank / g->partitions;
}
static inline int64_t hl_grid_partition(const hl_grid_t *g, int64_t rank) {
  return rank % g->partitions;
}

// A rank's name in messages: "rank 3 (replica 1, partition 1)", or "rank 3"
// when `grid` is NULL (not known yet). The runner's and the launcher's.
void hl_grid_name_rank(const hl_grid_t *grid, int64_t rank, char *buf, size_t size);

#endif  // HL_RUNTIME_SPMD_GRID_H_
