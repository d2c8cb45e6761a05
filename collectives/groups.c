#include "collectives/groups.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"

const char *hl_group_mode_name(hl_group_mode_t mode) {
  switch (mode) {
    case HL_GROUP_CROSS_REPLICA: return "cross_replica";
    case HL_GROUP_CROSS_PARTITION: return "cross_partition";
    case HL_GROUP_CROSS_REPLICA_AND_PARTITION: return "cross_replica_and_partition";
    case HL_GROUP_FLATTENED_IDS: return "flattened_ids";
  }
  return "unknown";
}

bool hl_opcode_is_collective(hl_opcode_t opcode) {
  switch (opcode) {
    case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START:
    case HL_OP_ALL_GATHER: case HL_OP_ALL_GATHER_START:
    case HL_OP_REDUCE_SCATTER: case HL_OP_ALL_TO_ALL: case HL_OP_RAGGED_ALL_TO_ALL:
    case HL_OP_COLLECTIVE_PERMUTE: case HL_OP_COLLECTIVE_PERMUTE_START:
    case HL_OP_COLLECTIVE_BROADCAST: case HL_OP_COLLECTIVE_REDUCE:
      return true;
    default:
      return false;
  }
}

// The ops whose mode also depends on use_global_device_ids.
static bool uses_global_ids(hl_opcode_t op) {
  return op == HL_OP_ALL_REDUCE || op == HL_OP_ALL_REDUCE_START || op == HL_OP_ALL_GATHER ||
         op == HL_OP_ALL_GATHER_START || op == HL_OP_REDUCE_SCATTER ||
         op == HL_OP_COLLECTIVE_REDUCE;
}

static bool is_permute(hl_opcode_t op) {
  return op == HL_OP_COLLECTIVE_PERMUTE || op == HL_OP_COLLECTIVE_PERMUTE_START;
}

// The result shape depends on the group size, so every group must have it.
static bool needs_equal_sizes(hl_opcode_t op) {
  return op == HL_OP_ALL_GATHER || op == HL_OP_ALL_GATHER_START || op == HL_OP_REDUCE_SCATTER ||
         op == HL_OP_ALL_TO_ALL || op == HL_OP_RAGGED_ALL_TO_ALL;
}

hl_status_t hl_group_mode_of(const hl_instruction_t *inst, hl_group_mode_t *out_mode) {
  *out_mode = HL_GROUP_CROSS_REPLICA;
  if (!hl_opcode_is_collective(inst->opcode))
    return HL_INVALID("%s: not a collective", hl_instruction_location(inst));
  bool channel = inst->attrs.channel_id > 0;
  bool global = inst->attrs.use_global_device_ids;
  if (uses_global_ids(inst->opcode)) {
    if (global && !channel)
      return HL_INVALID("%s: use_global_device_ids=true requires a channel_id > 0",
                        hl_instruction_location(inst));
    *out_mode = !channel ? HL_GROUP_CROSS_REPLICA
                : global ? HL_GROUP_FLATTENED_IDS
                         : HL_GROUP_CROSS_REPLICA_AND_PARTITION;
  } else {
    *out_mode = channel ? HL_GROUP_CROSS_PARTITION : HL_GROUP_CROSS_REPLICA;
  }
  return NULL;
}

void hl_process_groups_deinit(hl_process_groups_t *g) {
  if (!g) return;
  hl_free(g->offsets);
  hl_free(g->ranks);
  memset(g, 0, sizeof(*g));
}

// Builder for the output arrays.
typedef struct builder {
  hl_process_groups_t *g;
  int cap_groups, cap_ranks, n_ranks;
} builder_t;

static hl_status_t begin_group(builder_t *b) {
  hl_process_groups_t *g = b->g;
  if (g->group_count + 2 > b->cap_groups) {
    int cap = b->cap_groups ? 2 * b->cap_groups : 16;
    int *o = hl_realloc(g->offsets, (size_t)cap * sizeof(int));
    if (!o) return HL_OOM();
    g->offsets = o;
    b->cap_groups = cap;
  }
  g->offsets[g->group_count] = b->n_ranks;
  g->group_count++;
  g->offsets[g->group_count] = b->n_ranks;
  return NULL;
}

static hl_status_t add_rank(builder_t *b, int64_t rank) {
  hl_process_groups_t *g = b->g;
  if (b->n_ranks + 1 > b->cap_ranks) {
    int cap = b->cap_ranks ? 2 * b->cap_ranks : 64;
    int *r = hl_realloc(g->ranks, (size_t)cap * sizeof(int));
    if (!r) return HL_OOM();
    g->ranks = r;
    b->cap_ranks = cap;
  }
  g->ranks[b->n_ranks++] = (int)rank;
  g->offsets[g->group_count] = b->n_ranks;
  return NULL;
}

// What to run with so that ids 0..max_id of `what` ("replica", "partition"
// or "process") exist on a grid of P partitions (R replicas).
static void grid_advice(const char *what, int64_t max_id, int64_t R, int64_t P, char *buf,
                        size_t cap) {
  int64_t need = max_id + 1;
  if (strcmp(what, "replica") == 0)
    snprintf(buf, cap, "the groups need %lld replica%s: run with --replicas %lld (-np %lld with "
             "%lld partition%s)", (long long)need, need == 1 ? "" : "s", (long long)need,
             (long long)(need * P), (long long)P, P == 1 ? "" : "s");
  else if (strcmp(what, "partition") == 0)
    snprintf(buf, cap, "the groups need %lld partition%s: run with --partitions %lld (-np %lld "
             "with %lld replica%s)", (long long)need, need == 1 ? "" : "s", (long long)need,
             (long long)(need * R), (long long)R, R == 1 ? "" : "s");
  else
    snprintf(buf, cap, "the groups need %lld process%s: run with -np %lld (replicas x "
             "partitions)", (long long)need, need == 1 ? "" : "es", (long long)need);
}

static int64_t max_written_id(const hl_i64_list_t *groups, int count) {
  int64_t m = -1;
  for (int k = 0; k < count; k++)
    for (int i = 0; i < groups[k].n; i++)
      if (groups[k].v[i] > m) m = groups[k].v[i];
  return m;
}

static hl_status_t resolve_permute(const hl_instruction_t *inst, int64_t R, int64_t P,
                                   builder_t *b) {
  hl_process_groups_t *g = b->g;
  int64_t n = g->mode == HL_GROUP_CROSS_REPLICA ? R : P;
  const char *what = g->mode == HL_GROUP_CROSS_REPLICA ? "replica" : "partition";
  int count = inst->attrs.source_target_count;
  const hl_source_target_t *pairs = inst->attrs.source_target_pairs;
  // The combined form with several slices per buffer: the pairs split into
  // `slots` equal consecutive parts, each a permutation of its own.
  int slots = hl_instruction_permute_slot_count(inst);
  if (slots < 1 || count % slots != 0)
    return HL_INVALID("%s: %d source_target_pairs do not split into %d equal parts (one per "
                      "slice of its start indices)", hl_instruction_location(inst), count, slots);
  int per = count / slots;
  bool *seen_src = hl_calloc((size_t)n, sizeof(bool)), *seen_dst = hl_calloc((size_t)n, 1);
  hl_status_t st = NULL;
  if (!seen_src || !seen_dst) st = HL_OOM();
  for (int i = 0; i < count && !st; i++) {
    if (per > 0 && i % per == 0) {
      memset(seen_src, 0, (size_t)n * sizeof(bool));
      memset(seen_dst, 0, (size_t)n);
    }
    int64_t s = pairs[i].source, t = pairs[i].target;
    if (s < 0 || s >= n || t < 0 || t >= n) {
      int64_t max_id = 0;
      for (int j = 0; j < count; j++) {
        if (pairs[j].source > max_id) max_id = pairs[j].source;
        if (pairs[j].target > max_id) max_id = pairs[j].target;
      }
      char advice[256] = "";
      if (s >= 0 && t >= 0) grid_advice(what, max_id, R, P, advice, sizeof(advice));
      st = HL_INVALID("%s: source_target_pairs[%d] = {%lld,%lld} is out of range: the grid has "
                      "%lld %s%s (mode %s)%s%s",
                      hl_instruction_location(inst), i, (long long)s, (long long)t,
                      (long long)n, what, n == 1 ? "" : "s", hl_group_mode_name(g->mode),
                      advice[0] ? "; " : "", advice);
    } else if (seen_src[s])
      st = HL_INVALID("%s: source %lld appears twice in source_target_pairs",
                      hl_instruction_location(inst), (long long)s);
    else if (seen_dst[t])
      st = HL_INVALID("%s: target %lld appears twice in source_target_pairs",
                      hl_instruction_location(inst), (long long)t);
    if (!st) seen_src[s] = seen_dst[t] = true;
  }
  hl_free(seen_src);
  hl_free(seen_dst);
  if (st) return st;
  // Part-major order: part k's groups are the k-th of `slots` equal runs.
  int64_t outer = g->mode == HL_GROUP_CROSS_REPLICA ? P : R;
  for (int64_t ko = 0; ko < slots * outer; ko++) {
    int64_t k = ko / outer, o = ko % outer;
    for (int64_t i = k * per; i < (k + 1) * per; i++) {
      int64_t s = pairs[i].source, t = pairs[i].target;
      HL_RETURN_IF_ERROR(begin_group(b));
      if (g->mode == HL_GROUP_CROSS_REPLICA) {
        HL_RETURN_IF_ERROR(add_rank(b, s * P + o));
        HL_RETURN_IF_ERROR(add_rank(b, t * P + o));
      } else {
        HL_RETURN_IF_ERROR(add_rank(b, o * P + s));
        HL_RETURN_IF_ERROR(add_rank(b, o * P + t));
      }
    }
  }
  return NULL;
}

// Checks the written groups (ids of the mode's kind) and expands them into
// process groups.
static hl_status_t resolve_groups(const hl_instruction_t *inst, int64_t R, int64_t P,
                                  const hl_i64_list_t *groups, int count, builder_t *b) {
  hl_process_groups_t *g = b->g;
  const char *loc = hl_instruction_location(inst);
  int64_t n = g->mode == HL_GROUP_CROSS_PARTITION ? P
              : g->mode == HL_GROUP_FLATTENED_IDS ? R * P
                                                  : R;
  const char *what = g->mode == HL_GROUP_CROSS_PARTITION ? "partition"
                     : g->mode == HL_GROUP_FLATTENED_IDS ? "process"
                                                         : "replica";
  // Empty: one group of every id of the mode.
  hl_i64_list_t all = {0};
  if (count == 0) {
    if (g->mode == HL_GROUP_FLATTENED_IDS)
      return HL_INVALID("%s: mode flattened_ids (use_global_device_ids=true) needs explicit "
                        "replica_groups, got none", loc);
    all.v = hl_malloc((size_t)n * sizeof(int64_t));
    if (!all.v) return HL_OOM();
    all.n = (int)n;
    for (int64_t i = 0; i < n; i++) all.v[i] = i;
    groups = &all;
    count = 1;
  }
  hl_status_t st = NULL;
  bool *seen = hl_calloc((size_t)n, sizeof(bool));
  if (!seen) st = HL_OOM();
  int64_t covered = 0;
  for (int k = 0; k < count && !st; k++) {
    if (groups[k].n == 0) {
      st = HL_INVALID("%s: replica group %d is empty", loc, k);
      break;
    }
    if (needs_equal_sizes(inst->opcode) && groups[k].n != groups[0].n) {
      st = HL_INVALID("%s: replica groups must all have the same size for %s, but group 0 has "
                      "%d members and group %d has %d", loc, hl_opcode_name(inst->opcode),
                      groups[0].n, k, groups[k].n);
      break;
    }
    for (int i = 0; i < groups[k].n; i++) {
      int64_t id = groups[k].v[i];
      if (id < 0 || id >= n) {
        char advice[256] = "";
        if (id >= 0) grid_advice(what, max_written_id(groups, count), R, P, advice, sizeof(advice));
        const char *plural = n == 1 ? "" : strcmp(what, "process") == 0 ? "es" : "s";
        st = HL_INVALID("%s: %s id %lld in replica group %d is out of range: mode %s has %lld "
                        "%s%s (grid %lldx%lld)%s%s", loc, what, (long long)id, k,
                        hl_group_mode_name(g->mode), (long long)n, what, plural, (long long)R,
                        (long long)P, advice[0] ? "; " : "", advice);
        break;
      }
      if (seen[id]) {
        st = HL_INVALID("%s: %s id %lld appears more than once in replica_groups", loc, what,
                        (long long)id);
        break;
      }
      seen[id] = true;
      covered++;
    }
  }
  if (!st && covered != n && inst->opcode != HL_OP_COLLECTIVE_BROADCAST) {
    int64_t missing = 0;
    while (missing < n && seen[missing]) missing++;
    st = HL_INVALID("%s: replica_groups do not cover every %s: %s id %lld (of %lld, mode %s) "
                    "is in no group", loc, what, what, (long long)missing, (long long)n,
                    hl_group_mode_name(g->mode));
  }
  hl_free(seen);
  for (int k = 0; k < count && !st; k++) {
    const hl_i64_list_t *grp = &groups[k];
    switch (g->mode) {
      case HL_GROUP_CROSS_REPLICA:
        for (int64_t p = 0; p < P && !st; p++) {
          st = begin_group(b);
          for (int i = 0; i < grp->n && !st; i++) st = add_rank(b, grp->v[i] * P + p);
        }
        break;
      case HL_GROUP_CROSS_PARTITION:
        for (int64_t r = 0; r < R && !st; r++) {
          st = begin_group(b);
          for (int i = 0; i < grp->n && !st; i++) st = add_rank(b, r * P + grp->v[i]);
        }
        break;
      case HL_GROUP_CROSS_REPLICA_AND_PARTITION:
        st = begin_group(b);
        for (int64_t p = 0; p < P && !st; p++)
          for (int i = 0; i < grp->n && !st; i++) st = add_rank(b, grp->v[i] * P + p);
        break;
      case HL_GROUP_FLATTENED_IDS:
        st = begin_group(b);
        for (int i = 0; i < grp->n && !st; i++) st = add_rank(b, grp->v[i]);
        break;
    }
  }
  hl_free(all.v);
  return st;
}

hl_status_t hl_process_groups_resolve(const hl_instruction_t *inst, int64_t num_replicas,
                                      int64_t num_partitions, hl_process_groups_t *out) {
  memset(out, 0, sizeof(*out));
  int64_t R = num_replicas > 0 ? num_replicas : 1, P = num_partitions > 0 ? num_partitions : 1;
  if (R * P > (1 << 24))
    return HL_INVALID("%s: grid %lldx%lld is too large", hl_instruction_location(inst),
                      (long long)R, (long long)P);
  HL_RETURN_IF_ERROR(hl_group_mode_of(inst, &out->mode));
  out->is_permute = is_permute(inst->opcode);
  builder_t b = {.g = out};
  hl_status_t st;
  if (out->is_permute) {
    st = resolve_permute(inst, R, P, &b);
  } else {
    hl_i64_list_t *groups = NULL;
    int count = 0;
    st = hl_replica_groups_expand(&inst->attrs.replica_groups, &groups, &count);
    if (st) {
      st = hl_status_annotate(st, "%s: replica_groups", hl_instruction_location(inst));
    } else {
      st = resolve_groups(inst, R, P, groups, count, &b);
    }
    for (int k = 0; k < count; k++) hl_i64_list_deinit(&groups[k]);
    hl_free(groups);
  }
  if (!st && !out->offsets) {  // no groups at all (permute without pairs)
    out->offsets = hl_calloc(1, sizeof(int));
    if (!out->offsets) st = HL_OOM();
  }
  if (st) hl_process_groups_deinit(out);
  return st;
}

int hl_process_groups_find(const hl_process_groups_t *g, int rank, int *out_index) {
  if (out_index) *out_index = -1;
  for (int k = 0; k < g->group_count; k++)
    for (int i = g->offsets[k]; i < g->offsets[k + 1]; i++)
      if (g->ranks[i] == rank) {
        if (out_index) *out_index = i - g->offsets[k];
        return k;
      }
  return -1;
}

int hl_process_groups_permute_source(const hl_process_groups_t *g, int rank) {
  for (int k = 0; k < g->group_count; k++)
    if (g->ranks[g->offsets[k] + 1] == rank) return g->ranks[g->offsets[k]];
  return -1;
}

int hl_process_groups_permute_target(const hl_process_groups_t *g, int rank) {
  for (int k = 0; k < g->group_count; k++)
    if (g->ranks[g->offsets[k]] == rank) return g->ranks[g->offsets[k] + 1];
  return -1;
}

bool hl_process_groups_equal(const hl_process_groups_t *a, const hl_process_groups_t *b) {
  if (a->group_count != b->group_count) return false;
  if (memcmp(a->offsets, b->offsets, (size_t)(a->group_count + 1) * sizeof(int)) != 0)
    return false;
  int n = a->offsets[a->group_count];
  return n == 0 || memcmp(a->ranks, b->ranks, (size_t)n * sizeof(int)) == 0;
}
