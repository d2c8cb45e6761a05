// MLIR dictionary attribute -> XLA_FFI_Attrs, as XLA's FFI attribute
// encoding hands them to handlers (xla/ffi/attribute_map.cc's kinds: scalar,
// string, array, dictionary).
#include "runtime/custom_calls/ffi_call_attrs.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"

typedef struct {
  const char *s, *p;
  hl_ffi_attr_store_t *store;
} parser_t;

static void *keep(parser_t *ps, size_t bytes) {
  void *p = hl_calloc(1, bytes ? bytes : 1);
  if (!p) return NULL;
  void **grown = hl_realloc(ps->store->blocks, (size_t)(ps->store->count + 1) * sizeof(void *));
  if (!grown) {
    hl_free(p);
    return NULL;
  }
  ps->store->blocks = grown;
  grown[ps->store->count++] = p;
  return p;
}

static void ws(parser_t *ps) {
  while (isspace((unsigned char)*ps->p)) ps->p++;
}

static hl_status_t err(parser_t *ps, const char *what) {
  return HL_INVALID("typed-FFI backend_config %s: expected %s at offset %ld", ps->s, what,
                    (long)(ps->p - ps->s));
}

static bool eat(parser_t *ps, const char *t) {
  ws(ps);
  size_t n = strlen(t);
  if (strncmp(ps->p, t, n) != 0) return false;
  ps->p += n;
  return true;
}

// MLIR element type name -> FFI data type and byte size.
static bool type_of(const char *name, size_t n, XLA_FFI_DataType *t, size_t *size) {
  static const struct {
    const char *name;
    XLA_FFI_DataType t;
    size_t size;
  } k[] = {
      {"i1", XLA_FFI_DataType_PRED, 1}, {"i8", XLA_FFI_DataType_S8, 1},
      {"i16", XLA_FFI_DataType_S16, 2}, {"i32", XLA_FFI_DataType_S32, 4},
      {"i64", XLA_FFI_DataType_S64, 8}, {"si8", XLA_FFI_DataType_S8, 1},
      {"si16", XLA_FFI_DataType_S16, 2}, {"si32", XLA_FFI_DataType_S32, 4},
      {"si64", XLA_FFI_DataType_S64, 8}, {"ui8", XLA_FFI_DataType_U8, 1},
      {"ui16", XLA_FFI_DataType_U16, 2}, {"ui32", XLA_FFI_DataType_U32, 4},
      {"ui64", XLA_FFI_DataType_U64, 8}, {"f32", XLA_FFI_DataType_F32, 4},
      {"f64", XLA_FFI_DataType_F64, 8},
  };
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
    if (strlen(k[i].name) == n && strncmp(k[i].name, name, n) == 0) {
      *t = k[i].t;
      *size = k[i].size;
      return true;
    }
  return false;
}

static bool is_float_type(XLA_FFI_DataType t) {
  return t == XLA_FFI_DataType_F32 || t == XLA_FFI_DataType_F64;
}

static void store_number(XLA_FFI_DataType t, void *dst, long long iv, unsigned long long uv,
                         double fv, bool is_float) {
  switch (t) {
    case XLA_FFI_DataType_PRED: *(uint8_t *)dst = (uint8_t)(iv != 0); break;
    case XLA_FFI_DataType_S8: *(int8_t *)dst = (int8_t)iv; break;
    case XLA_FFI_DataType_S16: *(int16_t *)dst = (int16_t)iv; break;
    case XLA_FFI_DataType_S32: *(int32_t *)dst = (int32_t)iv; break;
    case XLA_FFI_DataType_S64: *(int64_t *)dst = iv; break;
    case XLA_FFI_DataType_U8: *(uint8_t *)dst = (uint8_t)uv; break;
    case XLA_FFI_DataType_U16: *(uint16_t *)dst = (uint16_t)uv; break;
    case XLA_FFI_DataType_U32: *(uint32_t *)dst = (uint32_t)uv; break;
    case XLA_FFI_DataType_U64: *(uint64_t *)dst = uv; break;
    case XLA_FFI_DataType_F32: *(float *)dst = (float)(is_float ? fv : (double)iv); break;
    default: *(double *)dst = is_float ? fv : (double)iv; break;
  }
}

// One number literal at ps->p: integer or float text.
static hl_status_t number(parser_t *ps, long long *iv, unsigned long long *uv, double *fv,
                          bool *is_float) {
  ws(ps);
  const char *start = ps->p;
  char *end;
  *fv = strtod(start, &end);
  if (end == start) return err(ps, "a number");
  *is_float = false;
  for (const char *q = start; q < end; q++)
    if (*q == '.' || *q == 'e' || *q == 'E' || *q == 'n' || *q == 'i') *is_float = true;
  if (!*is_float) {
    *iv = strtoll(start, NULL, 10);
    *uv = start[0] == '-' ? (unsigned long long)*iv : strtoull(start, NULL, 10);
  } else {
    *iv = (long long)*fv;
    *uv = (unsigned long long)*iv;
  }
  ps->p = end;
  return NULL;
}

static hl_status_t type_name(parser_t *ps, XLA_FFI_DataType *t, size_t *size) {
  ws(ps);
  const char *start = ps->p;
  while (isalnum((unsigned char)*ps->p)) ps->p++;
  if (!type_of(start, (size_t)(ps->p - start), t, size)) {
    ps->p = start;
    return err(ps, "an element type (i1, i8..i64, ui8..ui64, f32, f64)");
  }
  return NULL;
}

static hl_status_t dictionary(parser_t *ps, XLA_FFI_Attrs *out);

static hl_status_t value(parser_t *ps, XLA_FFI_AttrType *type, void **attr) {
  ws(ps);
  if (*ps->p == '{') {
    XLA_FFI_Attrs *d = keep(ps, sizeof(*d));
    if (!d) return HL_OOM();
    *type = XLA_FFI_AttrType_DICTIONARY;
    *attr = d;
    return dictionary(ps, d);
  }
  if (*ps->p == '"') {
    const char *q = ++ps->p;
    size_t n = 0;
    while (*q && *q != '"') {
      if (*q == '\\' && q[1]) q++;
      q++, n++;
    }
    if (*q != '"') return err(ps, "a closing '\"'");
    XLA_FFI_ByteSpan *span = keep(ps, sizeof(*span));
    char *text = keep(ps, n + 1);
    if (!span || !text) return HL_OOM();
    size_t i = 0;
    for (; ps->p < q; ps->p++) {
      if (*ps->p == '\\' && ps->p + 1 < q) {
        ps->p++;
        if (isxdigit((unsigned char)ps->p[0]) && isxdigit((unsigned char)ps->p[1])) {
          char hex[3] = {ps->p[0], ps->p[1], 0};  // MLIR's \XX escapes
          text[i++] = (char)strtol(hex, NULL, 16);
          ps->p++;
          continue;
        }
        text[i++] = *ps->p == 'n' ? '\n' : *ps->p == 't' ? '\t' : *ps->p;
        continue;
      }
      text[i++] = *ps->p;
    }
    ps->p = q + 1;
    span->ptr = text;
    span->len = i;
    *type = XLA_FFI_AttrType_STRING;
    *attr = span;
    return NULL;
  }
  if (eat(ps, "true") || eat(ps, "false")) {
    XLA_FFI_Scalar *s = keep(ps, sizeof(*s));
    uint8_t *b = keep(ps, 1);
    if (!s || !b) return HL_OOM();
    *b = ps->p[-1] == 'e' && ps->p[-2] == 'u';  // "true"
    s->dtype = XLA_FFI_DataType_PRED;
    s->value = b;
    *type = XLA_FFI_AttrType_SCALAR;
    *attr = s;
    return NULL;
  }
  if (eat(ps, "array<")) {
    XLA_FFI_DataType t;
    size_t size;
    HL_RETURN_IF_ERROR(type_name(ps, &t, &size));
    // Count the elements first.
    size_t n = 0;
    const char *save = ps->p;
    if (eat(ps, ":")) {
      for (;;) {
        long long iv;
        unsigned long long uv;
        double fv;
        bool f;
        HL_RETURN_IF_ERROR(number(ps, &iv, &uv, &fv, &f));
        n++;
        if (!eat(ps, ",")) break;
      }
    }
    ps->p = save;
    XLA_FFI_Array *a = keep(ps, sizeof(*a));
    char *data = keep(ps, n * size);
    if (!a || !data) return HL_OOM();
    if (eat(ps, ":")) {
      for (size_t i = 0; i < n; i++) {
        long long iv;
        unsigned long long uv;
        double fv;
        bool f;
        HL_RETURN_IF_ERROR(number(ps, &iv, &uv, &fv, &f));
        store_number(t, data + i * size, iv, uv, fv, f);
        eat(ps, ",");
      }
    }
    if (!eat(ps, ">")) return err(ps, "'>' closing the array");
    a->dtype = t;
    a->size = n;
    a->data = data;
    *type = XLA_FFI_AttrType_ARRAY;
    *attr = a;
    return NULL;
  }
  long long iv;
  unsigned long long uv;
  double fv;
  bool f;
  HL_RETURN_IF_ERROR(number(ps, &iv, &uv, &fv, &f));
  XLA_FFI_DataType t = f ? XLA_FFI_DataType_F64 : XLA_FFI_DataType_S64;
  size_t size = 8;
  if (eat(ps, ":")) HL_RETURN_IF_ERROR(type_name(ps, &t, &size));
  if (f && !is_float_type(t)) return err(ps, "an integer for an integer type");
  XLA_FFI_Scalar *s = keep(ps, sizeof(*s));
  void *v = keep(ps, size);
  if (!s || !v) return HL_OOM();
  store_number(t, v, iv, uv, fv, f);
  s->dtype = t;
  s->value = v;
  *type = XLA_FFI_AttrType_SCALAR;
  *attr = s;
  return NULL;
}

typedef struct {
  XLA_FFI_ByteSpan *name;
  XLA_FFI_AttrType type;
  void *attr;
} entry_t;

static int by_name(const void *a, const void *b) {
  const XLA_FFI_ByteSpan *x = ((const entry_t *)a)->name, *y = ((const entry_t *)b)->name;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->ptr, y->ptr, n);
  return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

static hl_status_t dictionary(parser_t *ps, XLA_FFI_Attrs *out) {
  out->struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  if (!eat(ps, "{")) return err(ps, "'{'");
  entry_t entries[128];
  int n = 0;
  ws(ps);
  if (!eat(ps, "}")) {
    for (;;) {
      if (n == 128) return err(ps, "at most 128 attributes");
      ws(ps);
      const char *start = ps->p;
      bool quoted = *ps->p == '"';
      if (quoted) {
        start = ++ps->p;
        while (*ps->p && *ps->p != '"') ps->p++;
      } else {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.' || *ps->p == '$')
          ps->p++;
      }
      size_t len = (size_t)(ps->p - start);
      if (quoted) {
        if (*ps->p != '"') return err(ps, "a closing '\"'");
        ps->p++;
      }
      if (len == 0) return err(ps, "an attribute name");
      XLA_FFI_ByteSpan *name = keep(ps, sizeof(*name));
      char *text = keep(ps, len + 1);
      if (!name || !text) return HL_OOM();
      memcpy(text, start, len);
      name->ptr = text;
      name->len = len;
      entries[n].name = name;
      if (!eat(ps, "=")) {
        // A name alone is a unit attribute: XLA has no FFI kind for it.
        return err(ps, "'=' (unit attributes are not supported)");
      }
      HL_RETURN_IF_ERROR(value(ps, &entries[n].type, &entries[n].attr));
      n++;
      if (eat(ps, ",")) continue;
      if (eat(ps, "}")) break;
      return err(ps, "',' or '}'");
    }
  }
  qsort(entries, (size_t)n, sizeof(entry_t), by_name);
  out->size = n;
  out->types = keep(ps, (size_t)n * sizeof(XLA_FFI_AttrType));
  out->names = keep(ps, (size_t)n * sizeof(XLA_FFI_ByteSpan *));
  out->attrs = keep(ps, (size_t)n * sizeof(void *));
  if (!out->types || !out->names || !out->attrs) return HL_OOM();
  for (int i = 0; i < n; i++) {
    out->types[i] = entries[i].type;
    out->names[i] = entries[i].name;
    out->attrs[i] = entries[i].attr;
  }
  return NULL;
}

hl_status_t hl_ffi_attrs_build(const char *text, XLA_FFI_Attrs *out, hl_ffi_attr_store_t *store) {
  memset(out, 0, sizeof(*out));
  out->struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  if (!text) return NULL;
  parser_t ps = {text, text, store};
  ws(&ps);
  if (!*ps.p) return NULL;
  HL_RETURN_IF_ERROR(dictionary(&ps, out));
  ws(&ps);
  if (*ps.p) return err(&ps, "the end of the dictionary");
  return NULL;
}

void hl_ffi_attr_store_free(hl_ffi_attr_store_t *store) {
  for (int i = 0; i < store->count; i++) hl_free(store->blocks[i]);
  hl_free(store->blocks);
  store->blocks = NULL;
  store->count = 0;
}
