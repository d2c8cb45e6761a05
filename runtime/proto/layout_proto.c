// LayoutProto <-> the layout parts of hl_shape_t (runtime/base/layout.h):
// every field XLA's Layout::ToProto writes, so a layout read from a proto
// prints as XLA's text does and is written back unchanged.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "runtime/proto/proto_internal.h"

static bool valid_index_type(int t) {
  return t == 0 || (hl_dtype_is_valid(t) && hl_dtype_is_integer((hl_dtype_t)t));
}

static hl_status_t ext_from_message(const Xla__LayoutProto *l, hl_shape_t *out, int depth) {
  bool needed = l->n_dim_level_types || l->n_tiles || l->tail_padding_alignment_in_elements > 1 ||
                l->index_primitive_type || l->pointer_primitive_type || l->n_split_configs ||
                l->physical_shape || l->dynamic_shape_metadata_prefix_bytes;
  if (!needed) return NULL;
  hl_layout_ext_t *e;
  HL_RETURN_IF_ERROR(hl_layout_ext_ensure(out, &e));
  if (l->n_dim_level_types > HL_MAX_RANK) return HL_INVALID("layout has too many dim_level_types");
  if ((l->n_dim_unique && l->n_dim_unique != l->n_dim_level_types) ||
      (l->n_dim_ordered && l->n_dim_ordered != l->n_dim_level_types))
    return HL_INVALID("layout dim_unique / dim_ordered do not match dim_level_types");
  e->dim_level_count = (int)l->n_dim_level_types;
  for (size_t i = 0; i < l->n_dim_level_types; i++) {
    if ((unsigned)l->dim_level_types[i] > HL_DIM_LOOSE_COMPRESSED)
      return HL_INVALID("layout dim_level_types[%zu] = %d is not a DimLevelType", i,
                        (int)l->dim_level_types[i]);
    e->dim_level_types[i] = (uint8_t)l->dim_level_types[i];
  }
  e->dim_unique_count = (int)l->n_dim_unique;
  for (size_t i = 0; i < l->n_dim_unique; i++) e->dim_unique[i] = l->dim_unique[i];
  e->dim_ordered_count = (int)l->n_dim_ordered;
  for (size_t i = 0; i < l->n_dim_ordered; i++) e->dim_ordered[i] = l->dim_ordered[i];
  if (l->n_tiles > HL_LAYOUT_MAX_TILES)
    return HL_UNIMPL("layout has %zu tiles (at most %d are supported)", l->n_tiles,
                     HL_LAYOUT_MAX_TILES);
  e->tile_count = (int)l->n_tiles;
  for (size_t t = 0; t < l->n_tiles; t++) {
    const Xla__TileProto *tp = l->tiles[t];
    if (tp->n_dimensions > HL_MAX_RANK) return HL_INVALID("tile %zu has too many dimensions", t);
    e->tiles[t].rank = (int)tp->n_dimensions;
    for (size_t i = 0; i < tp->n_dimensions; i++) {
      int64_t d = tp->dimensions[i];
      if (d <= 0 && d != HL_LAYOUT_COMBINE_DIM)
        return HL_INVALID("tile %zu dimension %zu is %lld", t, i, (long long)d);
      e->tiles[t].dims[i] = d;
    }
  }
  if (l->tail_padding_alignment_in_elements < 0)
    return HL_INVALID("negative tail_padding_alignment_in_elements");
  e->tail_padding_alignment =
      l->tail_padding_alignment_in_elements > 1 ? l->tail_padding_alignment_in_elements : 0;
  if (!valid_index_type((int)l->index_primitive_type) ||
      !valid_index_type((int)l->pointer_primitive_type))
    return HL_INVALID("layout index / pointer primitive type is not an integer type");
  e->index_type = (hl_dtype_t)l->index_primitive_type;
  e->pointer_type = (hl_dtype_t)l->pointer_primitive_type;
  if (l->n_split_configs > HL_MAX_RANK) return HL_INVALID("layout has too many split_configs");
  e->split_count = (int)l->n_split_configs;
  for (size_t i = 0; i < l->n_split_configs; i++) {
    const Xla__SplitConfigProto *sc = l->split_configs[i];
    if (sc->n_split_indices > HL_LAYOUT_MAX_SPLIT_INDICES)
      return HL_UNIMPL("split config %zu has %zu indices (at most %d are supported)", i,
                       sc->n_split_indices, HL_LAYOUT_MAX_SPLIT_INDICES);
    e->splits[i].dimension = sc->dimension;
    e->splits[i].count = (int)sc->n_split_indices;
    for (size_t j = 0; j < sc->n_split_indices; j++) e->splits[i].indices[j] = sc->split_indices[j];
  }
  if (l->dynamic_shape_metadata_prefix_bytes < 0)
    return HL_INVALID("negative dynamic_shape_metadata_prefix_bytes");
  e->dynamic_metadata_prefix_bytes = l->dynamic_shape_metadata_prefix_bytes;
  if (l->physical_shape) {
    e->physical_shape = hl_calloc(1, sizeof(hl_shape_t));
    if (!e->physical_shape) return HL_OOM();
    HL_RETURN_IF_ERROR_CTX(hl_proto_shape_from_message_at_depth(l->physical_shape,
                                                                e->physical_shape, depth + 1),
                           "layout physical_shape");
  }
  return NULL;
}

hl_status_t hl_proto_layout_from_message(const Xla__LayoutProto *l, hl_shape_t *out, int depth) {
  bool seen[HL_MAX_RANK] = {false};
  bool ok = l->n_minor_to_major == (size_t)out->rank;
  for (size_t i = 0; ok && i < l->n_minor_to_major; i++) {
    int64_t d = l->minor_to_major[i];
    ok = d >= 0 && d < out->rank && !seen[d];
    if (ok) seen[d] = true;
  }
  if (!ok)
    return HL_INVALID("layout minor_to_major (%zu entries) is not a permutation of the %d "
                      "dimensions",
                      l->n_minor_to_major, out->rank);
  out->has_layout = true;
  for (int i = 0; i < out->rank; i++) out->minor_to_major[i] = l->minor_to_major[i];
  if (l->element_size_in_bits < 0 || l->memory_space < 0)
    return HL_INVALID("layout element_size_in_bits / memory_space must not be negative");
  out->element_size_in_bits = l->element_size_in_bits;
  out->memory_space = l->memory_space;
  return ext_from_message(l, out, depth);
}

hl_status_t hl_proto_layout_to_message(hl_proto_arena_t *a, const hl_shape_t *s,
                                       Xla__LayoutProto *l) {
  bool oom = false;
  int64_t m2m[HL_MAX_RANK];
  for (int i = 0; i < s->rank; i++) m2m[i] = s->has_layout ? s->minor_to_major[i] : s->rank - 1 - i;
  l->minor_to_major = hl_proto_arena_i64(a, m2m, (size_t)s->rank, &oom);
  l->n_minor_to_major = (size_t)s->rank;
  l->element_size_in_bits = s->element_size_in_bits;
  l->memory_space = s->memory_space;
  const hl_layout_ext_t *e = s->layout_ext;
  if (oom) return HL_OOM();
  if (!e) return NULL;
  if (e->dim_level_count) {
    l->dim_level_types = hl_proto_arena_alloc(a, (size_t)e->dim_level_count * sizeof(int));
    if (!l->dim_level_types) return HL_OOM();
    l->n_dim_level_types = (size_t)e->dim_level_count;
    for (int i = 0; i < e->dim_level_count; i++)
      l->dim_level_types[i] = (Xla__DimLevelType)e->dim_level_types[i];
  }
  if (e->dim_unique_count) {
    l->dim_unique = hl_proto_arena_alloc(a, (size_t)e->dim_unique_count * sizeof(protobuf_c_boolean));
    if (!l->dim_unique) return HL_OOM();
    l->n_dim_unique = (size_t)e->dim_unique_count;
    for (int i = 0; i < e->dim_unique_count; i++) l->dim_unique[i] = e->dim_unique[i];
  }
  if (e->dim_ordered_count) {
    l->dim_ordered =
        hl_proto_arena_alloc(a, (size_t)e->dim_ordered_count * sizeof(protobuf_c_boolean));
    if (!l->dim_ordered) return HL_OOM();
    l->n_dim_ordered = (size_t)e->dim_ordered_count;
    for (int i = 0; i < e->dim_ordered_count; i++) l->dim_ordered[i] = e->dim_ordered[i];
  }
  if (e->tile_count) {
    l->tiles = hl_proto_arena_alloc(a, (size_t)e->tile_count * sizeof(void *));
    if (!l->tiles) return HL_OOM();
    l->n_tiles = (size_t)e->tile_count;
    for (int t = 0; t < e->tile_count; t++) {
      Xla__TileProto *tp = hl_proto_arena_alloc(a, sizeof(*tp));
      if (!tp) return HL_OOM();
      xla__tile_proto__init(tp);
      tp->dimensions = hl_proto_arena_i64(a, e->tiles[t].dims, (size_t)e->tiles[t].rank, &oom);
      tp->n_dimensions = (size_t)e->tiles[t].rank;
      l->tiles[t] = tp;
    }
  }
  l->tail_padding_alignment_in_elements = e->tail_padding_alignment > 1 ? e->tail_padding_alignment : 0;
  l->index_primitive_type = (Xla__PrimitiveType)e->index_type;
  l->pointer_primitive_type = (Xla__PrimitiveType)e->pointer_type;
  if (e->split_count) {
    l->split_configs = hl_proto_arena_alloc(a, (size_t)e->split_count * sizeof(void *));
    if (!l->split_configs) return HL_OOM();
    l->n_split_configs = (size_t)e->split_count;
    for (int i = 0; i < e->split_count; i++) {
      Xla__SplitConfigProto *sc = hl_proto_arena_alloc(a, sizeof(*sc));
      if (!sc) return HL_OOM();
      xla__split_config_proto__init(sc);
      sc->dimension = e->splits[i].dimension;
      sc->split_indices =
          hl_proto_arena_i64(a, e->splits[i].indices, (size_t)e->splits[i].count, &oom);
      sc->n_split_indices = (size_t)e->splits[i].count;
      l->split_configs[i] = sc;
    }
  }
  l->dynamic_shape_metadata_prefix_bytes = e->dynamic_metadata_prefix_bytes;
  if (e->physical_shape)
    HL_RETURN_IF_ERROR(hl_proto_shape_to_message_with_layout(a, e->physical_shape,
                                                             &l->physical_shape));
  return oom ? HL_OOM() : NULL;
}
