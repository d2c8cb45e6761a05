#include "runtime/spmd/spmd_sharding.h"

#include <string.h>

#include "runtime/base/alloc.h"

void hl_spmd_replicated(int rank, int num_devices, hl_spmd_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  out->kind = HL_SPMD_TILED;
  out->rank = rank;
  out->num_devices = num_devices;
  for (int d = 0; d < rank; d++) out->tiles[d] = 1;
}

static int64_t list_product(const hl_i64_list_t *l, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= l->v[i];
  return p;
}

// Device at flat position `pos` of an iota tile assignment: iota over
// reshape_dims, transposed by perm, read row-major.
static int64_t iota_device(const hl_sharding_t *s, int64_t pos) {
  int n = s->iota_reshape_dims.n;
  int64_t tdims[HL_SPMD_MAX_RANK * 2], tidx[HL_SPMD_MAX_RANK * 2], oidx[HL_SPMD_MAX_RANK * 2];
  for (int i = 0; i < n; i++) {
    int src = s->iota_transpose_perm.n ? (int)s->iota_transpose_perm.v[i] : i;
    tdims[i] = s->iota_reshape_dims.v[src];
  }
  for (int i = n - 1; i >= 0; i--) {
    tidx[i] = pos % tdims[i];
    pos /= tdims[i];
  }
  for (int i = 0; i < n; i++) {
    int src = s->iota_transpose_perm.n ? (int)s->iota_transpose_perm.v[i] : i;
    oidx[src] = tidx[i];
  }
  int64_t dev = 0;
  for (int i = 0; i < n; i++) dev = dev * s->iota_reshape_dims.v[i] + oidx[i];
  return dev;
}

hl_status_t hl_spmd_from_ir(const hl_sharding_t *s, int rank, int num_devices,
                            hl_spmd_sharding_t *out) {
  if (rank > HL_SPMD_MAX_RANK) return HL_UNIMPL("sharded arrays of rank %d (at most %d)", rank, HL_SPMD_MAX_RANK);
  if (num_devices < 1 || num_devices > HL_SPMD_MAX_DEVICES)
    return HL_UNIMPL("partitioning over %d partitions (1 to %d)", num_devices, HL_SPMD_MAX_DEVICES);
  hl_spmd_replicated(rank, num_devices, out);
  if (!s || s->type == HL_SHARDING_REPLICATED) return NULL;
  switch (s->type) {
    case HL_SHARDING_MAXIMAL:
      if (s->tile_assignment_devices.n != 1) return HL_INVALID("maximal sharding without one device");
      if (s->tile_assignment_devices.v[0] < 0 || s->tile_assignment_devices.v[0] >= num_devices)
        return HL_INVALID("maximal sharding on device %lld of %d partitions",
                          (long long)s->tile_assignment_devices.v[0], num_devices);
      out->kind = HL_SPMD_MAXIMAL;
      out->maximal_device = s->tile_assignment_devices.v[0];
      return NULL;
    case HL_SHARDING_OTHER: break;
    case HL_SHARDING_MANUAL: return HL_UNIMPL("manual sharding (manual regions are not partitioned yet)");
    case HL_SHARDING_TUPLE: return HL_INVALID("tuple sharding on an array");
    default: return HL_UNIMPL("sharding type %d", (int)s->type);
  }
  const hl_i64_list_t *td = &s->tile_assignment_dimensions;
  int extra = (s->replicate_on_last_tile_dim ? 1 : 0) + s->last_tile_dims.n;
  for (int i = 0; i < s->last_tile_dims.n; i++)
    if (s->last_tile_dims.v[i] == HL_SHARDING_MANUAL)
      return HL_UNIMPL("sharding with a manual subgroup (last_tile_dims={manual})");
  if (td->n - extra != rank)
    return HL_INVALID("sharding has %d tiled dimensions for an array of rank %d", td->n - extra, rank);
  int64_t total = list_product(td, td->n);
  if (total != num_devices)
    return HL_INVALID("sharding's tile assignment has %lld devices, the program has %d partitions",
                      (long long)total, num_devices);
  if (s->iota_reshape_dims.n == 0 && s->tile_assignment_devices.n != total)
    return HL_INVALID("sharding lists %d devices for %lld tiles", s->tile_assignment_devices.n, (long long)total);
  if (s->iota_reshape_dims.n > HL_SPMD_MAX_RANK * 2) return HL_UNIMPL("iota device list of rank %d", s->iota_reshape_dims.n);
  if (s->iota_reshape_dims.n && list_product(&s->iota_reshape_dims, s->iota_reshape_dims.n) != total)
    return HL_INVALID("iota device list does not match the tile assignment");
  for (int d = 0; d < rank; d++) {
    if (td->v[d] > 255) return HL_UNIMPL("more than 255 tiles along a dimension");
    out->tiles[d] = td->v[d];
  }
  bool seen[HL_SPMD_MAX_DEVICES] = {false};
  for (int64_t pos = 0; pos < total; pos++) {
    int64_t dev = s->iota_reshape_dims.n ? iota_device(s, pos) : s->tile_assignment_devices.v[pos];
    if (dev < 0 || dev >= num_devices || seen[dev])
      return HL_INVALID("sharding's device list is not a permutation of 0..%d", num_devices - 1);
    seen[dev] = true;
    int64_t rest = pos;
    for (int d = td->n - 1; d >= 0; d--) {
      int64_t idx = rest % td->v[d];
      rest /= td->v[d];
      if (d < rank) out->coords[dev][d] = (uint8_t)idx;
    }
  }
  return NULL;
}

bool hl_spmd_is_replicated(const hl_spmd_sharding_t *s) {
  return s->kind == HL_SPMD_TILED && hl_spmd_tile_count(s) == 1;
}

int64_t hl_spmd_tile_count(const hl_spmd_sharding_t *s) {
  int64_t p = 1;
  for (int d = 0; d < s->rank; d++) p *= s->tiles[d];
  return p;
}

bool hl_spmd_dim_equal(const hl_spmd_sharding_t *a, int da, const hl_spmd_sharding_t *b, int db) {
  if (a->tiles[da] != b->tiles[db]) return false;
  if (a->tiles[da] == 1) return true;
  for (int p = 0; p < a->num_devices; p++)
    if (a->coords[p][da] != b->coords[p][db]) return false;
  return true;
}

bool hl_spmd_equal(const hl_spmd_sharding_t *a, const hl_spmd_sharding_t *b) {
  if (a->kind != b->kind || a->rank != b->rank || a->num_devices != b->num_devices) return false;
  if (a->kind == HL_SPMD_MAXIMAL) return a->maximal_device == b->maximal_device;
  for (int d = 0; d < a->rank; d++)
    if (!hl_spmd_dim_equal(a, d, b, d)) return false;
  return true;
}

// Row-major number of device p's tile.
static int64_t tile_number(const hl_spmd_sharding_t *s, int p) {
  int64_t t = 0;
  for (int d = 0; d < s->rank; d++) t = t * s->tiles[d] + s->coords[p][d];
  return t;
}

bool hl_spmd_is_valid(const hl_spmd_sharding_t *s) {
  if (s->kind != HL_SPMD_TILED) return true;
  int64_t tiles = hl_spmd_tile_count(s);
  if (tiles < 1 || tiles > s->num_devices || s->num_devices % tiles) return false;
  int count[HL_SPMD_MAX_DEVICES] = {0};
  for (int p = 0; p < s->num_devices; p++) {
    for (int d = 0; d < s->rank; d++)
      if (s->coords[p][d] >= s->tiles[d]) return false;
    count[tile_number(s, p)]++;
  }
  for (int64_t t = 0; t < tiles; t++)
    if (count[t] != s->num_devices / tiles) return false;
  return true;
}

void hl_spmd_unsplit(hl_spmd_sharding_t *s, int d) {
  s->tiles[d] = 1;
  for (int p = 0; p < s->num_devices; p++) s->coords[p][d] = 0;
}

hl_status_t hl_spmd_to_ir(const hl_spmd_sharding_t *s, hl_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  if (s->kind == HL_SPMD_MAXIMAL) {
    out->type = HL_SHARDING_MAXIMAL;
    return hl_i64_list_set(&out->tile_assignment_devices, &s->maximal_device, 1);
  }
  if (hl_spmd_is_replicated(s)) {
    out->type = HL_SHARDING_REPLICATED;
    return NULL;
  }
  out->type = HL_SHARDING_OTHER;
  int64_t tiles = hl_spmd_tile_count(s), repl = s->num_devices / tiles;
  int64_t dims[HL_SPMD_MAX_RANK + 1], devs[HL_SPMD_MAX_DEVICES];
  for (int d = 0; d < s->rank; d++) dims[d] = s->tiles[d];
  dims[s->rank] = repl;
  int fill[HL_SPMD_MAX_DEVICES] = {0};
  for (int p = 0; p < s->num_devices; p++) {  // ascending device ids within a tile
    int64_t t = tile_number(s, p);
    devs[t * repl + fill[t]++] = p;
  }
  out->replicate_on_last_tile_dim = repl > 1;
  hl_status_t st = hl_i64_list_set(&out->tile_assignment_dimensions, dims, s->rank + (repl > 1));
  if (!st) st = hl_i64_list_set(&out->tile_assignment_devices, devs, s->num_devices);
  return st;
}

void hl_spmd_print(const hl_spmd_sharding_t *s, hl_strbuf_t *out) {
  if (s->kind == HL_SPMD_MAXIMAL) {
    hl_strbuf_appendf(out, "{maximal device=%lld}", (long long)s->maximal_device);
    return;
  }
  if (hl_spmd_is_replicated(s)) {
    hl_strbuf_append(out, "{replicated}");
    return;
  }
  hl_sharding_t ir;
  hl_status_t st = hl_spmd_to_ir(s, &ir);
  if (st) {
    hl_status_free(st);
    hl_strbuf_append(out, "{?}");
    hl_sharding_deinit(&ir);
    return;
  }
  hl_strbuf_append(out, "{devices=[");
  for (int i = 0; i < ir.tile_assignment_dimensions.n; i++)
    hl_strbuf_appendf(out, "%s%lld", i ? "," : "", (long long)ir.tile_assignment_dimensions.v[i]);
  hl_strbuf_append(out, "]");
  for (int i = 0; i < ir.tile_assignment_devices.n; i++)
    hl_strbuf_appendf(out, "%s%lld", i ? "," : "", (long long)ir.tile_assignment_devices.v[i]);
  if (ir.replicate_on_last_tile_dim) hl_strbuf_append(out, " last_tile_dim_replicate");
  hl_strbuf_append(out, "}");
  hl_sharding_deinit(&ir);
}

hl_status_t hl_spmd_groups(const hl_spmd_sharding_t *s, uint32_t dims, int64_t *groups,
                           int *out_group_count, int *out_group_size) {
  if (s->kind != HL_SPMD_TILED) return HL_INTERNAL_ERROR("collective groups of a maximal sharding");
  int size = 1;
  for (int d = 0; d < s->rank; d++)
    if (dims >> d & 1) size *= (int)s->tiles[d];
  int count = s->num_devices / size;
  // Walk devices in ascending id; each lands in the first group of its key
  // (tile indices on the other dimensions) whose slot for its combination
  // along `dims` is still free.
  int64_t key_of_group[HL_SPMD_MAX_DEVICES];
  int used = 0;
  for (int i = 0; i < count * size; i++) groups[i] = -1;
  for (int p = 0; p < s->num_devices; p++) {
    int64_t key = 0, slot = 0;
    for (int d = 0; d < s->rank; d++) {
      if (dims >> d & 1) slot = slot * s->tiles[d] + s->coords[p][d];
      else key = key * s->tiles[d] + s->coords[p][d];
    }
    int g = 0;
    for (; g < used; g++)
      if (key_of_group[g] == key && groups[g * size + slot] < 0) break;
    if (g == used) {
      if (used == count) return HL_INTERNAL_ERROR("sharding is not a uniform tiling");
      key_of_group[used++] = key;
    }
    groups[g * size + slot] = p;
  }
  if (used != count) return HL_INTERNAL_ERROR("sharding is not a uniform tiling");
  *out_group_count = count;
  *out_group_size = size;
  return NULL;
}
