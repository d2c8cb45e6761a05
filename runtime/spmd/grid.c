#include "runtime/spmd/grid.h"

#include <stdbool.h>
#include <stdio.h>

static const char *plural(int64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

// The other count of the grid when only one is known.
static hl_status_t divide(const hl_grid_words_t *words, int64_t np, int64_t known,
                          const char *known_name, int64_t *out_other) {
  if (!np) {
    *out_other = 1;
    return NULL;
  }
  if (np % known != 0)
    return HL_INVALID("%s %lld is not a multiple of %lld %s", words->np, (long long)np,
                      (long long)known, known_name);
  *out_other = np / known;
  return NULL;
}

hl_status_t hl_grid_resolve(int64_t np, int64_t replicas, int64_t partitions,
                            int64_t program_replicas, int64_t program_partitions,
                            hl_grid_t *out) {
  static const hl_grid_words_t launcher = {"-np", "--replicas and --partitions"};
  return hl_grid_resolve_worded(&launcher, np, replicas, partitions, program_replicas,
                                program_partitions, out);
}

hl_status_t hl_grid_resolve_worded(const hl_grid_words_t *words, int64_t np, int64_t replicas,
                                   int64_t partitions, int64_t program_replicas,
                                   int64_t program_partitions, hl_grid_t *out) {
  if (program_replicas < 0 || program_partitions < 0)
    return HL_INVALID("the program has a negative replica_count or num_partitions");
  bool program_says = program_replicas > 0 || program_partitions > 0;
  int64_t r = replicas ? replicas : program_says ? (program_replicas ? program_replicas : 1) : 0;
  int64_t p =
      partitions ? partitions : program_says ? (program_partitions ? program_partitions : 1) : 0;
  if (!r && !p) {
    p = 1;
    r = np ? np : 1;
  } else if (!r) {
    HL_RETURN_IF_ERROR(divide(words, np, p, plural(p, "partition", "partitions"), &r));
  } else if (!p) {
    HL_RETURN_IF_ERROR(divide(words, np, r, plural(r, "replica", "replicas"), &p));
  }
  if (r > (1 << 24) / p) return HL_INVALID("the grid %lld x %lld is too large", (long long)r,
                                           (long long)p);
  if (np && r * p != np) {
    // Say where a count the user did not give came from.
    char origin[200] = "";
    if (program_says && (!replicas || !partitions)) {
      char said[96];
      if (program_replicas && program_partitions)
        snprintf(said, sizeof(said), "replica_count=%lld, num_partitions=%lld",
                 (long long)program_replicas, (long long)program_partitions);
      else if (program_replicas)
        snprintf(said, sizeof(said), "replica_count=%lld", (long long)program_replicas);
      else
        snprintf(said, sizeof(said), "num_partitions=%lld", (long long)program_partitions);
      snprintf(origin, sizeof(origin),
               " (the program says %s; %s override it)", said, words->overrides);
    }
    return HL_INVALID("the grid %lld %s x %lld %s needs %lld %s, but %s is %lld%s",
                      (long long)r, plural(r, "replica", "replicas"), (long long)p,
                      plural(p, "partition", "partitions"), (long long)(r * p),
                      plural(r * p, "process", "processes"), words->np, (long long)np, origin);
  }
  out->replicas = r;
  out->partitions = p;
  out->processes = r * p;
  return NULL;
}

void hl_grid_name_rank(const hl_grid_t *grid, int64_t rank, char *buf, size_t size) {
  if (grid)
    snprintf(buf, size, "rank %lld (replica %lld, partition %lld)", (long long)rank,
             (long long)hl_grid_replica(grid, rank), (long long)hl_grid_partition(grid, rank));
  else
    snprintf(buf, size, "rank %lld", (long long)rank);
}
