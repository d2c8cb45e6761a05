#include "runtime/base/shape.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"

hl_shape_t hl_shape_array(hl_dtype_t dtype, int rank, const int64_t *dims) {
  hl_shape_t s;
  memset(&s, 0, sizeof(s));
  s.dtype = dtype;
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
  return s;
}

hl_shape_t hl_shape_scalar(hl_dtype_t dtype) { return hl_shape_array(dtype, 0, NULL); }
hl_shape_t hl_shape_token(void) { return hl_shape_array(HL_TOKEN, 0, NULL); }

hl_status_t hl_shape_tuple(const hl_shape_t *elements, int count, hl_shape_t *out) {
  hl_shape_t s;
  memset(&s, 0, sizeof(s));
  s.dtype = HL_TUPLE;
  *out = s;
  if (count == 0) return NULL;
  out->tuple = hl_calloc((size_t)count, sizeof(hl_shape_t));
  if (!out->tuple) return HL_OOM();
  out->tuple_count = count;
  for (int i = 0; i < count; i++) {
    hl_status_t st = hl_shape_copy(&elements[i], &out->tuple[i]);
    if (st) {
      hl_shape_deinit(out);
      return st;
    }
  }
  return NULL;
}

hl_status_t hl_shape_copy(const hl_shape_t *src, hl_shape_t *out) {
  *out = *src;
  out->tuple = NULL;
  out->tuple_count = 0;
  out->layout_ext = NULL;
  HL_RETURN_IF_ERROR(hl_layout_ext_copy(src->layout_ext, &out->layout_ext));
  if (src->tuple_count == 0) return NULL;
  out->tuple = hl_calloc((size_t)src->tuple_count, sizeof(hl_shape_t));
  if (!out->tuple) return HL_OOM();
  out->tuple_count = src->tuple_count;
  for (int i = 0; i < src->tuple_count; i++) {
    hl_status_t st = hl_shape_copy(&src->tuple[i], &out->tuple[i]);
    if (st) {
      hl_shape_deinit(out);
      return st;
    }
  }
  return NULL;
}

void hl_shape_deinit(hl_shape_t *s) {
  for (int i = 0; i < s->tuple_count; i++) hl_shape_deinit(&s->tuple[i]);
  hl_free(s->tuple);
  hl_layout_ext_free(s->layout_ext);
  memset(s, 0, sizeof(*s));
}

bool hl_shape_is_tuple(const hl_shape_t *s) { return s->dtype == HL_TUPLE; }
bool hl_shape_is_array(const hl_shape_t *s) { return hl_dtype_is_array(s->dtype); }

int64_t hl_shape_element_count(const hl_shape_t *s) {
  if (!hl_shape_is_array(s)) return 0;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->dims[i];
  return n;
}

int64_t hl_shape_byte_size(const hl_shape_t *s) {
  return hl_shape_element_count(s) * (int64_t)hl_dtype_size(s->dtype);
}

bool hl_shape_size_fits(const hl_shape_t *s) {
  for (int i = 0; i < s->tuple_count; i++)
    if (!hl_shape_size_fits(&s->tuple[i])) return false;
  size_t esize = hl_dtype_is_array(s->dtype) ? hl_dtype_size(s->dtype) : 0;
  int64_t product = esize ? (int64_t)esize : 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] <= 0) continue;
    if (product > INT64_MAX / s->dims[i]) return false;
    product *= s->dims[i];
  }
  return true;
}

bool hl_shape_same_dims(const hl_shape_t *a, const hl_shape_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool hl_shape_equal(const hl_shape_t *a, const hl_shape_t *b) {
  if (a->dtype != b->dtype) return false;
  if (a->dtype == HL_TUPLE) {
    if (a->tuple_count != b->tuple_count) return false;
    for (int i = 0; i < a->tuple_count; i++)
      if (!hl_shape_equal(&a->tuple[i], &b->tuple[i])) return false;
    return true;
  }
  return hl_shape_same_dims(a, b);
}

void hl_shape_strides(const hl_shape_t *s, int64_t *strides) {
  int64_t st = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= s->dims[i];
  }
}

bool hl_shape_has_default_layout(const hl_shape_t *s) {
  if (!s->has_layout) return true;
  for (int i = 0; i < s->rank; i++)
    if (s->minor_to_major[i] != s->rank - 1 - i) return false;
  return true;
}

void hl_shape_print(const hl_shape_t *s, bool with_layout, hl_strbuf_t *out) {
  if (s->dtype == HL_TUPLE) {
    hl_strbuf_append_char(out, '(');
    for (int i = 0; i < s->tuple_count; i++) {
      if (i) hl_strbuf_append(out, ", ");
      hl_shape_print(&s->tuple[i], with_layout, out);
    }
    hl_strbuf_append_char(out, ')');
    return;
  }
  hl_strbuf_append(out, hl_dtype_name(s->dtype));
  hl_strbuf_append_char(out, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i) hl_strbuf_append_char(out, ',');
    if (s->dynamic_mask & (1u << i)) {
      if (s->dims[i] < 0)
        hl_strbuf_append_char(out, '?');
      else
        hl_strbuf_appendf(out, "<=%lld", (long long)s->dims[i]);
    } else {
      hl_strbuf_appendf(out, "%lld", (long long)s->dims[i]);
    }
  }
  hl_strbuf_append_char(out, ']');
  // As XLA: a scalar's layout is printed only when it says more than "{}".
  if (with_layout && s->has_layout && (s->rank > 0 || hl_layout_has_suffix(s)))
    hl_layout_print(s, out);
}

static const char *debug_string(const hl_shape_t *s, bool with_layout) {
  // A few rotating buffers so one message may show several shapes.
  static _Thread_local char bufs[4][512];
  static _Thread_local int next;
  char *buf = bufs[next];
  next = (next + 1) % 4;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_shape_print(s, with_layout, &sb);
  snprintf(buf, sizeof(bufs[0]), "%s", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return buf;
}

const char *hl_shape_debug_string(const hl_shape_t *s) { return debug_string(s, false); }
const char *hl_shape_layout_debug_string(const hl_shape_t *s) { return debug_string(s, true); }
