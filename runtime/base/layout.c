#include "runtime/base/layout.h"

#include <string.h>

#include "runtime/base/alloc.h"

//===----------------------------------------------------------------------===//
// The extension's life cycle
//===----------------------------------------------------------------------===//

hl_status_t hl_layout_ext_ensure(hl_shape_t *s, hl_layout_ext_t **out) {
  if (!s->layout_ext) {
    s->layout_ext = hl_calloc(1, sizeof(hl_layout_ext_t));
    if (!s->layout_ext) return HL_OOM();
  }
  *out = s->layout_ext;
  return NULL;
}

hl_status_t hl_layout_ext_copy(const hl_layout_ext_t *src, hl_layout_ext_t **out) {
  *out = NULL;
  if (!src) return NULL;
  hl_layout_ext_t *e = hl_malloc(sizeof(*e));
  if (!e) return HL_OOM();
  *e = *src;
  e->physical_shape = NULL;
  if (src->physical_shape) {
    e->physical_shape = hl_calloc(1, sizeof(hl_shape_t));
    hl_status_t st = e->physical_shape ? hl_shape_copy(src->physical_shape, e->physical_shape)
                                       : HL_OOM();
    if (st) {
      hl_free(e->physical_shape);
      hl_free(e);
      return st;
    }
  }
  *out = e;
  return NULL;
}

void hl_layout_ext_free(hl_layout_ext_t *ext) {
  if (!ext) return;
  if (ext->physical_shape) {
    hl_shape_deinit(ext->physical_shape);
    hl_free(ext->physical_shape);
  }
  hl_free(ext);
}

bool hl_layout_ext_is_empty(const hl_layout_ext_t *e) {
  return !e || (e->dim_level_count == 0 && e->tile_count == 0 && e->tail_padding_alignment <= 1 &&
                e->index_type == HL_INVALID && e->pointer_type == HL_INVALID &&
                e->split_count == 0 && !e->physical_shape &&
                e->dynamic_metadata_prefix_bytes == 0);
}

//===----------------------------------------------------------------------===//
// Printing (xla/layout.cc Layout::Print; D(..) from older XLA comes first)
//===----------------------------------------------------------------------===//

bool hl_layout_has_suffix(const hl_shape_t *s) {
  return s->element_size_in_bits != 0 || s->memory_space != 0 ||
         !hl_layout_ext_is_empty(s->layout_ext);
}

static const char kDimLevelAbbrev[] = {'D', 'C', 'S', 'H'};

static void print_suffix(const hl_shape_t *s, hl_strbuf_t *out) {
  const hl_layout_ext_t *e = s->layout_ext;
  if (e && e->dim_level_count) {
    hl_strbuf_append(out, "D(");
    for (int i = 0; i < e->dim_level_count; i++) {
      if (i) hl_strbuf_append_char(out, ',');
      uint8_t t = e->dim_level_types[i];
      hl_strbuf_append_char(out, t < sizeof(kDimLevelAbbrev) ? kDimLevelAbbrev[t] : '?');
      if (e->dim_unique_count && !e->dim_unique[i]) hl_strbuf_append_char(out, '+');
      if (e->dim_ordered_count && !e->dim_ordered[i]) hl_strbuf_append_char(out, '~');
    }
    hl_strbuf_append_char(out, ')');
  }
  if (e && e->tile_count) {
    hl_strbuf_append_char(out, 'T');
    for (int t = 0; t < e->tile_count; t++) {
      hl_strbuf_append_char(out, '(');
      for (int i = 0; i < e->tiles[t].rank; i++) {
        if (i) hl_strbuf_append_char(out, ',');
        int64_t d = e->tiles[t].dims[i];
        if (d == HL_LAYOUT_COMBINE_DIM)
          hl_strbuf_append_char(out, '*');
        else
          hl_strbuf_appendf(out, "%lld", (long long)d);
      }
      hl_strbuf_append_char(out, ')');
    }
  }
  if (e && e->tail_padding_alignment > 1)
    hl_strbuf_appendf(out, "L(%lld)", (long long)e->tail_padding_alignment);
  if (e && e->index_type != HL_INVALID)
    hl_strbuf_appendf(out, "#(%s)", hl_dtype_name(e->index_type));
  if (e && e->pointer_type != HL_INVALID)
    hl_strbuf_appendf(out, "*(%s)", hl_dtype_name(e->pointer_type));
  if (s->element_size_in_bits != 0)
    hl_strbuf_appendf(out, "E(%lld)", (long long)s->element_size_in_bits);
  if (s->memory_space != 0) hl_strbuf_appendf(out, "S(%lld)", (long long)s->memory_space);
  if (e && e->split_count) {
    hl_strbuf_append(out, "SC");
    for (int i = 0; i < e->split_count; i++) {
      hl_strbuf_appendf(out, "(%lld:", (long long)e->splits[i].dimension);
      for (int j = 0; j < e->splits[i].count; j++)
        hl_strbuf_appendf(out, j ? ",%lld" : "%lld", (long long)e->splits[i].indices[j]);
      hl_strbuf_append_char(out, ')');
    }
  }
  if (e && e->physical_shape) {
    hl_strbuf_append(out, "P(");
    hl_shape_print(e->physical_shape, true, out);
    hl_strbuf_append_char(out, ')');
  }
  if (e && e->dynamic_metadata_prefix_bytes > 0)
    hl_strbuf_appendf(out, "M(%lld)", (long long)e->dynamic_metadata_prefix_bytes);
}

void hl_layout_print(const hl_shape_t *s, hl_strbuf_t *out) {
  hl_strbuf_append_char(out, '{');
  for (int i = 0; i < s->rank; i++) {
    if (i) hl_strbuf_append_char(out, ',');
    hl_strbuf_appendf(out, "%lld", (long long)s->minor_to_major[i]);
  }
  if (hl_layout_has_suffix(s)) {
    hl_strbuf_append_char(out, ':');
    print_suffix(s, out);
  }
  hl_strbuf_append_char(out, '}');
}

//===----------------------------------------------------------------------===//
// Physical order and size
//===----------------------------------------------------------------------===//

bool hl_layout_is_permutation(const hl_shape_t *s) {
  if (!s->has_layout) return true;
  bool seen[HL_MAX_RANK] = {false};
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->minor_to_major[i];
    if (d < 0 || d >= s->rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

void hl_layout_major_to_minor(const hl_shape_t *s, int64_t *out) {
  for (int i = 0; i < s->rank; i++)
    out[i] = s->has_layout ? s->minor_to_major[s->rank - 1 - i] : i;
}

int64_t hl_layout_element_bits(const hl_shape_t *s) {
  if (s->element_size_in_bits) return s->element_size_in_bits;
  return (int64_t)hl_dtype_size(s->dtype) * 8;
}

int64_t hl_layout_physical_byte_size(const hl_shape_t *s) {
  int64_t n = hl_shape_element_count(s);
  if (s->element_size_in_bits == 0) return n * (int64_t)hl_dtype_size(s->dtype);
  return (n * s->element_size_in_bits + 7) / 8;
}

bool hl_layout_is_row_major_order(const hl_shape_t *s) {
  int64_t mtm[HL_MAX_RANK];
  hl_layout_major_to_minor(s, mtm);
  int64_t prev = -1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[mtm[i]] == 1) continue;
    if (mtm[i] < prev) return false;
    prev = mtm[i];
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Bitcast
//===----------------------------------------------------------------------===//

const char *hl_layout_unimplemented_part(const hl_shape_t *s) {
  const hl_layout_ext_t *e = s->layout_ext;
  if (!e) return NULL;
  if (e->tile_count) return "a tiled layout (T(...))";
  for (int i = 0; i < e->dim_level_count; i++)
    if (e->dim_level_types[i] != HL_DIM_DENSE) return "a sparse layout (D(...))";
  if (e->tail_padding_alignment > 1) return "tail padding (L(...))";
  if (e->split_count) return "split configs (SC(...))";
  if (e->physical_shape) return "a physical shape (P(...))";
  if (e->dynamic_metadata_prefix_bytes) return "dynamic-shape metadata (M(...))";
  return NULL;
}

static bool is_packed(const hl_shape_t *s) {
  return s->element_size_in_bits != 0 &&
         s->element_size_in_bits != (int64_t)hl_dtype_size(s->dtype) * 8;
}

hl_status_t hl_layout_check_bitcast(const hl_shape_t *x, const hl_shape_t *r) {
  if (!hl_shape_is_array(x) || !hl_shape_is_array(r))
    return HL_INVALID("bitcast needs array shapes, got %s -> %s", hl_shape_layout_debug_string(x),
                      hl_shape_layout_debug_string(r));
  if (!hl_layout_is_permutation(x) || !hl_layout_is_permutation(r))
    return HL_INVALID("bitcast layouts must be permutations of the dimensions");
  for (int side = 0; side < 2; side++) {
    const hl_shape_t *s = side ? r : x;
    const char *what = hl_layout_unimplemented_part(s);
    if (what)
      return HL_UNIMPL("bitcast with %s on its %s (%s) is not supported: only dense "
                       "minor_to_major layouts, E(n) and S(n) are reinterpreted",
                       what, side ? "result" : "operand", hl_shape_layout_debug_string(s));
    int bits = hl_dtype_bit_width(s->dtype);
    if (s->element_size_in_bits != 0 && s->element_size_in_bits != bits &&
        s->element_size_in_bits != (int64_t)hl_dtype_size(s->dtype) * 8)
      return HL_INVALID("E(%lld) on %s: a %s element has %d bits (E(n) may only pack "
                        "sub-byte types to their own width)",
                        (long long)s->element_size_in_bits, hl_shape_layout_debug_string(s),
                        hl_dtype_name(s->dtype), bits);
  }
  if (x->dtype != r->dtype) {
    int xw = hl_dtype_bit_width(x->dtype), rw = hl_dtype_bit_width(r->dtype);
    if (x->dtype == HL_PRED || r->dtype == HL_PRED)
      return HL_UNIMPL("bitcast between pred and %s is not supported: XLA gives a pred byte "
                       "other than 0 or 1 no meaning",
                       hl_dtype_name(x->dtype == HL_PRED ? r->dtype : x->dtype));
    // Sub-byte types of one width (s4 / u4 / f4e2m1fn, ...) stored alike
    // share their bits exactly: an element is its low `width` bits, packed or
    // not. Any other change across sub-byte storage would read the bit order
    // inside a packed byte or the unused bits of an unpacked one, which XLA
    // leaves to the backend: no exact answer exists.
    bool same_width = xw == rw && hl_layout_element_bits(x) == hl_layout_element_bits(r);
    if (!same_width && (is_packed(x) || is_packed(r)))
      return HL_UNIMPL("bitcast from %s to %s reinterprets packed sub-byte storage (E(n)), "
                       "whose bit order XLA does not define; packed bitcasts must keep the "
                       "element width",
                       hl_dtype_name(x->dtype), hl_dtype_name(r->dtype));
    if (!same_width && (xw < 8 || rw < 8))
      return HL_UNIMPL("bitcast from %s to %s reinterprets the unused bits of sub-byte "
                       "elements, which XLA leaves unspecified",
                       hl_dtype_name(x->dtype), hl_dtype_name(r->dtype));
  } else if (hl_layout_element_bits(x) != hl_layout_element_bits(r)) {
    return HL_UNIMPL("bitcast between packed and unpacked %s storage (E(%lld) -> E(%lld)) "
                     "is not supported",
                     hl_dtype_name(x->dtype), (long long)hl_layout_element_bits(x),
                     (long long)hl_layout_element_bits(r));
  }
  for (int i = 0; i < x->rank; i++)
    if (x->dims[i] < 0) return NULL;  // unbounded: sized at run time
  for (int i = 0; i < r->rank; i++)
    if (r->dims[i] < 0) return NULL;
  int64_t xb = hl_layout_physical_byte_size(x), rb = hl_layout_physical_byte_size(r);
  if (xb != rb)
    return HL_INVALID("bitcast must keep the byte size: operand %s has %lld bytes, result %s "
                      "has %lld",
                      hl_shape_layout_debug_string(x), (long long)xb, hl_shape_layout_debug_string(r),
                      (long long)rb);
  return NULL;
}
