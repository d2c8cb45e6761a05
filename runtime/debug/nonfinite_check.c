// The scan behind --check-nans / --check-infs (see nonfinite_check.h).
#include "runtime/debug/nonfinite_check.h"

#include <math.h>
#include <string.h>

#include "runtime/base/strbuf.h"

// What a scan of one array found.
typedef struct scan {
  int64_t elements, nans, infs;
  int64_t first_bad;  // flat element index of the first element that failed the check, -1: none
  double min, max;    // over the non-NaN values (Inf included); NAN when there are none
} scan_t;

static void scan_value(scan_t *s, double v, int64_t element, bool check_nans, bool check_infs) {
  if (isnan(v)) {
    s->nans++;
    if (check_nans && s->first_bad < 0) s->first_bad = element;
    return;
  }
  if (isinf(v)) {
    s->infs++;
    if (check_infs && s->first_bad < 0) s->first_bad = element;
  }
  if (isnan(s->min) || v < s->min) s->min = v;
  if (isnan(s->max) || v > s->max) s->max = v;
}

// Complex values count as bad when either part is; min / max are over the
// parts.
static void scan_array(const hl_literal_t *lit, bool check_nans, bool check_infs, scan_t *s) {
  memset(s, 0, sizeof(*s));
  s->first_bad = -1;
  s->min = s->max = NAN;
  int64_t n = hl_literal_element_count(lit);
  s->elements = n;
  hl_dtype_t t = lit->shape.dtype;
  if (t == HL_F32 || t == HL_C64) {
    const float *p = lit->data;
    int parts = t == HL_C64 ? 2 : 1;
    for (int64_t i = 0; i < n * parts; i++) scan_value(s, p[i], i / parts, check_nans, check_infs);
  } else if (t == HL_F64 || t == HL_C128) {
    const double *p = lit->data;
    int parts = t == HL_C128 ? 2 : 1;
    for (int64_t i = 0; i < n * parts; i++) scan_value(s, p[i], i / parts, check_nans, check_infs);
  } else if (hl_dtype_is_array(t) && t != HL_TUPLE) {
    for (int64_t i = 0; i < n; i++) scan_value(s, hl_literal_get_f64(lit, i), i, check_nans, check_infs);
  }
}

static bool can_be_nonfinite(hl_dtype_t t) { return hl_dtype_is_float(t) || hl_dtype_is_complex(t); }

// "[1,2]": the row-major index of flat element `flat`.
static void append_index(hl_strbuf_t *out, const hl_shape_t *shape, int64_t flat) {
  int64_t idx[64];
  int rank = shape->rank < 64 ? shape->rank : 64;
  for (int d = rank - 1; d >= 0; d--) {
    int64_t dim = shape->dims[d] > 0 ? shape->dims[d] : 1;
    idx[d] = flat % dim;
    flat /= dim;
  }
  hl_strbuf_append(out, "[");
  for (int d = 0; d < rank; d++) hl_strbuf_appendf(out, d ? ",%lld" : "%lld", (long long)idx[d]);
  hl_strbuf_append(out, "]");
}

static void append_summary(hl_strbuf_t *out, const hl_literal_t *lit) {
  hl_strbuf_appendf(out, "%s", hl_shape_debug_string(&lit->shape));
  if (!hl_shape_is_array(&lit->shape)) return;
  scan_t s;
  scan_array(lit, true, true, &s);
  if (s.elements == 0) return;
  hl_strbuf_appendf(out, " min %.9g max %.9g, %lld NaN, %lld Inf", s.min, s.max,
                    (long long)s.nans, (long long)s.infs);
}

// True when some element of an f32 / f64 (or complex) array has an all-ones
// exponent (NaN or Inf): a branch-free pass the compiler vectorises, so a
// clean result costs about one read of it.
static bool may_be_nonfinite(const hl_literal_t *lit) {
  hl_dtype_t t = lit->shape.dtype;
  int64_t n = hl_literal_element_count(lit) * (hl_dtype_is_complex(t) ? 2 : 1);
  if (t == HL_F32 || t == HL_C64) {
    const uint32_t *p = lit->data;
    uint32_t any = 0;
    for (int64_t i = 0; i < n; i++) any |= (uint32_t)((p[i] & 0x7f800000u) == 0x7f800000u);
    return any != 0;
  }
  if (t == HL_F64 || t == HL_C128) {
    const uint64_t *p = lit->data;
    uint64_t any = 0;
    for (int64_t i = 0; i < n; i++)
      any |= (uint64_t)((p[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
    return any != 0;
  }
  return true;  // other float types: the full scan decides
}

// The first array leaf (depth-first) that fails the check, and its scan.
static const hl_literal_t *find_bad_leaf(const hl_literal_t *lit, bool check_nans,
                                         bool check_infs, int *leaf, scan_t *out) {
  if (!lit) return NULL;
  if (lit->shape.dtype == HL_TUPLE) {
    for (int i = 0; i < lit->shape.tuple_count; i++) {
      const hl_literal_t *bad = find_bad_leaf(lit->elements[i], check_nans, check_infs, leaf, out);
      if (bad) return bad;
    }
    return NULL;
  }
  if (!hl_shape_is_array(&lit->shape) || !can_be_nonfinite(lit->shape.dtype)) return NULL;
  if (!may_be_nonfinite(lit)) {
    (*leaf)++;
    return NULL;
  }
  scan_array(lit, check_nans, check_infs, out);
  if (out->first_bad >= 0) return lit;
  (*leaf)++;
  return NULL;
}

hl_status_t hl_nonfinite_check(const hl_instruction_t *inst, hl_literal_t *const *operands,
                               int operand_count, const hl_literal_t *result, bool check_nans,
                               bool check_infs, const char *where) {
  if (!result || (!check_nans && !check_infs)) return NULL;
  int leaf = 0;
  scan_t s;
  const hl_literal_t *bad = find_bad_leaf(result, check_nans, check_infs, &leaf, &s);
  if (!bad) return NULL;
  hl_strbuf_t msg;
  hl_strbuf_init(&msg);
  bool nan_first = check_nans && s.nans > 0;
  hl_strbuf_appendf(&msg, "%s: %s produced %s", check_nans && check_infs ? "--check-nans/--check-infs"
                    : check_nans ? "--check-nans" : "--check-infs",
                    hl_instruction_location(inst), nan_first ? "NaN" : "Inf");
  if (where && *where) hl_strbuf_appendf(&msg, " (%s)", where);
  hl_strbuf_append(&msg, ": first at index ");
  append_index(&msg, &bad->shape, s.first_bad);
  if (result->shape.dtype == HL_TUPLE) hl_strbuf_appendf(&msg, " of tuple leaf %d", leaf);
  hl_strbuf_appendf(&msg, "; result %s has %lld NaN and %lld Inf of %lld elements",
                    hl_shape_debug_string(&bad->shape), (long long)s.nans, (long long)s.infs,
                    (long long)s.elements);
  for (int k = 0; k < operand_count; k++) {
    if (!operands[k]) continue;
    hl_strbuf_appendf(&msg, "; operand %d ('%s') ", k,
                      k < inst->operand_count ? inst->operands[k]->name : "?");
    append_summary(&msg, operands[k]);
  }
  hl_status_t st = msg.failed ? HL_OOM() : HL_INVALID("%s", hl_strbuf_cstr(&msg));
  hl_strbuf_deinit(&msg);
  return st;
}
