// VHLO types and attributes -> the StableHLO syntax tree's shapes and
// attributes (vhlo_internal.h), for vhlo.c's op conversion. Attribute and
// type codes are those of stablehlo/dialect/VhloBytecode.cpp (VHLO never
// renumbers them); builtin ones those of BuiltinDialectBytecode.td; each
// attribute gets the form the text parser gives its StableHLO spelling.
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/bytecode/sdy_attrs.h"
#include "runtime/bytecode/vhlo_internal.h"
#include "runtime/stablehlo/mlir_parser.h"

// Attribute nesting limit (a hostile file cannot exhaust the stack).
enum { kMaxAttrDepth = 64 };

static const char *bc_string(const vctx_t *v, uint64_t idx) {
  return idx < v->bc->string_count ? v->bc->strings[idx] : NULL;
}

// ---- types ----

static hl_dtype_t element_dtype(uint64_t code, hl_dtype_t complex_of) {
  static const struct { uint64_t code; const char *name; } kElems[] = {
      {0, "i1"},   {2, "bf16"}, {3, "f16"},  {4, "f32"},  {5, "f64"},  {6, "f8E4M3FN"},
      {7, "f8E5M2"}, {9, "index"}, {10, "i4"}, {11, "i8"}, {12, "i16"}, {13, "i32"},
      {14, "i64"}, {15, "ui4"}, {16, "ui8"}, {17, "ui16"}, {18, "ui32"}, {19, "ui64"},
      {27, "f8E4M3FNUZ"}, {28, "f8E5M2FNUZ"}, {29, "f8E4M3B11FNUZ"}, {31, "i2"}, {32, "ui2"},
      {35, "f8E4M3"}, {36, "f8E3M4"}, {37, "f4E2M1FN"}, {38, "f6E2M3FN"}, {39, "f6E3M2FN"},
      {40, "f8E8M0FNU"},
  };
  if (code == 1) return complex_of == HL_F32 ? HL_C64 : complex_of == HL_F64 ? HL_C128 : HL_INVALID;
  for (size_t i = 0; i < sizeof(kElems) / sizeof(kElems[0]); i++)
    if (kElems[i].code == code) return hl_mlir_element_type(kElems[i].name, strlen(kElems[i].name));
  return HL_INVALID;
}

static hl_status_t entry_reader(const vctx_t *v, const hl_bc_entry_t *e, const char *what,
                                uint64_t idx, hl_bc_reader_t *r, uint64_t *code) {
  if (!e->custom) {
    const char *text = (const char *)e->bytes.data;
    size_t n = e->bytes.size;
    return verr(v, "%s %llu is written in the text form '%.*s' of dialect '%s', which this "
                "reader does not parse", what, (unsigned long long)idx,
                (int)(n > 80 ? 80 : (n ? n - 1 : 0)), text, v->bc->dialects[e->dialect]);
  }
  r->p = e->bytes.data;
  r->end = e->bytes.data + e->bytes.size;
  if (!hl_bc_read_varint(r, code)) return verr(v, "%s %llu is empty", what, (unsigned long long)idx);
  return NULL;
}

static hl_status_t decode_element(const vctx_t *v, uint64_t idx, hl_dtype_t *out, int depth);

// A builtin element type (BuiltinDialectBytecode.td): mixed artifacts
// (StableHLO 1.11+) keep attributes of other dialects in builtin form.
static hl_status_t builtin_element(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                   hl_dtype_t *out, int depth) {
  static const char *const kFloats[] = {"bf16", "f16", "f32", "f64"};  // codes 3..6
  char name[32];
  uint64_t ws, el;
  hl_dtype_t inner;
  switch (code) {
    case 0:  // IntegerType { width << 2 | signedness (0 signless, 1 signed, 2 unsigned) }
      if (!hl_bc_read_varint(r, &ws) || (ws >> 2) > 64) return verr(v, "bad builtin integer type");
      snprintf(name, sizeof(name), "%s%llu", (ws & 3) == 2 ? "ui" : (ws & 3) == 1 ? "si" : "i",
               (unsigned long long)(ws >> 2));
      break;
    case 1: snprintf(name, sizeof(name), "index"); break;
    case 3: case 4: case 5: case 6: snprintf(name, sizeof(name), "%s", kFloats[code - 3]); break;
    case 9:  // ComplexType { element }
      if (!hl_bc_read_varint(r, &el)) return verr(v, "truncated complex type");
      HL_RETURN_IF_ERROR(decode_element(v, el, &inner, depth + 1));
      *out = inner == HL_F32 ? HL_C64 : inner == HL_F64 ? HL_C128 : HL_INVALID;
      if (*out == HL_INVALID) return verr(v, "complex of %s is not supported", hl_dtype_name(inner));
      return NULL;
    default:
      return verr(v, "builtin type code %llu is not an element type this reader supports",
                  (unsigned long long)code);
  }
  *out = hl_mlir_element_type(name, strlen(name));
  if (*out == HL_INVALID) return verr(v, "builtin element type %s is not supported", name);
  return NULL;
}

static hl_status_t read_f64(const vctx_t *v, hl_bc_reader_t *r, double *out) {
  int64_t s;
  if (!hl_bc_read_svarint(r, &s)) return verr(v, "truncated float");
  union { uint64_t u; double d; } bits = {(uint64_t)s};
  *out = bits.d;
  return NULL;
}

// UniformQuantized(PerAxis)V1Type -> an entry of the file's quantization table
// (as the text parser fills it for `!quant.uniform<...>`); *out = its storage type.
static hl_status_t quant_element(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                 hl_dtype_t *out, int depth) {
  uint64_t flags, storage, expressed, dim = 0, n = 1;
  hl_mlir_quant_type_t q;
  memset(&q, 0, sizeof(q));
  q.axis = -1;
  hl_dtype_t st_type, ex_type;
  if (!hl_bc_read_varint(r, &flags) || !hl_bc_read_varint(r, &storage) ||
      !hl_bc_read_varint(r, &expressed))
    return verr(v, "truncated quantized type");
  HL_RETURN_IF_ERROR(decode_element(v, storage, &st_type, depth + 1));
  HL_RETURN_IF_ERROR(decode_element(v, expressed, &ex_type, depth + 1));
  int bits = hl_dtype_bit_width(st_type);
  char name[16];
  snprintf(name, sizeof(name), "%s%d", (flags & 1) ? "i" : "ui", bits);
  q.storage = hl_dtype_is_integer(st_type) ? hl_mlir_element_type(name, strlen(name)) : HL_INVALID;
  q.expressed = ex_type;
  if (q.storage == HL_INVALID || !hl_dtype_is_float(ex_type))
    return verr(v, "quantized type with storage %s / expressed %s is not supported",
                hl_dtype_name(st_type), hl_dtype_name(ex_type));
  double scale = 0;
  int64_t zp = 0;
  if (code == 24) {  // { flags, storage, expressed, scale, zero_point, min, max }
    HL_RETURN_IF_ERROR(read_f64(v, r, &scale));
    if (!hl_bc_read_svarint(r, &zp)) return verr(v, "truncated quantized type");
  } else {           // { flags, storage, expressed, dim, min, max, scales[], zero_points[] }
    if (!hl_bc_read_varint(r, &dim) || dim > 64) return verr(v, "bad quantization dimension");
    q.axis = (int)dim;
  }
  if (!hl_bc_read_svarint(r, &q.storage_min) || !hl_bc_read_svarint(r, &q.storage_max))
    return verr(v, "truncated quantized type");
  if (code == 30 && (!hl_bc_read_varint(r, &n) || n == 0 || n > (uint64_t)(r->end - r->p)))
    return verr(v, "bad quantization scales");
  q.scales = hl_calloc(n, sizeof(double));
  q.zero_points = hl_calloc(n, sizeof(int64_t));
  if (!q.scales || !q.zero_points) {
    hl_free(q.scales);
    hl_free(q.zero_points);
    return HL_OOM();
  }
  q.count = (int)n;
  hl_status_t st = NULL;
  if (code == 24) {
    q.scales[0] = scale;
    q.zero_points[0] = zp;
  } else {
    for (uint64_t k = 0; !st && k < n; k++) st = read_f64(v, r, &q.scales[k]);
    uint64_t nz;
    if (!st && (!hl_bc_read_varint(r, &nz) || nz != n)) st = verr(v, "zero points and scales differ in count");
    for (uint64_t k = 0; !st && k < n; k++)
      if (!hl_bc_read_svarint(r, &q.zero_points[k])) st = verr(v, "truncated zero points");
  }
  int64_t lo = hl_dtype_is_signed_int(q.storage) ? -((int64_t)1 << (bits - 1)) : 0;
  int64_t hi = hl_dtype_is_signed_int(q.storage) ? ((int64_t)1 << (bits - 1)) - 1
                                                 : (int64_t)((UINT64_C(1) << bits) - 1);
  if (!st && (q.storage_min < lo || q.storage_max > hi || q.storage_min > q.storage_max))
    st = verr(v, "quantized storage range outside its storage type");
  for (int k = 0; !st && k < q.count; k++)
    if (q.zero_points[k] < q.storage_min || q.zero_points[k] > q.storage_max)
      st = verr(v, "zero point outside [storage_min, storage_max]");
  hl_mlir_file_t *f = v->file;
  hl_mlir_quant_type_t *grown = st ? NULL : hl_realloc(f->quant_types,
                                                       ((size_t)f->quant_type_count + 1) * sizeof(q));
  if (!st && !grown) st = HL_OOM();
  if (st) {
    hl_free(q.scales);
    hl_free(q.zero_points);
    return st;
  }
  f->quant_types = grown;
  f->quant_types[f->quant_type_count++] = q;
  *v->last_quant = f->quant_type_count;
  *out = q.storage;
  return NULL;
}

// The element type a type index names (for IntegerV1 / FloatV1 attributes and tensors).
static hl_status_t decode_element(const vctx_t *v, uint64_t idx, hl_dtype_t *out, int depth) {
  if (idx >= v->bc->type_count || depth > 4) return verr(v, "bad element type %llu", (unsigned long long)idx);
  const hl_bc_entry_t *e = &v->bc->types[idx];
  if (e->dialect != v->vhlo && e->dialect != v->builtin)
    return verr(v, "type %llu is neither a VHLO nor a builtin type", (unsigned long long)idx);
  hl_bc_reader_t r;
  uint64_t code;
  HL_RETURN_IF_ERROR(entry_reader(v, e, "type", idx, &r, &code));
  if (e->dialect == v->builtin) return builtin_element(v, code, &r, out, depth);
  if (code == 24 || code == 30) return quant_element(v, code, &r, out, depth);
  hl_dtype_t inner = HL_INVALID;
  if (code == 1) {  // complex<elem>
    uint64_t el;
    if (!hl_bc_read_varint(&r, &el)) return verr(v, "truncated complex type");
    HL_RETURN_IF_ERROR(decode_element(v, el, &inner, depth + 1));
  }
  *out = element_dtype(code, inner);
  if (*out == HL_INVALID)
    return verr(v, "VHLO type code %llu is not an element type this reader supports",
                (unsigned long long)code);
  return NULL;
}

// quant (optional): each type's quantization id, allocated like *out.
static hl_status_t decode_type_list(const vctx_t *v, hl_bc_reader_t *r, hl_shape_t **out,
                                    int *count, int **quant, int depth) {
  *out = NULL;
  *count = 0;
  if (quant) *quant = NULL;
  uint64_t n;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad type list");
  *out = hl_calloc(n + 1, sizeof(hl_shape_t));
  if (!*out || (quant && !(*quant = hl_calloc(n + 1, sizeof(int))))) return HL_OOM();
  *count = 0;
  for (uint64_t k = 0; k < n; k++) {
    uint64_t t;
    if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated type list");
    HL_RETURN_IF_ERROR(hl_vhlo_decode_type(v, t, &(*out)[k], depth + 1));
    if (quant) (*quant)[k] = *v->last_quant;
    *count = (int)k + 1;
  }
  return NULL;
}

static void free_types(hl_shape_t *t, int n) {
  for (int i = 0; i < n; i++) hl_shape_deinit(&t[i]);
  hl_free(t);
}

// A tensor type's encoding: VHLO's TypeExtensionsV1Attr { bounds: svarint[] }
// (`#stablehlo.type_extensions<bounds = [16, ?]>`, a bounded dynamic shape).
// Its dimensions stay dynamic, holding their bounds, and are refined from the
// arguments, as the text parser reads them; other encodings are refused.
static hl_status_t read_bounds(const vctx_t *v, uint64_t idx, int64_t *bounds, uint64_t *count) {
  if (idx >= v->bc->attr_count) return verr(v, "bad tensor type encoding");
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  hl_bc_reader_t r;
  uint64_t code;
  if (e->dialect != v->vhlo) return verr(v, "tensor types with a non-VHLO encoding are not supported");
  HL_RETURN_IF_ERROR(entry_reader(v, e, "attribute", idx, &r, &code));
  if (code != 18)
    return verr(v, "tensor types with an encoding other than type_extensions (VHLO attribute code "
                "%llu) are not supported", (unsigned long long)code);
  if (!hl_bc_read_varint(&r, count) || *count > HL_MAX_RANK) return verr(v, "bad bounds");
  for (uint64_t k = 0; k < *count; k++)
    if (!hl_bc_read_svarint(&r, &bounds[k]) || (bounds[k] < 0 && bounds[k] != INT64_MIN))
      return verr(v, "bad bound");
  if (r.p != r.end) return verr(v, "trailing bytes after the bounds");
  return NULL;
}

// A value type: tensor, token or tuple.
hl_status_t hl_vhlo_decode_type(const vctx_t *v, uint64_t idx, hl_shape_t *out, int depth) {
  memset(out, 0, sizeof(*out));
  *v->last_quant = 0;
  if (idx >= v->bc->type_count) return verr(v, "type index %llu out of range", (unsigned long long)idx);
  if (depth > kMaxAttrDepth) return verr(v, "types nest too deeply");
  const hl_bc_entry_t *e = &v->bc->types[idx];
  if (e->dialect != v->vhlo && e->dialect != v->builtin)
    return verr(v, "type %llu of dialect '%s' is not a VHLO type", (unsigned long long)idx,
                v->bc->dialects[e->dialect]);
  hl_bc_reader_t r;
  uint64_t code;
  HL_RETURN_IF_ERROR(entry_reader(v, e, "type", idx, &r, &code));
  if (e->dialect == v->builtin) {  // builtin RankedTensorType (13) / TupleType (15)
    if (code == 13) code = 20;
    else if (code == 15) code = 23;
    else return verr(v, "builtin type code %llu is not a value type this reader supports",
                     (unsigned long long)code);
  }
  switch (code) {
    case 20:    // RankedTensorV1Type { shape: svarint[], element: Type }
    case 21: {  // ... with a leading encoding attribute
      uint64_t enc, n, el;
      uint32_t dynamic = 0;
      int64_t bounds[HL_MAX_RANK];
      uint64_t bound_count = 0;
      if (code == 21) {
        if (!hl_bc_read_varint(&r, &enc)) return verr(v, "truncated tensor type");
        HL_RETURN_IF_ERROR(read_bounds(v, enc, bounds, &bound_count));
      }
      if (!hl_bc_read_varint(&r, &n)) return verr(v, "truncated tensor type");
      // (hl_shape_t holds HL_MAX_RANK dimensions.)
      if (n > HL_MAX_RANK)
        return verr(v, "tensor rank %llu is over %d, the most supported", (unsigned long long)n,
                    HL_MAX_RANK);
      int64_t dims[HL_MAX_RANK];
      for (uint64_t k = 0; k < n; k++) {
        if (!hl_bc_read_svarint(&r, &dims[k])) return verr(v, "truncated tensor type");
        // MLIR writes a dynamic dimension ('?') as ShapedType::kDynamic.
        if (dims[k] == INT64_MIN) {
          dims[k] = -1;
          dynamic |= 1u << k;
        } else if (dims[k] < 0) {
          return verr(v, "bad tensor dimension %lld", (long long)dims[k]);
        }
      }
      if (code == 21 && bound_count != n)
        return verr(v, "%llu bounds for a tensor of rank %llu", (unsigned long long)bound_count,
                    (unsigned long long)n);
      for (uint64_t k = 0; code == 21 && k < n; k++) {
        if (bounds[k] == INT64_MIN) continue;
        if (!(dynamic >> k & 1u))
          return verr(v, "a bound on the static dimension %llu", (unsigned long long)k);
        dims[k] = bounds[k];  // a bounded '?' holds its bound, as the text parser keeps it
      }
      if (!hl_bc_read_varint(&r, &el)) return verr(v, "truncated tensor type");
      hl_dtype_t dt;
      *v->last_quant = 0;
      HL_RETURN_IF_ERROR(decode_element(v, el, &dt, depth + 1));
      *out = hl_shape_array(dt, (int)n, dims);
      out->dynamic_mask = dynamic;
      if (dynamic) v->file->has_dynamic_shapes = true;  // refined from the arguments
      if (!hl_shape_size_fits(out)) return verr(v, "tensor type too large");
      return NULL;
    }
    case 22:  // TokenV1Type
      *out = hl_shape_token();
      return NULL;
    case 23: {  // TupleV1Type { elements: Type[] }
      hl_shape_t *el;
      int n, *q;
      hl_status_t st = decode_type_list(v, &r, &el, &n, &q, depth);
      for (int k = 0; !st && k < n; k++)
        if (q[k]) st = verr(v, "tuples of quantized tensors are not supported");
      if (!st) st = hl_shape_tuple(el, n, out);
      free_types(el, n);
      hl_free(q);
      *v->last_quant = 0;
      return st;
    }
    case 25: return verr(v, "unranked tensor types are not supported");
    default:
      return verr(v, "VHLO type code %llu is not a value type this reader supports",
                  (unsigned long long)code);
  }
}

// ---- attributes ----

hl_status_t hl_vhlo_set_string(hl_mlir_attr_t *a, hl_mlir_attr_kind_t kind, const char *s) {
  a->kind = kind;
  a->s = hl_strdup(s);
  if (!a->s) return HL_OOM();
  a->s_len = strlen(s);
  return NULL;
}

// A string attribute of the string section: its bytes may hold NULs (opaque
// backend_configs), so the section's length counts, not strlen.
static hl_status_t set_bc_string(const vctx_t *v, hl_mlir_attr_t *a, uint64_t idx) {
  size_t n = v->bc->string_lengths[idx];
  a->kind = HL_MATTR_STRING;
  a->s = hl_malloc(n + 1);
  if (!a->s) return HL_OOM();
  memcpy(a->s, v->bc->strings[idx], n);
  a->s[n] = '\0';
  a->s_len = n;
  return NULL;
}

hl_status_t hl_vhlo_push_item(hl_mlir_attr_t *a, const char *key, hl_mlir_attr_t **slot) {
  hl_mlir_attr_t *items = hl_realloc(a->items, ((size_t)a->n + 1) * sizeof(*items));
  if (!items) return HL_OOM();
  a->items = items;
  char **keys = hl_realloc(a->keys, ((size_t)a->n + 1) * sizeof(char *));
  if (!keys) return HL_OOM();
  a->keys = keys;
  keys[a->n] = NULL;
  if (key && !(keys[a->n] = hl_strdup(key))) return HL_OOM();
  *slot = &items[a->n];
  memset(*slot, 0, sizeof(**slot));
  a->n++;
  return NULL;
}

// #stablehlo<kind WORD>, as the text parser leaves `#stablehlo<comparison_direction EQ>`.
static hl_status_t enum_attr(const vctx_t *v, hl_bc_reader_t *r, const char *kind,
                             const char *const *names, int count, int first, hl_mlir_attr_t *a) {
  uint64_t code;
  if (!hl_bc_read_varint(r, &code) || code < (uint64_t)first || code >= (uint64_t)(first + count))
    return verr(v, "bad %s value", kind);
  HL_RETURN_IF_ERROR(hl_vhlo_set_string(a, HL_MATTR_DIALECT, "stablehlo"));
  hl_mlir_attr_t *s;
  HL_RETURN_IF_ERROR(hl_vhlo_push_item(a, NULL, &s));
  HL_RETURN_IF_ERROR(hl_vhlo_set_string(s, HL_MATTR_WORD, kind));
  HL_RETURN_IF_ERROR(hl_vhlo_push_item(a, NULL, &s));
  return hl_vhlo_set_string(s, HL_MATTR_WORD, names[code - (uint64_t)first]);
}

static hl_status_t attr_list(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a, int depth,
                             bool pairs) {
  uint64_t n;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad attribute list");
  a->kind = pairs ? HL_MATTR_DICT : HL_MATTR_ARRAY;
  for (uint64_t k = 0; k < n; k++) {
    uint64_t key = 0, val;
    if (pairs && !hl_bc_read_varint(r, &key)) return verr(v, "truncated dictionary");
    if (!hl_bc_read_varint(r, &val)) return verr(v, "truncated attribute list");
    char *name = NULL;
    if (pairs) {
      hl_mlir_attr_t k_attr = {0};
      hl_status_t st = hl_vhlo_decode_attr(v, key, &k_attr, depth + 1);
      if (!st && k_attr.kind != HL_MATTR_STRING) st = verr(v, "dictionary key is not a string");
      if (!st) {
        name = k_attr.s;
        k_attr.s = NULL;
      }
      hl_mlir_attr_deinit(&k_attr);
      HL_RETURN_IF_ERROR(st);
    }
    hl_mlir_attr_t *slot;
    hl_status_t st = hl_vhlo_push_item(a, name, &slot);
    hl_free(name);
    HL_RETURN_IF_ERROR(st);
    HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, val, slot, depth + 1));
  }
  if (!pairs) {  // arrays keep no keys
    hl_free(a->keys);
    a->keys = NULL;
  }
  return NULL;
}

// APInt of a known width: one byte up to 8 bits, else a signed varint.
static hl_status_t read_apint(const vctx_t *v, hl_bc_reader_t *r, int bits, uint64_t *out) {
  if (bits <= 8) {
    uint8_t b;
    if (!hl_bc_read_byte(r, &b)) return verr(v, "truncated integer");
    *out = b;
  } else if (bits <= 64) {
    int64_t s;
    if (!hl_bc_read_svarint(r, &s)) return verr(v, "truncated integer");
    *out = (uint64_t)s;
  } else {
    return verr(v, "integers wider than 64 bits are not supported");
  }
  if (bits < 64) *out &= (UINT64_C(1) << bits) - 1;
  return NULL;
}

static hl_status_t scalar_type(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a) {
  uint64_t t;
  if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated attribute type");
  hl_dtype_t dt;
  HL_RETURN_IF_ERROR(decode_element(v, t, &dt, 0));
  a->has_type = true;
  a->type = hl_shape_scalar(dt);
  return NULL;
}

static hl_status_t float_value(const vctx_t *v, hl_dtype_t dt, uint64_t bits, double *out) {
  union { uint32_t u; float f; } f32;
  union { uint64_t u; double d; } f64;
  switch (dt) {
    case HL_F64: f64.u = bits; *out = f64.d; return NULL;
    case HL_F32: f32.u = (uint32_t)bits; *out = f32.f; return NULL;
    case HL_F16: *out = hl_f16_to_f32((uint16_t)bits); return NULL;
    case HL_BF16: *out = hl_bf16_to_f32((uint16_t)bits); return NULL;
    default: return verr(v, "float attributes of type %s are not supported", hl_dtype_name(dt));
  }
}

// TensorV1Attr { type, blob }: i1 data may be bit-packed (VhloBytecode.cpp).
static hl_status_t tensor_attr(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a) {
  uint64_t t, size;
  const uint8_t *data;
  if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated tensor attribute");
  HL_RETURN_IF_ERROR(hl_vhlo_decode_type(v, t, &a->type, 1));
  a->type_quant = *v->last_quant;
  a->has_type = true;
  a->kind = HL_MATTR_DENSE;
  if (!hl_shape_is_array(&a->type)) return verr(v, "tensor attribute of a non-tensor type");
  if (!hl_bc_read_varint(r, &size) || !hl_bc_read_bytes(r, (size_t)size, &data))
    return verr(v, "tensor attribute data runs past its entry");
  int64_t count = hl_shape_element_count(&a->type);
  size_t packed = (size_t)((count + 7) / 8);
  a->blob = data;
  a->blob_len = (size_t)size;
  if (a->type.dtype == HL_PRED) {
    if (size == 1 && data[0] == 0xFF) {  // packed splat true
      static const uint8_t kOne = 1;
      a->blob = &kOne;
    } else if (size == packed && (int64_t)size != count) {
      uint8_t *u = hl_malloc((size_t)count + 1);
      if (!u) return HL_OOM();
      for (int64_t i = 0; i < count; i++) u[i] = (data[i / 8] >> (i % 8)) & 1;
      a->blob = u;
      a->blob_len = (size_t)count;
      a->blob_owned = true;
    }
  }
  return NULL;
}

static const char *const kCmpDir[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const kCmpType[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
static const char *const kFft[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
static const char *const kPrecision[] = {"DEFAULT", "HIGH", "HIGHEST"};
static const char *const kRngAlg[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
static const char *const kRngDist[] = {"UNIFORM", "NORMAL"};
static const char *const kTranspose[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
static const char *const kAccuracy[] = {"DEFAULT", "HIGHEST", "TOLERANCE"};

static hl_status_t decode_vhlo_attr(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                    hl_mlir_attr_t *a, int depth) {
  uint64_t u;
  switch (code) {
    case 1: return attr_list(v, r, a, depth, false);  // ArrayV1Attr
    case 2:                                          // BooleanV1Attr
      if (!hl_bc_read_varint(r, &u) || u > 1) return verr(v, "bad boolean");
      a->kind = HL_MATTR_BOOL;
      a->b = u == 1;
      return NULL;
    case 3: return enum_attr(v, r, "comparison_direction", kCmpDir, 6, 0, a);
    case 4: return enum_attr(v, r, "comparison_type", kCmpType, 5, 0, a);
    case 5:  // CustomCallApiVersionV1Attr: StableHLO spells it `api_version = N : i32`
      if (!hl_bc_read_varint(r, &u) || u > 4) return verr(v, "bad custom_call api_version");
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)u;
      a->u = u;
      a->has_type = true;
      a->type = hl_shape_scalar(HL_S32);
      return NULL;
    case 6: return attr_list(v, r, a, depth, true);  // DictionaryV1Attr
    case 7: return enum_attr(v, r, "fft_type", kFft, 4, 0, a);
    case 8: {  // FloatV1Attr { type, APFloat }
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      uint64_t bits;
      HL_RETURN_IF_ERROR(read_apint(v, r, hl_dtype_bit_width(a->type.dtype), &bits));
      a->kind = HL_MATTR_FLOAT;
      a->u = bits;
      return float_value(v, a->type.dtype, bits, &a->f);
    }
    case 9: {  // IntegerV1Attr { type, APInt }
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      hl_dtype_t dt = a->type.dtype;
      int bits = dt == HL_PRED ? 1 : hl_dtype_bit_width(dt);
      HL_RETURN_IF_ERROR(read_apint(v, r, bits, &a->u));
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)a->u;
      if (bits < 64 && !hl_dtype_is_unsigned_int(dt) && (a->u >> (bits - 1)) & 1)
        a->i = (int64_t)(a->u | ~((UINT64_C(1) << bits) - 1));  // sign-extend
      return NULL;
    }
    case 10: {  // OutputOperandAliasV1Attr
      HL_RETURN_IF_ERROR(hl_vhlo_set_string(a, HL_MATTR_DIALECT, "stablehlo.output_operand_alias"));
      static const char *const kKeys[] = {"output_tuple_indices", "operand_index",
                                          "operand_tuple_indices"};
      for (int part = 0; part < 3; part++) {
        hl_mlir_attr_t *slot;
        HL_RETURN_IF_ERROR(hl_vhlo_push_item(a, kKeys[part], &slot));
        uint64_t n = 1;
        if (part != 1) {
          slot->kind = HL_MATTR_ARRAY;
          if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad alias");
        }
        for (uint64_t k = 0; k < n; k++) {
          int64_t x;
          if (!hl_bc_read_svarint(r, &x)) return verr(v, "truncated alias");
          hl_mlir_attr_t *item = slot;
          if (part != 1) {
            hl_mlir_attr_t *grown = hl_realloc(slot->items, (size_t)(slot->n + 1) * sizeof(*grown));
            if (!grown) return HL_OOM();
            slot->items = grown;
            item = &grown[slot->n++];
            memset(item, 0, sizeof(*item));
          }
          item->kind = HL_MATTR_INT;
          item->i = x;
          item->u = (uint64_t)x;
        }
      }
      return NULL;
    }
    case 11: return enum_attr(v, r, "precision", kPrecision, 3, 0, a);
    case 12: return enum_attr(v, r, "rng_algorithm", kRngAlg, 3, 0, a);
    case 13: return enum_attr(v, r, "rng_distribution", kRngDist, 2, 1, a);
    case 14:  // StringV1Attr
      if (!hl_bc_read_varint(r, &u) || !bc_string(v, u)) return verr(v, "bad string attribute");
      HL_RETURN_IF_ERROR(set_bc_string(v, a, u));
      a->s_len = v->bc->string_lengths[u];
      return NULL;
    case 15: return tensor_attr(v, r, a);
    case 16: return enum_attr(v, r, "transpose", kTranspose, 4, 0, a);
    case 17: {  // TypeV1Attr
      if (!hl_bc_read_varint(r, &u) || u >= v->bc->type_count) return verr(v, "bad type attribute");
      hl_bc_reader_t tr;
      uint64_t tcode;
      HL_RETURN_IF_ERROR(entry_reader(v, &v->bc->types[u], "type", u, &tr, &tcode));
      if (tcode == 33) {  // NoneV1Type: an absent optional type (dot algorithm fields)
        a->kind = HL_MATTR_UNIT;
        return NULL;
      }
      if (tcode == 8) {  // FunctionV1Type { inputs, outputs }
        a->kind = HL_MATTR_FUNCTION_TYPE;
        a->items = hl_calloc(2, sizeof(hl_mlir_attr_t));
        if (!a->items) return HL_OOM();
        a->n = 2;
        for (int k = 0; k < 2; k++) {
          hl_shape_t *types;
          int n, *q;
          hl_status_t st = decode_type_list(v, &tr, &types, &n, &q, depth);
          hl_mlir_attr_t *list = &a->items[k];
          list->kind = HL_MATTR_ARRAY;
          list->items = hl_calloc((size_t)n + 1, sizeof(hl_mlir_attr_t));
          if (!list->items && !st) st = HL_OOM();
          for (int i = 0; i < n; i++) {
            if (list->items) {
              list->items[i].kind = HL_MATTR_TYPE;
              list->items[i].has_type = true;
              list->items[i].type = types[i];
              list->items[i].type_quant = q[i];
              list->n = i + 1;
            } else {
              hl_shape_deinit(&types[i]);
            }
          }
          hl_free(types);
          hl_free(q);
          HL_RETURN_IF_ERROR(st);
        }
        return NULL;
      }
      // An element type as a value (dot algorithms' precision and accumulation
      // types): the text's `f32` is a TYPE of that scalar; TF32 has no dtype
      // here and stays the word `tf32`, as the text parser keeps it.
      bool builtin = v->bc->types[u].dialect == v->builtin;
      bool value = builtin ? tcode == 13 || tcode == 15
                           : (tcode >= 20 && tcode <= 23) || tcode == 25 || tcode >= 41;
      if (!builtin && tcode == 34) return hl_vhlo_set_string(a, HL_MATTR_WORD, "tf32");
      a->kind = HL_MATTR_TYPE;
      a->has_type = true;
      if (value) return hl_vhlo_decode_type(v, u, &a->type, depth + 1);
      hl_dtype_t el;
      *v->last_quant = 0;
      HL_RETURN_IF_ERROR(decode_element(v, u, &el, depth + 1));
      a->type = hl_shape_scalar(el);
      a->type_quant = *v->last_quant;
      return NULL;
    }
    case 18: return verr(v, "type_extensions outside a tensor type");
    case 19:  // ResultAccuracyModeV1Attr: #stablehlo.result_accuracy_mode<X>
      if (!hl_bc_read_varint(r, &u) || u > 2) return verr(v, "bad result accuracy mode");
      HL_RETURN_IF_ERROR(hl_vhlo_set_string(a, HL_MATTR_DIALECT, "stablehlo.result_accuracy_mode"));
      hl_mlir_attr_t *w;
      HL_RETURN_IF_ERROR(hl_vhlo_push_item(a, NULL, &w));
      return hl_vhlo_set_string(w, HL_MATTR_WORD, kAccuracy[u]);
    case 20: {  // ResultAccuracyV1Attr { atol: f64, rtol: f64, ulps: svarint, mode }
      HL_RETURN_IF_ERROR(hl_vhlo_set_string(a, HL_MATTR_DIALECT, "stablehlo.result_accuracy"));
      static const char *const kKeys[] = {"atol", "rtol", "ulps", "mode"};
      for (int k = 0; k < 4; k++) {
        hl_mlir_attr_t *slot;
        HL_RETURN_IF_ERROR(hl_vhlo_push_item(a, kKeys[k], &slot));
        if (k < 2) {
          HL_RETURN_IF_ERROR(read_apint(v, r, 64, &slot->u));
          slot->kind = HL_MATTR_FLOAT;
          HL_RETURN_IF_ERROR(float_value(v, HL_F64, slot->u, &slot->f));
        } else if (k == 2) {
          if (!hl_bc_read_svarint(r, &slot->i)) return verr(v, "truncated result accuracy");
          slot->kind = HL_MATTR_INT;
        } else {
          if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated result accuracy");
          HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, u, slot, depth + 1));
        }
      }
      return NULL;
    }
    default:
      return verr(v, "VHLO attribute code %llu (mesh / sharding attributes and newer) is not "
                  "supported", (unsigned long long)code);
  }
}

static hl_status_t decode_builtin_attr(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                       hl_mlir_attr_t *a, int depth) {
  uint64_t u;
  switch (code) {
    case 0: return attr_list(v, r, a, depth, false);  // ArrayAttr
    case 1: return attr_list(v, r, a, depth, true);   // DictionaryAttr
    case 2:                                           // StringAttr
      if (!hl_bc_read_varint(r, &u) || !bc_string(v, u)) return verr(v, "bad string attribute");
      HL_RETURN_IF_ERROR(set_bc_string(v, a, u));
      a->s_len = v->bc->string_lengths[u];
      return NULL;
    case 3: return verr(v, "typed builtin string attributes are not supported");
    case 4:  // FlatSymbolRefAttr { StringAttr }
      if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated symbol reference");
      HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, u, a, depth + 1));
      if (a->kind != HL_MATTR_STRING) return verr(v, "symbol reference without a name");
      a->kind = HL_MATTR_SYMBOL;
      return NULL;
    case 6:  // TypeAttr
      if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated type attribute");
      a->kind = HL_MATTR_TYPE;
      a->has_type = true;
      return hl_vhlo_decode_type(v, u, &a->type, depth + 1);
    case 7: a->kind = HL_MATTR_UNIT; return NULL;  // UnitAttr
    case 8: case 9: {  // IntegerAttr / FloatAttr { type, value }: as VHLO's
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      hl_dtype_t dt = a->type.dtype;
      int bits = dt == HL_PRED ? 1 : hl_dtype_bit_width(dt);
      HL_RETURN_IF_ERROR(read_apint(v, r, bits, &a->u));
      if (code == 9) {
        a->kind = HL_MATTR_FLOAT;
        return float_value(v, dt, a->u, &a->f);
      }
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)a->u;
      if (bits < 64 && !hl_dtype_is_unsigned_int(dt) && (a->u >> (bits - 1)) & 1)
        a->i = (int64_t)(a->u | ~((UINT64_C(1) << bits) - 1));
      return NULL;
    }
    case 18:  // DenseIntOrFPElementsAttr { type, blob }: as VHLO's tensor
      return tensor_attr(v, r, a);
    default:
      return verr(v, "builtin attribute code %llu is not supported here", (unsigned long long)code);
  }
}

// A Shardy attribute in its text form ("#sdy.sharding_rule<...>", NUL-
// terminated): kept raw, as the text parser keeps sdy.* syntax.
static hl_status_t shardy_text(const vctx_t *v, const hl_bc_entry_t *e, hl_mlir_attr_t *a) {
  const char *t = (const char *)e->bytes.data;
  size_t n = e->bytes.size;
  const char *lt = n ? memchr(t, '<', n) : NULL;
  if (!n || t[n - 1] != 0 || t[0] != '#' || !lt || n < 3 || t[n - 2] != '>')
    return verr(v, "malformed Shardy attribute text");
  a->kind = HL_MATTR_RAW;
  a->s = hl_strndup(t + 1, (size_t)(lt - t - 1));
  if (!a->s) return HL_OOM();
  a->raw = lt + 1;
  a->raw_len = (size_t)(t + n - 2 - (lt + 1));
  return NULL;
}

hl_status_t hl_vhlo_decode_attr(const vctx_t *v, uint64_t idx, hl_mlir_attr_t *out, int depth) {
  memset(out, 0, sizeof(*out));
  if (idx >= v->bc->attr_count) return verr(v, "attribute index %llu out of range", (unsigned long long)idx);
  if (depth > kMaxAttrDepth) return verr(v, "attributes nest too deeply");
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  if (strcmp(v->bc->dialects[e->dialect], "sdy") == 0)
    return e->custom ? hl_sdy_attr_text(v->bc, idx, out) : shardy_text(v, e, out);
  hl_bc_reader_t r;
  uint64_t code;
  hl_status_t st = entry_reader(v, e, "attribute", idx, &r, &code);
  if (!st && e->dialect == v->vhlo) st = decode_vhlo_attr(v, code, &r, out, depth);
  else if (!st && e->dialect == v->builtin) st = decode_builtin_attr(v, code, &r, out, depth);
  else if (!st) st = verr(v, "attribute %llu of dialect '%s' is not supported",
                          (unsigned long long)idx, v->bc->dialects[e->dialect]);
  if (!st && r.p != r.end) st = verr(v, "trailing bytes after attribute %llu", (unsigned long long)idx);
  if (st) hl_mlir_attr_deinit(out);
  return st;
}
