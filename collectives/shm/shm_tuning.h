// The shared-memory layer's tuning table: from which message size each
// collective takes shared memory in --collectives=auto, per group size.
// Read from a file (hlo-launch --collectives-tuning FILE, written by
// bench_collectives --write-tuning FILE or hlo-launch --collectives-tune
// --collectives-tuning-out FILE); collectives/shm/README.md.
//
// File format: one entry per line, '#' starts a comment:
//   <collective> <group size | *> <min bytes | never>
// collective: all-reduce reduce-scatter all-gather all-to-all
// collective-permute collective-broadcast; group size: the group's members
// (collective-permute: the node's ranks), * for any; min bytes: per member
// (the larger of its operand and result), shared memory from there on;
// never: always MPI. An entry for the exact group size wins over *; a
// collective without an entry keeps the layer's built-in threshold.
#ifndef HL_COLLECTIVES_SHM_SHM_TUNING_H_
#define HL_COLLECTIVES_SHM_SHM_TUNING_H_

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"

typedef enum hl_shm_tune_op {
  HL_SHM_TUNE_ALL_REDUCE = 0,
  HL_SHM_TUNE_REDUCE_SCATTER,
  HL_SHM_TUNE_ALL_GATHER,
  HL_SHM_TUNE_ALL_TO_ALL,
  HL_SHM_TUNE_PERMUTE,
  HL_SHM_TUNE_BROADCAST,
  HL_SHM_TUNE_OPS,
} hl_shm_tune_op_t;

enum { HL_SHM_TUNING_MAX = 256 };

typedef struct hl_shm_tuning_entry {
  int64_t op, group_size;  // group_size 0: any
  int64_t min_bytes;       // -1: never
} hl_shm_tuning_entry_t;

typedef struct hl_shm_tuning {
  int64_t count;
  hl_shm_tuning_entry_t entries[HL_SHM_TUNING_MAX];
} hl_shm_tuning_t;

// The name in the file ("all-reduce", ...).
const char *hl_shm_tune_op_name(hl_shm_tune_op_t op);
// Parses `path`; errors name path:line.
hl_status_t hl_shm_tuning_read(const char *path, hl_shm_tuning_t *out);
// Collective over `comm`: rank 0 reads `path`, every rank gets its table
// (so every member of a group decides alike even without a shared file
// system); an error on rank 0 is every rank's error.
hl_status_t hl_shm_tuning_share(MPI_Comm comm, const char *path, hl_shm_tuning_t *out);
// The table's threshold for (op, group size): false when it has none.
bool hl_shm_tuning_lookup(const hl_shm_tuning_t *t, hl_shm_tune_op_t op, int group_size,
                          int64_t *out_min_bytes);

// Writes `text` (a table in the file format) to a new file `path`: an
// existing file is never overwritten (--collectives-tuning-out).
hl_status_t hl_shm_tuning_write_new(const char *path, const char *text);

#endif  // HL_COLLECTIVES_SHM_SHM_TUNING_H_
