// Resharding: moves a value between two shardings with all-gathers along the
// dimensions whose tiling differs, then one dynamic-slice (offsets looked up
// by partition-id) for the dimensions the target splits (a finer split of
// tiles a device already holds is cut from its shard, nothing gathered). Every step is
// exact: gathers drop the padding of uneven tiles, slices pad with zeros.
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/dtype.h"
#include "runtime/spmd/spmd_internal.h"

const char *spmd_name(spmd_ctx_t *c, const char *base) {
  if (c->name_count == c->name_cap) {
    int cap = c->name_cap ? c->name_cap * 2 : 64;
    char **v = hl_realloc(c->names, (size_t)cap * sizeof(*v));
    if (!v) return NULL;
    c->names = v;
    c->name_cap = cap;
  }
  char buf[256];
  snprintf(buf, sizeof(buf), "%.200s.spmd%lld", base, (long long)c->counter++);
  char *s = hl_malloc(strlen(buf) + 1);
  if (!s) return NULL;
  strcpy(s, buf);
  c->names[c->name_count++] = s;
  return s;
}

void spmd_local_dims(const hl_shape_t *g, const hl_spmd_sharding_t *s, int64_t *dims) {
  for (int d = 0; d < g->rank; d++) {
    int64_t t = s->kind == HL_SPMD_TILED ? s->tiles[d] : 1;
    dims[d] = (g->dims[d] + t - 1) / t;
  }
}

void spmd_shape_text(hl_dtype_t dt, int rank, const int64_t *dims, hl_strbuf_t *out) {
  hl_shape_t s = hl_shape_array(dt, rank, dims);
  hl_shape_print(&s, false, out);
}

static int64_t bytes_of(hl_dtype_t dt, int rank, const int64_t *dims) {
  int64_t n = (int64_t)hl_dtype_size(dt);
  for (int d = 0; d < rank; d++) n *= dims[d];
  return n;
}

int64_t spmd_local_bytes(const hl_shape_t *g, const hl_spmd_sharding_t *s) {
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(g, s, dims);
  return bytes_of(g->dtype, g->rank, dims);
}

static const char *zero_text(hl_dtype_t dt) {
  if (dt == HL_PRED) return "false";
  if (hl_dtype_is_complex(dt)) return "(0, 0)";
  return "0";
}

// "name = shape " prefix of an emitted line.
static void begin_line(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank, const int64_t *dims) {
  hl_strbuf_appendf(&c->body, "  %s = ", name);
  spmd_shape_text(dt, rank, dims, &c->body);
  hl_strbuf_append(&c->body, " ");
}

static void append_groups(hl_strbuf_t *sb, const int64_t *groups, int count, int size) {
  hl_strbuf_append(sb, "{");
  for (int g = 0; g < count; g++) {
    hl_strbuf_append(sb, g ? ",{" : "{");
    for (int i = 0; i < size; i++)
      hl_strbuf_appendf(sb, "%s%lld", i ? "," : "", (long long)groups[g * size + i]);
    hl_strbuf_append(sb, "}");
  }
  hl_strbuf_append(sb, "}");
}

// The groups of an inserted collective as global device ids
// (use_global_device_ids): replica r's partitions are r * n .. r * n + n - 1,
// and every replica gets the same groups over its own partitions.
static void append_body_groups(spmd_ctx_t *c, const int64_t *groups, int count, int size) {
  int replicas = c->replicas > 1 ? c->replicas : 1;
  hl_strbuf_append(&c->body, "{");
  for (int r = 0; r < replicas; r++)
    for (int g = 0; g < count; g++) {
      hl_strbuf_append(&c->body, r || g ? ",{" : "{");
      for (int i = 0; i < size; i++)
        hl_strbuf_appendf(&c->body, "%s%lld", i ? "," : "", (long long)(groups[g * size + i] + (int64_t)r * c->n));
      hl_strbuf_append(&c->body, "}");
    }
  hl_strbuf_append(&c->body, "}");
}

static void ensure_pid(spmd_ctx_t *c) {
  if (c->have_pid) return;
  c->have_pid = true;
  hl_strbuf_append(&c->body, "  spmd.partition_id = u32[] partition-id()\n");
  hl_strbuf_append(&c->body, "  spmd.partition_id.s32 = s32[] convert(spmd.partition_id)\n");
  hl_strbuf_append(&c->body, "  spmd.zero_index = s32[] constant(0)\n");
}

// This partition's entry of table[0..n): constant table, dynamic-slice by
// partition-id, reshape to a scalar.
static const char *partition_lookup(spmd_ctx_t *c, const int64_t *table) {
  ensure_pid(c);
  const char *t = spmd_name(c, "offsets"), *ts = spmd_name(c, "offset"), *o = spmd_name(c, "offset");
  if (!t || !ts || !o) return NULL;
  hl_strbuf_appendf(&c->body, "  %s = s32[%d] constant({", t, c->n);
  for (int p = 0; p < c->n; p++) hl_strbuf_appendf(&c->body, "%s%lld", p ? ", " : "", (long long)table[p]);
  hl_strbuf_append(&c->body, "})\n");
  hl_strbuf_appendf(&c->body, "  %s = s32[1] dynamic-slice(%s, spmd.partition_id.s32), dynamic_slice_sizes={1}\n", ts, t);
  hl_strbuf_appendf(&c->body, "  %s = s32[] reshape(%s)\n", o, ts);
  return o;
}

const char *spmd_partition_lookup(spmd_ctx_t *c, const int64_t *table) { return partition_lookup(c, table); }

static hl_status_t all_gather(spmd_ctx_t *c, const char **v, hl_dtype_t dt, int rank, int64_t *dims,
                              const hl_spmd_sharding_t *s, int d) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, 1u << d, groups, &count, &size));
  dims[d] *= size;
  int64_t bytes = bytes_of(dt, rank, dims);
  c->bytes += bytes;
  if (c->dry) return NULL;
  const char *name = spmd_name(c, "all-gather");
  if (!name) return HL_OOM();
  begin_line(c, name, dt, rank, dims);
  hl_strbuf_appendf(&c->body, "all-gather(%s), channel_id=%lld, replica_groups=", *v, (long long)(c->inserted++, ++c->channel));
  append_body_groups(c, groups, count, size);
  hl_strbuf_appendf(&c->body, ", dimensions={%d}, use_global_device_ids=true\n", d);
  hl_strbuf_appendf(&c->explain, "      all-gather dim %d over %d partitions, groups ", d, size);
  append_groups(&c->explain, groups, count, size);
  hl_strbuf_appendf(&c->explain, ": %lld bytes per partition\n", (long long)bytes);
  *v = name;
  return NULL;
}

// Keeps the first `keep[d]` elements of every dimension.
static hl_status_t slice_to(spmd_ctx_t *c, const char **v, hl_dtype_t dt, int rank, int64_t *dims,
                            const int64_t *keep) {
  if (c->dry) {
    memcpy(dims, keep, (size_t)rank * sizeof(*dims));
    return NULL;
  }
  const char *name = spmd_name(c, "slice");
  if (!name) return HL_OOM();
  begin_line(c, name, dt, rank, keep);
  hl_strbuf_appendf(&c->body, "slice(%s), slice={", *v);
  for (int d = 0; d < rank; d++)
    hl_strbuf_appendf(&c->body, "%s[0:%lld]", d ? ", " : "", (long long)keep[d]);
  hl_strbuf_append(&c->body, "}\n");
  memcpy(dims, keep, (size_t)rank * sizeof(*dims));
  *v = name;
  return NULL;
}

// A maximal value (held by device k only) to every device: all-gather of
// the [1, dims] reshape over all partitions, then row k.
static hl_status_t from_maximal(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t k) {
  int64_t dims[HL_MAX_RANK + 1];
  dims[0] = 1;
  for (int d = 0; d < g->rank; d++) dims[d + 1] = g->dims[d];
  int64_t bytes = bytes_of(g->dtype, g->rank, g->dims) * c->n;
  c->bytes += bytes;
  if (c->dry) return NULL;
  if (g->rank + 1 > HL_MAX_RANK) return HL_UNIMPL("maximal sharding of a rank-%d array", g->rank);
  const char *r = spmd_name(c, "reshape"), *ag = spmd_name(c, "all-gather"), *sl = spmd_name(c, "slice"),
             *out = spmd_name(c, "reshape");
  if (!r || !ag || !sl || !out) return HL_OOM();
  begin_line(c, r, g->dtype, g->rank + 1, dims);
  hl_strbuf_appendf(&c->body, "reshape(%s)\n", *v);
  dims[0] = c->n;
  begin_line(c, ag, g->dtype, g->rank + 1, dims);
  hl_strbuf_appendf(&c->body, "all-gather(%s), channel_id=%lld, replica_groups=", r, (long long)(c->inserted++, ++c->channel));
  int64_t all[HL_SPMD_MAX_DEVICES];
  for (int p = 0; p < c->n; p++) all[p] = p;
  append_body_groups(c, all, 1, c->n);
  hl_strbuf_append(&c->body, ", dimensions={0}, use_global_device_ids=true\n");
  dims[0] = 1;
  begin_line(c, sl, g->dtype, g->rank + 1, dims);
  hl_strbuf_appendf(&c->body, "slice(%s), slice={[%lld:%lld]", ag, (long long)k, (long long)k + 1);
  for (int d = 0; d < g->rank; d++) hl_strbuf_appendf(&c->body, ", [0:%lld]", (long long)g->dims[d]);
  hl_strbuf_append(&c->body, "}\n");
  begin_line(c, out, g->dtype, g->rank, g->dims);
  hl_strbuf_appendf(&c->body, "reshape(%s)\n", sl);
  hl_strbuf_appendf(&c->explain, "      all-gather from maximal device %lld over %d partitions: %lld bytes per partition\n",
                    (long long)k, c->n, (long long)bytes);
  *v = out;
  return NULL;
}

// Moves a split from dimension a to dimension b within the same device
// groups (device p's tile along a in the source is its tile along b in the
// target): reshape b into [t, B/t], all-to-all along the t axis (member i
// receives everyone's i-th piece, stacked by sender), move the stacked axis
// in front of a and merge it into a. Each partition sends and receives its
// own shard's size instead of gathering t shards.
static hl_status_t all_to_all(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims,
                              const hl_spmd_sharding_t *s, int a, int b) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, 1u << a, groups, &count, &size));
  int rank = g->rank, t = size;
  int64_t bytes = bytes_of(g->dtype, rank, dims);
  c->bytes += bytes;
  int64_t out_dims[HL_MAX_RANK];
  memcpy(out_dims, dims, sizeof(out_dims));
  out_dims[a] *= t;
  out_dims[b] /= t;
  if (!c->dry) {
    // [.., b -> (t, B/t), ..]
    int64_t split[HL_MAX_RANK + 1];
    int q = 0;
    for (int d = 0; d < rank; d++) {
      if (d == b) split[q++] = t, split[q++] = dims[b] / t;
      else split[q++] = dims[d];
    }
    // The t axis sits at position b; after the all-to-all it indexes the
    // sender, whose tile along a it carries. Put it right before a.
    int perm[HL_MAX_RANK + 1], p = 0, apos = a < b ? a : a + 1;
    for (int d = 0; d < rank + 1; d++) {
      if (d == b) continue;
      if (d == apos) perm[p++] = b;
      perm[p++] = d;
    }
    int64_t tdims[HL_MAX_RANK + 1];
    for (int d = 0; d < rank + 1; d++) tdims[d] = split[perm[d]];
    const char *r = spmd_name(c, "reshape"), *x = spmd_name(c, "all-to-all"), *tr = spmd_name(c, "transpose"),
               *out = spmd_name(c, "reshape");
    if (!r || !x || !tr || !out) return HL_OOM();
    begin_line(c, r, g->dtype, rank + 1, split);
    hl_strbuf_appendf(&c->body, "reshape(%s)\n", *v);
    begin_line(c, x, g->dtype, rank + 1, split);
    hl_strbuf_appendf(&c->body, "all-to-all(%s), channel_id=%lld, replica_groups=", r, (long long)(c->inserted++, ++c->channel));
    // all-to-all with a channel groups partition ids within each replica.
    append_groups(&c->body, groups, count, size);
    hl_strbuf_appendf(&c->body, ", dimensions={%d}, use_global_device_ids=true\n", b);
    begin_line(c, tr, g->dtype, rank + 1, tdims);
    hl_strbuf_appendf(&c->body, "transpose(%s), dimensions={", x);
    for (int d = 0; d < rank + 1; d++) hl_strbuf_appendf(&c->body, "%s%d", d ? "," : "", perm[d]);
    hl_strbuf_append(&c->body, "}\n");
    begin_line(c, out, g->dtype, rank, out_dims);
    hl_strbuf_appendf(&c->body, "reshape(%s)\n", tr);
    hl_strbuf_appendf(&c->explain, "      all-to-all from dim %d to dim %d over %d partitions, groups ", a, b, size);
    append_groups(&c->explain, groups, count, size);
    hl_strbuf_appendf(&c->explain, ": %lld bytes per partition\n", (long long)bytes);
    *v = out;
  }
  memcpy(dims, out_dims, sizeof(out_dims));
  return NULL;
}

// The same tiles on other devices: every device receives its target tile
// from a device that holds it (the i-th holder of a tile sends to its i-th
// needer, so sources and targets are each used once, self pairs included)
// with one collective-permute of one shard.
static hl_status_t permute(spmd_ctx_t *c, const char **v, const hl_shape_t *g, const int64_t *dims,
                           const hl_spmd_sharding_t *from, const hl_spmd_sharding_t *to) {
  int64_t bytes = bytes_of(g->dtype, g->rank, dims);
  c->bytes += bytes;
  if (c->dry) return NULL;
  int n = from->num_devices;
  int64_t src_of[HL_SPMD_MAX_DEVICES];
  int used[HL_SPMD_MAX_DEVICES] = {0};
  for (int p = 0; p < n; p++) {  // p needs to's tile; take the first unused holder
    src_of[p] = -1;
    for (int q = 0; q < n && src_of[p] < 0; q++) {
      if (used[q]) continue;
      bool same = true;
      for (int d = 0; d < g->rank && same; d++) same = from->coords[q][d] == to->coords[p][d];
      if (same) {
        src_of[p] = q;
        used[q] = 1;
      }
    }
    if (src_of[p] < 0) return HL_INTERNAL_ERROR("resharding: no holder left for a tile");
  }
  const char *name = spmd_name(c, "collective-permute");
  if (!name) return HL_OOM();
  begin_line(c, name, g->dtype, g->rank, dims);
  hl_strbuf_appendf(&c->body, "collective-permute(%s), channel_id=%lld, source_target_pairs={", *v,
                    (long long)(c->inserted++, ++c->channel));
  for (int p = 0; p < n; p++) hl_strbuf_appendf(&c->body, "%s{%lld,%d}", p ? "," : "", (long long)src_of[p], p);
  hl_strbuf_append(&c->body, "}\n");
  hl_strbuf_appendf(&c->explain, "      collective-permute of one shard: %lld bytes per partition\n", (long long)bytes);
  *v = name;
  return NULL;
}

// Whether the split of cur's dimension a can move to dimension b by one
// all-to-all: same device groups and tile order, even sizes, b unsplit.
static bool can_all_to_all(const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, const hl_shape_t *g,
                           int a, int b) {
  int64_t t = cur->tiles[a];
  if (a == b || t <= 1 || cur->tiles[b] != 1 || tgt->tiles[b] != t || hl_spmd_dim_equal(cur, a, tgt, a)) return false;
  if (g->dims[a] % t || g->dims[b] % t) return false;
  for (int p = 0; p < cur->num_devices; p++)
    if (cur->coords[p][a] != tgt->coords[p][b]) return false;
  // The other dimensions must already agree, or their gathers would mix groups.
  for (int d = 0; d < cur->rank; d++)
    if (d != a && d != b && !hl_spmd_dim_equal(cur, d, tgt, d) && cur->tiles[d] > 1) return false;
  return true;
}

hl_status_t spmd_reshard(spmd_ctx_t *c, const char *name, const hl_shape_t *g,
                         const hl_spmd_sharding_t *from, const hl_spmd_sharding_t *to,
                         const char **out) {
  hl_spmd_sharding_t cur = *from, tgt = *to;
  *out = name;
  if (g->rank == 0 || tgt.kind == HL_SPMD_MAXIMAL) hl_spmd_replicated(g->rank, c->n, &tgt);
  if (g->rank == 0 && cur.kind == HL_SPMD_TILED) return NULL;
  if (hl_spmd_equal(&cur, &tgt)) return NULL;
  const char *v = name;
  if (cur.kind == HL_SPMD_MAXIMAL) {
    HL_RETURN_IF_ERROR(from_maximal(c, &v, g, cur.maximal_device));
    hl_spmd_replicated(g->rank, c->n, &cur);
  }
  int rank = g->rank;
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(g, &cur, dims);
  bool same_tiles = cur.kind == HL_SPMD_TILED && hl_spmd_tile_count(&cur) > 1;
  for (int d = 0; d < rank; d++) same_tiles &= cur.tiles[d] == tgt.tiles[d];
  if (same_tiles) {  // only the devices differ
    HL_RETURN_IF_ERROR(permute(c, &v, g, dims, &cur, &tgt));
    *out = v;
    return NULL;
  }
  for (int a = 0; a < rank && rank < HL_MAX_RANK; a++)
    for (int b = 0; b < rank; b++) {
      if (!can_all_to_all(&cur, &tgt, g, a, b)) continue;
      HL_RETURN_IF_ERROR(all_to_all(c, &v, g, dims, &cur, a, b));
      cur.tiles[b] = cur.tiles[a];
      for (int p = 0; p < cur.num_devices; p++) cur.coords[p][b] = cur.coords[p][a];
      hl_spmd_unsplit(&cur, a);
      break;
    }
  // A finer split of the same dimension whose tiles lie inside the ones
  // each device holds (even sizes): cut locally, nothing to gather.
  uint32_t refine = 0;
  int64_t refine_k[HL_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    refine_k[d] = 1;
    if (cur.kind != HL_SPMD_TILED || cur.tiles[d] <= 1 || tgt.tiles[d] <= cur.tiles[d] ||
        tgt.tiles[d] % cur.tiles[d] || g->dims[d] % tgt.tiles[d])
      continue;
    int64_t k = tgt.tiles[d] / cur.tiles[d];
    bool inside = true;
    for (int p = 0; p < c->n && inside; p++) inside = tgt.coords[p][d] / k == cur.coords[p][d];
    if (inside) {
      refine |= 1u << d;
      refine_k[d] = k;
    }
  }
  for (int d = 0; d < rank; d++) {
    if (cur.tiles[d] == 1 || hl_spmd_dim_equal(&cur, d, &tgt, d) || (refine >> d & 1)) continue;
    HL_RETURN_IF_ERROR(all_gather(c, &v, g->dtype, rank, dims, &cur, d));
    hl_spmd_unsplit(&cur, d);
    if (dims[d] > g->dims[d]) {  // uneven tiles: drop the padding
      int64_t keep[HL_MAX_RANK];
      memcpy(keep, dims, sizeof(keep));
      keep[d] = g->dims[d];
      HL_RETURN_IF_ERROR(slice_to(c, &v, g->dtype, rank, dims, keep));
    }
  }
  uint32_t slice_mask = refine;
  for (int d = 0; d < rank; d++)
    if (tgt.tiles[d] > 1 && cur.tiles[d] == 1) slice_mask |= 1u << d;
  if (slice_mask && !c->dry) {
    int64_t shard[HL_MAX_RANK], padded[HL_MAX_RANK];
    bool pad = false;
    spmd_local_dims(g, &tgt, shard);
    for (int d = 0; d < rank; d++) {
      padded[d] = (slice_mask & ~refine) >> d & 1 ? shard[d] * tgt.tiles[d] : dims[d];
      pad |= padded[d] != dims[d];
    }
    if (pad) {
      const char *z = spmd_name(c, "zero"), *p = spmd_name(c, "pad");
      if (!z || !p) return HL_OOM();
      hl_strbuf_appendf(&c->body, "  %s = %s[] constant(%s)\n", z, hl_dtype_name(g->dtype), zero_text(g->dtype));
      begin_line(c, p, g->dtype, rank, padded);
      hl_strbuf_appendf(&c->body, "pad(%s, %s), padding=", v, z);
      for (int d = 0; d < rank; d++)
        hl_strbuf_appendf(&c->body, "%s0_%lld", d ? "x" : "", (long long)(padded[d] - dims[d]));
      hl_strbuf_append(&c->body, "\n");
      v = p;
    }
    const char *offs[HL_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      if (!(slice_mask >> d & 1)) {
        offs[d] = NULL;
        continue;
      }
      int64_t table[HL_SPMD_MAX_DEVICES];
      for (int p = 0; p < c->n; p++)  // a refined dimension: the offset within the local tile
        table[p] = (refine >> d & 1 ? tgt.coords[p][d] % refine_k[d] : tgt.coords[p][d]) * shard[d];
      offs[d] = partition_lookup(c, table);
      if (!offs[d]) return HL_OOM();
    }
    for (int d = 0; d < rank; d++) shard[d] = slice_mask >> d & 1 ? shard[d] : dims[d];
    const char *ds = spmd_name(c, "dynamic-slice");
    if (!ds) return HL_OOM();
    begin_line(c, ds, g->dtype, rank, shard);
    hl_strbuf_appendf(&c->body, "dynamic-slice(%s", v);
    for (int d = 0; d < rank; d++) hl_strbuf_appendf(&c->body, ", %s", offs[d] ? offs[d] : "spmd.zero_index");
    hl_strbuf_append(&c->body, "), dynamic_slice_sizes={");
    for (int d = 0; d < rank; d++) hl_strbuf_appendf(&c->body, "%s%lld", d ? "," : "", (long long)shard[d]);
    hl_strbuf_append(&c->body, "}\n");
    hl_strbuf_appendf(&c->explain, "      dynamic-slice by partition-id (dimensions mask 0x%x): 0 bytes\n", slice_mask);
    v = ds;
  }
  *out = v;
  return NULL;
}

const char *spmd_add_reducer(spmd_ctx_t *c, hl_dtype_t dt) {
  static _Thread_local char name[64];
  snprintf(name, sizeof(name), "spmd.add.%s", hl_dtype_name(dt));
  if (!c->dry && (int)dt >= 0 && (int)dt < 64 && !c->reducer_done[dt]) {
    c->reducer_done[dt] = true;
    const char *t = hl_dtype_name(dt);
    const char *op = dt == HL_PRED ? "or" : "add";
    hl_strbuf_appendf(&c->reducers,
                      "%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n\n",
                      name, t, t, t, op);
  }
  return name;
}

hl_status_t spmd_all_reduce(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank,
                            const int64_t *dims, const hl_spmd_sharding_t *s, uint32_t dims_mask,
                            const char *reducer, const char **out) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, dims_mask, groups, &count, &size));
  int64_t bytes = bytes_of(dt, rank, dims);
  c->bytes += bytes;
  *out = name;
  if (c->dry) return NULL;
  const char *v = spmd_name(c, "all-reduce");
  if (!v) return HL_OOM();
  begin_line(c, v, dt, rank, dims);
  hl_strbuf_appendf(&c->body, "all-reduce(%s), channel_id=%lld, replica_groups=", name, (long long)(c->inserted++, ++c->channel));
  append_body_groups(c, groups, count, size);
  hl_strbuf_appendf(&c->body, ", use_global_device_ids=true, to_apply=%s\n", reducer);
  hl_strbuf_appendf(&c->explain, "      all-reduce over %d partitions, groups ", size);
  append_groups(&c->explain, groups, count, size);
  hl_strbuf_appendf(&c->explain, ": %lld bytes per partition\n", (long long)bytes);
  *out = v;
  return NULL;
}

hl_status_t spmd_reduce_scatter(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank, const int64_t *dims,
                                const hl_spmd_sharding_t *s, uint32_t dims_mask, int scatter_dim,
                                const char *reducer, const char **out) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, dims_mask, groups, &count, &size));
  int64_t rdims[HL_MAX_RANK];
  for (int d = 0; d < rank; d++) rdims[d] = dims[d];
  if (rdims[scatter_dim] % size) return HL_INTERNAL_ERROR("reduce-scatter of an uneven dimension");
  rdims[scatter_dim] /= size;
  int64_t bytes = bytes_of(dt, rank, rdims);
  c->bytes += bytes;
  *out = name;
  if (c->dry) return NULL;
  const char *v = spmd_name(c, "reduce-scatter");
  if (!v) return HL_OOM();
  begin_line(c, v, dt, rank, rdims);
  hl_strbuf_appendf(&c->body, "reduce-scatter(%s), channel_id=%lld, replica_groups=", name,
                    (long long)(c->inserted++, ++c->channel));
  append_body_groups(c, groups, count, size);
  hl_strbuf_appendf(&c->body, ", use_global_device_ids=true, dimensions={%d}, to_apply=%s\n", scatter_dim, reducer);
  hl_strbuf_appendf(&c->explain, "      reduce-scatter dim %d over %d partitions, groups ", scatter_dim, size);
  append_groups(&c->explain, groups, count, size);
  hl_strbuf_appendf(&c->explain, ": %lld bytes per partition\n", (long long)bytes);
  *out = v;
  return NULL;
}
