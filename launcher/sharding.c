#include "launcher/sharding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/dtype.h"

static const char *type_name(int64_t t) {
  switch (t) {
    case HL_SHARDING_REPLICATED: return "replicated";
    case HL_SHARDING_MAXIMAL: return "maximal";
    case HL_SHARDING_TUPLE: return "tuple";
    case HL_SHARDING_OTHER: return "other";
    case HL_SHARDING_MANUAL: return "manual";
    case HL_SHARDING_UNKNOWN: return "unknown";
    case HL_SHARDING_UNREDUCED: return "unreduced";
  }
  return "?";
}

static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
  if (*used >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

static void append_list(char *buf, size_t cap, size_t *used, const hl_i64_list_t *l) {
  for (int i = 0; i < l->n; i++) append(buf, cap, used, "%s%lld", i ? "," : "", (long long)l->v[i]);
}

const char *hl_sharding_describe(const hl_sharding_t *s) {
  static _Thread_local char buf[512];
  size_t used = 0, cap = sizeof(buf);
  buf[0] = '\0';
  if (!s) return "{replicated}";
  switch (s->type) {
    case HL_SHARDING_MAXIMAL:
      append(buf, cap, &used, "{maximal device=%lld}",
             (long long)(s->tile_assignment_devices.n ? s->tile_assignment_devices.v[0] : 0));
      return buf;
    case HL_SHARDING_OTHER:
      append(buf, cap, &used, "{devices=[");
      append_list(buf, cap, &used, &s->tile_assignment_dimensions);
      append(buf, cap, &used, "]");
      if (s->iota_reshape_dims.n) {
        append(buf, cap, &used, "<=[");
        append_list(buf, cap, &used, &s->iota_reshape_dims);
        append(buf, cap, &used, "]");
        if (s->iota_transpose_perm.n) {
          append(buf, cap, &used, "T(");
          append_list(buf, cap, &used, &s->iota_transpose_perm);
          append(buf, cap, &used, ")");
        }
      } else {
        append_list(buf, cap, &used, &s->tile_assignment_devices);
      }
      if (s->replicate_on_last_tile_dim) append(buf, cap, &used, " last_tile_dim_replicate");
      if (s->last_tile_dims.n) {
        append(buf, cap, &used, " last_tile_dims={");
        for (int i = 0; i < s->last_tile_dims.n; i++)
          append(buf, cap, &used, "%s%s", i ? ", " : "", type_name(s->last_tile_dims.v[i]));
        append(buf, cap, &used, "}");
      }
      append(buf, cap, &used, "}");
      return buf;
    default:
      append(buf, cap, &used, "{%s}", type_name(s->type));
      return buf;
  }
}

static int64_t product(const hl_i64_list_t *l) {
  int64_t p = 1;
  for (int i = 0; i < l->n; i++) p *= l->v[i];
  return p;
}

hl_status_t hl_sharding_device_at(const hl_sharding_t *s, int64_t pos, int64_t *out) {
  if (s->iota_reshape_dims.n == 0) {
    if (pos < 0 || pos >= s->tile_assignment_devices.n)
      return HL_INVALID("sharding %s: tile %lld has no device", hl_sharding_describe(s),
                        (long long)pos);
    *out = s->tile_assignment_devices.v[pos];
    return NULL;
  }
  // Iota form: devices = iota(prod(reshape)).reshape(reshape)
  // .transpose(perm) flattened; position pos of the transposed array.
  const hl_i64_list_t *r = &s->iota_reshape_dims, *perm = &s->iota_transpose_perm;
  int n = r->n;
  if (n > HL_MAX_RANK || (perm->n && perm->n != n))
    return HL_INVALID("sharding %s: bad iota transpose", hl_sharding_describe(s));
  int64_t t[HL_MAX_RANK], orig[HL_MAX_RANK];
  int64_t rest = pos;
  for (int k = n - 1; k >= 0; k--) {
    int64_t p = perm->n ? perm->v[k] : k;
    if (p < 0 || p >= n) return HL_INVALID("sharding %s: bad iota transpose", hl_sharding_describe(s));
    int64_t dim = r->v[p];
    if (dim < 1) return HL_INVALID("sharding %s: bad iota dimensions", hl_sharding_describe(s));
    t[k] = rest % dim;
    rest /= dim;
  }
  if (rest != 0)
    return HL_INVALID("sharding %s: tile %lld has no device", hl_sharding_describe(s),
                      (long long)pos);
  for (int k = 0; k < n; k++) orig[perm->n ? perm->v[k] : k] = t[k];
  int64_t dev = 0;
  for (int k = 0; k < n; k++) dev = dev * r->v[k] + orig[k];
  *out = dev;
  return NULL;
}

hl_status_t hl_sharding_locate(const hl_sharding_t *s, int rank, int64_t num_devices,
                               int64_t device, int64_t *out_tiles, int64_t *out_index,
                               bool *out_holds_data) {
  for (int d = 0; d < rank; d++) {
    out_tiles[d] = 1;
    out_index[d] = 0;
  }
  *out_holds_data = true;
  if (!s || s->type == HL_SHARDING_REPLICATED) return NULL;
  const char *what = hl_sharding_describe(s);
  switch (s->type) {
    case HL_SHARDING_MAXIMAL: {
      // The whole array on one device; the others hold no valid copy.
      int64_t owner = s->tile_assignment_devices.n ? s->tile_assignment_devices.v[0] : 0;
      if (owner < 0 || owner >= num_devices)
        return HL_INVALID("sharding %s names device %lld, but there %s %lld partition%s%s", what,
                          (long long)owner, num_devices == 1 ? "is" : "are",
                          (long long)num_devices, num_devices == 1 ? "" : "s",
                          owner >= num_devices ? ": run with more partitions (--partitions)"
                                               : "");
      *out_holds_data = owner == device;
      return NULL;
    }
    case HL_SHARDING_OTHER: break;
    case HL_SHARDING_TUPLE:
      return HL_UNIMPL("a tuple sharding %s on an array is not supported", what);
    default:
      return HL_UNIMPL("the %s sharding cannot be split into or assembled from global arrays",
                       what);
  }
  if (s->replicate_on_last_tile_dim && s->last_tile_dims.n)
    return HL_INVALID("sharding %s has both last_tile_dim_replicate and last_tile_dims", what);
  for (int i = 0; i < s->last_tile_dims.n; i++)
    if (s->last_tile_dims.v[i] != HL_SHARDING_REPLICATED)
      return HL_UNIMPL("sharding %s: %s subgroups (last_tile_dims) are not supported; only "
                       "replicated ones are",
                       what, type_name(s->last_tile_dims.v[i]));
  int extra = (s->replicate_on_last_tile_dim ? 1 : 0) + s->last_tile_dims.n;
  const hl_i64_list_t *td = &s->tile_assignment_dimensions;
  if (td->n != rank + extra)
    return HL_INVALID("sharding %s has %d tile dimensions, but the array has %d dimension%s%s",
                      what, td->n, rank, rank == 1 ? "" : "s",
                      extra ? " plus the replicated tile dimensions" : "");
  for (int i = 0; i < td->n; i++)
    if (td->v[i] < 1) return HL_INVALID("sharding %s has an empty tile dimension", what);
  int64_t count = product(td);
  if (count != num_devices)
    return HL_INVALID("sharding %s spans %lld device%s, but the program runs on %lld "
                      "partition%s: run with --partitions %lld (-np %lld times the replicas)",
                      what, (long long)count, count == 1 ? "" : "s", (long long)num_devices,
                      num_devices == 1 ? "" : "s", (long long)count, (long long)count);
  if (s->iota_reshape_dims.n ? product(&s->iota_reshape_dims) != count
                             : s->tile_assignment_devices.n != count)
    return HL_INVALID("sharding %s: the device list does not fill the tile grid", what);
  int64_t found = -1;
  for (int64_t pos = 0; pos < count; pos++) {
    int64_t dev;
    HL_RETURN_IF_ERROR(hl_sharding_device_at(s, pos, &dev));
    if (dev == device) {
      if (found >= 0)
        return HL_INVALID("sharding %s lists device %lld twice", what, (long long)device);
      found = pos;
    }
  }
  if (found < 0)
    return HL_INVALID("sharding %s does not list device (partition) %lld", what, (long long)device);
  int64_t rest = found;
  int64_t index[HL_MAX_RANK + 8];
  for (int i = td->n - 1; i >= 0; i--) {
    index[i] = rest % td->v[i];
    rest /= td->v[i];
  }
  for (int d = 0; d < rank; d++) {
    out_tiles[d] = td->v[d];
    out_index[d] = index[d];
  }
  return NULL;
}

void hl_sharding_shard_dims(int rank, const int64_t *global_dims, const int64_t *tiles,
                            int64_t *out_dims) {
  for (int d = 0; d < rank; d++) out_dims[d] = (global_dims[d] + tiles[d] - 1) / tiles[d];
}

// Copies the overlap of a shard and its tile between the two buffers, one
// innermost row at a time. to_shard: global -> shard, else shard -> global.
static hl_status_t copy_tile(hl_literal_t *global, const int64_t *tiles, const int64_t *index,
                             hl_literal_t *shard, bool to_shard) {
  const hl_shape_t *gs = &global->shape, *ss = &shard->shape;
  if (!hl_shape_is_array(gs) || !hl_shape_is_array(ss))
    return HL_INVALID("sharding: tuples and tokens have no tiles");
  if (gs->dtype != ss->dtype)
    return HL_INVALID("sharding: the global array is %s, the shard %s", hl_dtype_name(gs->dtype),
                      hl_dtype_name(ss->dtype));
  if (gs->rank != ss->rank)
    return HL_INVALID("sharding: the global array has %d dimensions, the shard %d", gs->rank,
                      ss->rank);
  int rank = gs->rank;
  int64_t want[HL_MAX_RANK], start[HL_MAX_RANK], valid[HL_MAX_RANK];
  hl_sharding_shard_dims(rank, gs->dims, tiles, want);
  for (int d = 0; d < rank; d++) {
    if (index[d] < 0 || index[d] >= tiles[d])
      return HL_INVALID("sharding: tile %lld of %lld along dimension %d", (long long)index[d],
                        (long long)tiles[d], d);
    if (ss->dims[d] != want[d])
      return HL_INVALID("sharding: dimension %d of size %lld in %lld tiles needs shards of %lld, "
                        "the shard has %lld",
                        d, (long long)gs->dims[d], (long long)tiles[d], (long long)want[d],
                        (long long)ss->dims[d]);
    start[d] = index[d] * want[d];
    valid[d] = gs->dims[d] - start[d];
    if (valid[d] > want[d]) valid[d] = want[d];
    if (valid[d] < 0) valid[d] = 0;
  }
  size_t esize = hl_dtype_size(gs->dtype);
  if (to_shard) memset(shard->data, 0, shard->byte_size);
  for (int d = 0; d < rank; d++)
    if (valid[d] == 0) return NULL;  // a tile made only of padding
  // Walk the shard's valid region, the last dimension as one memcpy.
  int64_t pos[HL_MAX_RANK] = {0};
  size_t row = esize * (size_t)(rank ? valid[rank - 1] : 1);
  for (;;) {
    int64_t goff = 0, soff = 0;
    for (int d = 0; d < rank; d++) {
      goff = goff * gs->dims[d] + start[d] + pos[d];
      soff = soff * ss->dims[d] + pos[d];
    }
    char *g = (char *)global->data + (size_t)goff * esize;
    char *sh = (char *)shard->data + (size_t)soff * esize;
    if (to_shard)
      memcpy(sh, g, row);
    else
      memcpy(g, sh, row);
    int d = rank - 2;
    while (d >= 0 && ++pos[d] == valid[d]) pos[d--] = 0;
    if (d < 0) break;
  }
  return NULL;
}

hl_status_t hl_sharding_extract(const hl_literal_t *global, const int64_t *tiles,
                                const int64_t *index, hl_literal_t *shard) {
  // copy_tile only reads from global in this direction.
  return copy_tile((hl_literal_t *)global, tiles, index, shard, true);
}

hl_status_t hl_sharding_insert(hl_literal_t *global, const int64_t *tiles, const int64_t *index,
                               const hl_literal_t *shard) {
  return copy_tile(global, tiles, index, (hl_literal_t *)shard, false);
}
