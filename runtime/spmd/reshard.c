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

// Pads every dimension at its end with zeros up to `padded`.
static hl_status_t pad_to(spmd_ctx_t *c, const char **v, hl_dtype_t dt, int rank, int64_t *dims,
                          const int64_t *padded) {
  bool pad = false;
  for (int d = 0; d < rank; d++) pad |= padded[d] != dims[d];
  if (!pad) return NULL;
  if (!c->dry) {
    const char *z = spmd_name(c, "zero"), *p = spmd_name(c, "pad");
    if (!z || !p) return HL_OOM();
    hl_strbuf_appendf(&c->body, "  %s = %s[] constant(%s)\n", z, hl_dtype_name(dt), zero_text(dt));
    begin_line(c, p, dt, rank, padded);
    hl_strbuf_appendf(&c->body, "pad(%s, %s), padding=", *v, z);
    for (int d = 0; d < rank; d++)
      hl_strbuf_appendf(&c->body, "%s0_%lld", d ? "x" : "", (long long)(padded[d] - dims[d]));
    hl_strbuf_append(&c->body, "\n");
    *v = p;
  }
  memcpy(dims, padded, (size_t)rank * sizeof(*dims));
  return NULL;
}

// Moves a split from dimension a to dimension b within the same device
// groups (device p's tile along a in the source is its tile along b in the
// target): reshape b into [t, B/t], all-to-all along the t axis (member i
// receives everyone's i-th piece, stacked by sender), move the stacked axis
// in front of a and merge it into a. Each partition sends and receives its
// own shard's size instead of gathering t shards. Uneven sizes: b is padded
// to t pieces of the target's shard size first, and the padding the
// source's last tiles carried along a is sliced off after.
static hl_status_t all_to_all_in(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims,
                                 const int64_t *groups, int count, int size, int a, int b) {
  int rank = g->rank, t = size;
  if (dims[b] % t) {
    int64_t padded[HL_MAX_RANK];
    memcpy(padded, dims, sizeof(padded));
    padded[b] = (dims[b] + t - 1) / t * t;
    HL_RETURN_IF_ERROR(pad_to(c, v, g->dtype, rank, dims, padded));
  }
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
  if (dims[a] > g->dims[a]) {  // uneven source tiles: their padding is now at the end of a
    int64_t keep[HL_MAX_RANK];
    memcpy(keep, dims, sizeof(keep));
    keep[a] = g->dims[a];
    HL_RETURN_IF_ERROR(slice_to(c, v, g->dtype, rank, dims, keep));
  }
  return NULL;
}

// The all-to-all over s's groups along a (every tile of a in each group).
static hl_status_t all_to_all(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims,
                              const hl_spmd_sharding_t *s, int a, int b) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, 1u << a, groups, &count, &size));
  return all_to_all_in(c, v, g, dims, groups, count, size, a, b);
}

// Part of a split moved by all-to-all: cur splits a t ways (even), the
// target splits b (unsplit in cur) f ways, f a proper divisor of t. Devices
// whose tiles along a share the coarse index (tile / f) and everything else
// form groups ordered by the fine index (tile % f); an all-to-all in them
// hands the fine part of a's split to b, leaving a split t / f ways (each
// coarse tile is f fine ones in a row) and b f ways by the fine index. *mid:
// that sharding; false in *ok when no such pair of dimensions exists.
static hl_status_t partial_all_to_all(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims,
                                      const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt,
                                      hl_spmd_sharding_t *mid, bool *ok) {
  int rank = g->rank, n = cur->num_devices;
  *ok = false;
  for (int a = 0; a < rank && rank < HL_MAX_RANK; a++) {
    int64_t t = cur->tiles[a];
    if (t <= 2 || tgt->tiles[a] == t || g->dims[a] % t) continue;
    for (int b = 0; b < rank; b++) {
      int64_t f = tgt->tiles[b];
      if (b == a || cur->tiles[b] != 1 || f <= 1 || f >= t || t % f) continue;
      int64_t groups[HL_SPMD_MAX_DEVICES];
      bool used[HL_SPMD_MAX_DEVICES] = {false};
      int count = 0;
      bool found = true;
      for (int p = 0; p < n && found; p++) {
        if (used[p]) continue;
        for (int64_t i = 0; i < f && found; i++) {
          int q = 0;
          for (; q < n; q++) {
            if (used[q] || cur->coords[q][a] % f != i || cur->coords[q][a] / f != cur->coords[p][a] / f) continue;
            bool same = true;
            for (int d = 0; d < rank && same; d++) same = d == a || cur->coords[q][d] == cur->coords[p][d];
            if (same) break;
          }
          found = q < n;
          if (found) used[q] = true, groups[count * f + i] = q;
        }
        count++;
      }
      if (!found) continue;
      HL_RETURN_IF_ERROR(all_to_all_in(c, v, g, dims, groups, count, (int)f, a, b));
      *mid = *cur;
      mid->tiles[a] = t / f;
      mid->tiles[b] = f;
      for (int p = 0; p < n; p++) {
        mid->coords[p][b] = (uint8_t)(cur->coords[p][a] % f);
        mid->coords[p][a] = (uint8_t)(cur->coords[p][a] / f);
      }
      *ok = true;
      return NULL;
    }
  }
  return NULL;
}

// Whether target dimension d can be cut from what `cur` holds with no
// collective: cur does not split d (any size: the shard is padded with
// zeros), or the target splits it k times finer (even sizes) and every
// device's target tile lies inside the tile it holds. *k_out: k (1 for an
// unsplit source).
static bool cuttable(const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, const hl_shape_t *g, int d,
                     int64_t *k_out) {
  if (tgt->tiles[d] <= 1 || hl_spmd_dim_equal(cur, d, tgt, d)) return false;
  *k_out = 1;
  if (cur->tiles[d] == 1) return true;
  if (tgt->tiles[d] <= cur->tiles[d] || tgt->tiles[d] % cur->tiles[d] || g->dims[d] % tgt->tiles[d]) return false;
  int64_t k = tgt->tiles[d] / cur->tiles[d];
  for (int p = 0; p < cur->num_devices; p++)
    if (tgt->coords[p][d] / k != cur->coords[p][d]) return false;
  *k_out = k;
  return true;
}

// Cuts the target's tiles of the dimensions in `mask` (all cuttable) from
// the local block with one dynamic-slice, offsets looked up by
// partition-id; `cur` then holds the target's tiling there.
static hl_status_t cut(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims, hl_spmd_sharding_t *cur,
                       const hl_spmd_sharding_t *tgt, uint32_t mask) {
  int rank = g->rank;
  int64_t shard[HL_MAX_RANK], padded[HL_MAX_RANK], k[HL_MAX_RANK];
  spmd_local_dims(g, tgt, shard);
  for (int d = 0; d < rank; d++) {
    k[d] = 1;
    if (mask >> d & 1 && !cuttable(cur, tgt, g, d, &k[d])) return HL_INTERNAL_ERROR("resharding: dimension %d cannot be cut", d);
    padded[d] = mask >> d & 1 && cur->tiles[d] == 1 ? shard[d] * tgt->tiles[d] : dims[d];
  }
  HL_RETURN_IF_ERROR(pad_to(c, v, g->dtype, rank, dims, padded));
  int64_t out_dims[HL_MAX_RANK];
  for (int d = 0; d < rank; d++) out_dims[d] = mask >> d & 1 ? shard[d] : dims[d];
  if (!c->dry) {
    const char *offs[HL_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      offs[d] = NULL;
      if (!(mask >> d & 1)) continue;
      int64_t table[HL_SPMD_MAX_DEVICES];
      for (int p = 0; p < c->n; p++)  // a refined dimension: the offset within the local tile
        table[p] = (cur->tiles[d] == 1 ? tgt->coords[p][d] : tgt->coords[p][d] % k[d]) * shard[d];
      offs[d] = partition_lookup(c, table);
      if (!offs[d]) return HL_OOM();
    }
    const char *ds = spmd_name(c, "dynamic-slice");
    if (!ds) return HL_OOM();
    begin_line(c, ds, g->dtype, rank, out_dims);
    hl_strbuf_appendf(&c->body, "dynamic-slice(%s", *v);
    for (int d = 0; d < rank; d++) hl_strbuf_appendf(&c->body, ", %s", offs[d] ? offs[d] : "spmd.zero_index");
    hl_strbuf_append(&c->body, "), dynamic_slice_sizes={");
    for (int d = 0; d < rank; d++) hl_strbuf_appendf(&c->body, "%s%lld", d ? "," : "", (long long)out_dims[d]);
    hl_strbuf_append(&c->body, "}\n");
    hl_strbuf_appendf(&c->explain, "      dynamic-slice by partition-id (dimensions mask 0x%x): 0 bytes\n", mask);
    *v = ds;
  }
  memcpy(dims, out_dims, (size_t)rank * sizeof(*dims));
  for (int d = 0; d < rank; d++) {
    if (!(mask >> d & 1)) continue;
    cur->tiles[d] = tgt->tiles[d];
    for (int p = 0; p < cur->num_devices; p++) cur->coords[p][d] = tgt->coords[p][d];
  }
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
  for (int p = 0; p < n; p++) {  // a device that holds its tile already keeps it
    src_of[p] = -1;
    bool same = true;
    for (int d = 0; d < g->rank && same; d++) same = from->coords[p][d] == to->coords[p][d];
    if (same) src_of[p] = p, used[p] = 1;
  }
  for (int p = 0; p < n; p++) {  // p needs to's tile; take the first unused holder
    if (src_of[p] >= 0) continue;
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

// From the tile counts alone: which source dimension a hands its split to
// which target dimension b by an all-to-all (cur splits a t ways and not b,
// the target splits b t ways, or k * t ways: the all-to-all's tiles are then
// cut k times finer locally, and a differently; first free b in order).
static void pair_all_to_all(const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, int rank, int *dst) {
  bool taken[HL_MAX_RANK] = {false};
  for (int a = 0; a < rank; a++) {
    dst[a] = -1;
    int64_t t = cur->tiles[a];
    if (t <= 1 || tgt->tiles[a] == t || rank >= HL_MAX_RANK) continue;
    for (int b = 0; b < rank && dst[a] < 0; b++)
      if (b != a && !taken[b] && cur->tiles[b] == 1 && tgt->tiles[b] % t == 0) dst[a] = b, taken[b] = true;
  }
}

// Whether a device holding source tile x could end up with target tile y by
// the direct plan's local steps alone: along dimensions split alike x and y
// agree, an all-to-all pair carries x's index along a to y's along b, and a
// finer split keeps y inside x.
static bool tiles_match(const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, const hl_shape_t *g,
                        const int *dst, const uint8_t *x, const uint8_t *y) {
  for (int d = 0; d < g->rank; d++) {
    int64_t ct = cur->tiles[d], tt = tgt->tiles[d];
    if (ct > 1 && ct == tt && x[d] != y[d]) return false;
    if (dst[d] >= 0 && x[d] != y[dst[d]] / (tgt->tiles[dst[d]] / ct)) return false;
    if (ct > 1 && tt > ct && tt % ct == 0 && g->dims[d] % tt == 0 && y[d] / (tt / ct) != x[d]) return false;
  }
  return true;
}

// A sharding with `holders`' tiles (each held as often) put on the devices
// so that device p's tile matches `wanted`'s tile of p (tiles_match, with
// the source side first when `holders_are_source`). False when some device
// finds none (the plan does not apply).
static bool align(const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, const hl_shape_t *g, const int *dst,
                  bool holders_are_source, hl_spmd_sharding_t *out) {
  const hl_spmd_sharding_t *holders = holders_are_source ? cur : tgt, *wanted = holders_are_source ? tgt : cur;
  *out = *holders;
  bool used[HL_SPMD_MAX_DEVICES] = {false};
  for (int p = 0; p < holders->num_devices; p++) {
    int q = 0;
    for (; q < holders->num_devices; q++) {
      if (used[q]) continue;
      const uint8_t *x = holders_are_source ? holders->coords[q] : wanted->coords[p];
      const uint8_t *y = holders_are_source ? wanted->coords[p] : holders->coords[q];
      if (tiles_match(cur, tgt, g, dst, x, y)) break;
    }
    if (q == holders->num_devices) return false;
    used[q] = true;
    memcpy(out->coords[p], holders->coords[q], sizeof(out->coords[p]));
  }
  return true;
}

// An all-to-all from a (t ways) to b whose target splits b k * t ways: the
// receiver of piece i keeps only its k-th part of it. When every member of
// an all-to-all group wants the same part o (its target tile along b is i *
// k + o), each sender cuts that part out of every piece first (reshape b
// into [t, k, B/(t k)], dynamic-slice o by partition-id, merge back), so the
// all-to-all moves 1/k of the shard and lands on the target tiles (*fine).
static hl_status_t cut_before_all_to_all(spmd_ctx_t *c, const char **v, const hl_shape_t *g, int64_t *dims,
                                         const hl_spmd_sharding_t *cur, const hl_spmd_sharding_t *tgt, int a, int b,
                                         bool *fine) {
  int64_t t = cur->tiles[a], k = tgt->tiles[b] / t, rank = g->rank;
  *fine = false;
  if (k <= 1 || g->dims[b] % (t * k) || dims[b] != g->dims[b] || rank + 2 > HL_MAX_RANK) return NULL;
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(cur, 1u << a, groups, &count, &size));
  for (int q = 0; q < count; q++)
    for (int m = 1; m < size; m++)
      if (tgt->coords[groups[q * size + m]][b] % k != tgt->coords[groups[q * size]][b] % k) return NULL;
  *fine = true;
  int64_t s = g->dims[b] / (t * k);
  if (!c->dry) {
    int64_t split[HL_MAX_RANK + 2], part[HL_MAX_RANK + 2], out[HL_MAX_RANK];
    int q = 0;
    for (int d = 0; d < rank; d++) {
      if (d == b) {
        split[q] = part[q] = t, q++;
        split[q] = k, part[q] = 1, q++;
        split[q] = part[q] = s, q++;
      } else {
        split[q] = part[q] = dims[d], q++;
      }
      out[d] = d == b ? t * s : dims[d];
    }
    int64_t table[HL_SPMD_MAX_DEVICES];
    for (int p = 0; p < c->n; p++) table[p] = tgt->coords[p][b] % k;
    const char *off = partition_lookup(c, table);
    const char *r = spmd_name(c, "reshape"), *ds = spmd_name(c, "dynamic-slice"), *m = spmd_name(c, "reshape");
    if (!off || !r || !ds || !m) return HL_OOM();
    begin_line(c, r, g->dtype, (int)rank + 2, split);
    hl_strbuf_appendf(&c->body, "reshape(%s)\n", *v);
    begin_line(c, ds, g->dtype, (int)rank + 2, part);
    hl_strbuf_appendf(&c->body, "dynamic-slice(%s", r);
    for (int d = 0; d < rank + 2; d++) hl_strbuf_appendf(&c->body, ", %s", d == b + 1 ? off : "spmd.zero_index");
    hl_strbuf_append(&c->body, "), dynamic_slice_sizes={");
    for (int d = 0; d < rank + 2; d++) hl_strbuf_appendf(&c->body, "%s%lld", d ? "," : "", (long long)part[d]);
    hl_strbuf_append(&c->body, "}\n");
    begin_line(c, m, g->dtype, (int)rank, out);
    hl_strbuf_appendf(&c->body, "reshape(%s)\n", ds);
    hl_strbuf_appendf(&c->explain, "      dynamic-slice of dim %d's part each receiver keeps (1 of %lld): 0 bytes\n", b,
                      (long long)k);
    *v = m;
  }
  dims[b] = t * s;
  return NULL;
}

enum { VIA_ALL_TO_ALL = 1, VIA_EARLY_CUT = 2 };

// The direct plan from cur to tgt: dimensions the target splits that can
// be cut locally are cut first while the result stays a valid sharding (so
// later collectives move smaller blocks), splits move by all-to-all where
// the device order agrees, other differing splits are all-gathered (fewest
// tiles first: the smaller intermediate) with their padding dropped, and
// what the target still splits is cut last. `flags` leaves steps out (the
// all-gather + dynamic-slice plan uses none).
static hl_status_t direct(spmd_ctx_t *c, const char **v, const hl_shape_t *g, hl_spmd_sharding_t cur,
                          const hl_spmd_sharding_t *tgt, unsigned flags) {
  int rank = g->rank;
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(g, &cur, dims);
  int dst[HL_MAX_RANK];
  pair_all_to_all(&cur, tgt, rank, dst);
  for (int a = 0; a < rank; a++) {  // only where the device order agrees
    if (dst[a] < 0 || !(flags & VIA_ALL_TO_ALL)) {
      dst[a] = -1;
      continue;
    }
    int64_t k = tgt->tiles[dst[a]] / cur.tiles[a];  // > 1: cut finer after the all-to-all
    for (int p = 0; p < cur.num_devices && dst[a] >= 0; p++)
      if (cur.coords[p][a] != tgt->coords[p][dst[a]] / k) dst[a] = -1;
  }
  if (flags & VIA_EARLY_CUT) {
    uint32_t mask = 0, a2a_targets = 0;
    for (int a = 0; a < rank; a++)
      if (dst[a] >= 0) a2a_targets |= 1u << dst[a];
    hl_spmd_sharding_t trial = cur;
    for (int d = 0; d < rank; d++) {
      int64_t k;
      if (a2a_targets >> d & 1 || !cuttable(&cur, tgt, g, d, &k)) continue;
      hl_spmd_sharding_t next = trial;
      next.tiles[d] = tgt->tiles[d];
      for (int p = 0; p < next.num_devices; p++) next.coords[p][d] = tgt->coords[p][d];
      if (!hl_spmd_is_valid(&next)) continue;
      trial = next;
      mask |= 1u << d;
    }
    if (mask) HL_RETURN_IF_ERROR(cut(c, v, g, dims, &cur, tgt, mask));
  }
  for (int a = 0; a < rank; a++) {
    if (dst[a] < 0) continue;
    int b = dst[a];
    bool fine = false;
    HL_RETURN_IF_ERROR(cut_before_all_to_all(c, v, g, dims, &cur, tgt, a, b, &fine));
    HL_RETURN_IF_ERROR(all_to_all(c, v, g, dims, &cur, a, b));
    cur.tiles[b] = fine ? tgt->tiles[b] : cur.tiles[a];
    for (int p = 0; p < cur.num_devices; p++) cur.coords[p][b] = fine ? tgt->coords[p][b] : cur.coords[p][a];
    hl_spmd_unsplit(&cur, a);
  }
  for (;;) {  // gathers, fewest tiles first
    int best = -1;
    for (int d = 0; d < rank; d++) {
      int64_t k;
      if (cur.tiles[d] == 1 || hl_spmd_dim_equal(&cur, d, tgt, d) || cuttable(&cur, tgt, g, d, &k)) continue;
      if (best < 0 || cur.tiles[d] < cur.tiles[best]) best = d;
    }
    if (best < 0) break;
    HL_RETURN_IF_ERROR(all_gather(c, v, g->dtype, rank, dims, &cur, best));
    hl_spmd_unsplit(&cur, best);
    if (dims[best] > g->dims[best]) {  // uneven tiles: drop the padding
      int64_t keep[HL_MAX_RANK];
      memcpy(keep, dims, sizeof(keep));
      keep[best] = g->dims[best];
      HL_RETURN_IF_ERROR(slice_to(c, v, g->dtype, rank, dims, keep));
    }
  }
  uint32_t mask = 0;
  for (int d = 0; d < rank; d++) {
    int64_t k;
    if (cuttable(&cur, tgt, g, d, &k)) mask |= 1u << d;
  }
  if (mask) HL_RETURN_IF_ERROR(cut(c, v, g, dims, &cur, tgt, mask));
  return NULL;
}

// The ways a reshard can go, costed by bytes per partition.
enum { PLAN_PERMUTE, PLAN_DIRECT, PLAN_PERMUTE_DIRECT, PLAN_DIRECT_PERMUTE, PLAN_PARTIAL, PLAN_GATHER, PLAN_COUNT };
static const char *const kPlanNames[PLAN_COUNT] = {
    "permute", "direct", "permute+direct", "direct+permute", "partial-all-to-all+direct", "all-gather+slice"};

// Runs plan `k` from cur (tiled) to tgt; false in *ok when it does not apply.
static hl_status_t run_plan(spmd_ctx_t *c, int k, const char **v, const hl_shape_t *g, const hl_spmd_sharding_t *cur,
                            const hl_spmd_sharding_t *tgt, bool *ok) {
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(g, cur, dims);
  int dst[HL_MAX_RANK];
  pair_all_to_all(cur, tgt, g->rank, dst);
  hl_spmd_sharding_t mid;
  *ok = true;
  switch (k) {
    case PLAN_PERMUTE: {
      bool same_tiles = hl_spmd_tile_count(cur) > 1;
      for (int d = 0; d < g->rank; d++) same_tiles &= cur->tiles[d] == tgt->tiles[d];
      if (!same_tiles) break;
      return permute(c, v, g, dims, cur, tgt);
    }
    case PLAN_DIRECT:
      return direct(c, v, g, *cur, tgt, VIA_ALL_TO_ALL | VIA_EARLY_CUT);
    case PLAN_PERMUTE_DIRECT:  // the source's tiles first moved to where the direct plan needs them
      if (hl_spmd_tile_count(cur) <= 1 || !align(cur, tgt, g, dst, true, &mid) || hl_spmd_equal(&mid, cur)) break;
      HL_RETURN_IF_ERROR(permute(c, v, g, dims, cur, &mid));
      return direct(c, v, g, mid, tgt, VIA_ALL_TO_ALL | VIA_EARLY_CUT);
    case PLAN_DIRECT_PERMUTE:  // the direct plan to the target's tiles on the source's order, then moved
      if (!align(cur, tgt, g, dst, false, &mid) || hl_spmd_equal(&mid, tgt)) break;
      HL_RETURN_IF_ERROR(direct(c, v, g, *cur, &mid, VIA_ALL_TO_ALL | VIA_EARLY_CUT));
      spmd_local_dims(g, &mid, dims);
      return permute(c, v, g, dims, &mid, tgt);
    case PLAN_PARTIAL: {
      bool applies;
      HL_RETURN_IF_ERROR(partial_all_to_all(c, v, g, dims, cur, tgt, &mid, &applies));
      if (!applies) break;
      return direct(c, v, g, mid, tgt, VIA_ALL_TO_ALL | VIA_EARLY_CUT);
    }
    case PLAN_GATHER:
      return direct(c, v, g, *cur, tgt, 0);
    default:
      break;
  }
  *ok = false;
  return NULL;
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
    if (hl_spmd_equal(&cur, &tgt)) {
      *out = v;
      return NULL;
    }
  }
  // Every plan that applies, costed without emitting; the cheapest wins,
  // ties to the earlier plan in kPlanNames (deterministic).
  int64_t cost[PLAN_COUNT];
  int best = -1;
  bool saved_dry = c->dry;
  int64_t saved_bytes = c->bytes;
  c->dry = true;
  // Plans that start (or end) with a permute or an all-to-all of a whole
  // shard cannot beat a best of at most that shard: not costed (their
  // alignment search is quadratic in the devices, and dot planning costs
  // every reshard of every candidate plan).
  int64_t floor_bytes[PLAN_COUNT] = {0};
  floor_bytes[PLAN_PERMUTE_DIRECT] = floor_bytes[PLAN_PARTIAL] = spmd_local_bytes(g, &cur);
  floor_bytes[PLAN_DIRECT_PERMUTE] = spmd_local_bytes(g, &tgt);
  for (int k = 0; k < PLAN_COUNT; k++) {
    const char *ignored = v;
    bool ok;
    cost[k] = -1;
    if (best >= 0 && floor_bytes[k] > 0 && cost[best] <= floor_bytes[k]) continue;
    c->bytes = 0;
    hl_status_t st = run_plan(c, k, &ignored, g, &cur, &tgt, &ok);
    cost[k] = ok && !st ? c->bytes : -1;
    if (st) hl_status_free(st);
    if (cost[k] >= 0 && (best < 0 || cost[k] < cost[best])) best = k;
  }
  c->dry = saved_dry;
  c->bytes = saved_bytes;
  if (best < 0) return HL_INTERNAL_ERROR("resharding: no plan applies");
  if (!c->dry) {
    hl_strbuf_append(&c->explain, "      reshard plans (bytes per partition):");
    for (int k = 0, first = 1; k < PLAN_COUNT; k++)
      if (cost[k] >= 0) {
        hl_strbuf_appendf(&c->explain, "%s %s %lld", first ? "" : ",", kPlanNames[k], (long long)cost[k]);
        first = 0;
      }
    hl_strbuf_appendf(&c->explain, "; chosen: %s\n", kPlanNames[best]);
  }
  bool ok;
  HL_RETURN_IF_ERROR(run_plan(c, best, &v, g, &cur, &tgt, &ok));
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
