// hlo-launch --collectives-tune: the tuning table (shm_tuning.h) measured
// once at start-up on the job's own nodes instead of read from a file.
// collectives/shm/README.md ("Choosing per call").
#ifndef HL_COLLECTIVES_SHM_SHM_AUTOTUNE_H_
#define HL_COLLECTIVES_SHM_SHM_AUTOTUNE_H_

#include "collectives/shm/shm_internal.h"
#include "collectives/shm/shm_tuning.h"
#include "runtime/base/strbuf.h"

enum { HL_SHM_AUTOTUNE_SIZES = 4 };

// What was measured: per collective and size (bytes per member, the larger
// of operand and result), the shared-memory and raw MPI times in seconds,
// each the max over the job's ranks of a rank's best of 3 (so every rank
// holds the same numbers and derives the same table).
typedef struct hl_shm_autotune {
  int sizes;               // measured (the time budget may stop early); 0: none
  int node_size;           // the group measured: all ranks of a node
  bool uneven;             // nodes of different sizes: entries for any size (*)
  int64_t size_of[HL_SHM_AUTOTUNE_SIZES];
  double shm_s[HL_SHM_TUNE_OPS][HL_SHM_AUTOTUNE_SIZES];
  double mpi_s[HL_SHM_TUNE_OPS][HL_SHM_AUTOTUNE_SIZES];
  double seconds;          // the whole measurement (max over ranks)
} hl_shm_autotune_t;

// Collective over every rank of `job`: times each collective through
// shared memory (on the group of all ranks of `node`, with counter row
// `row` of its window, which nothing else uses) and through MPI on the
// node's communicator, then builds `*out_table`: per collective, shared
// memory from the smallest measured size from which on it was faster at
// every measured size, `never` when it lost at the largest. Every rank gets
// the same measurement and table.
hl_status_t hl_shm_autotune_run(MPI_Comm job, hl_shm_node_t *node, int row,
                                hl_shm_autotune_t *out, hl_shm_tuning_t *out_table);

// The measurement and table as text, each line starting with `prefix`.
void hl_shm_autotune_format(const hl_shm_autotune_t *a, const hl_shm_tuning_t *t,
                            const char *prefix, hl_strbuf_t *out);

#endif  // HL_COLLECTIVES_SHM_SHM_AUTOTUNE_H_
